#include "quant/dense.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

// LAPACK from the same library (OpenBLAS builds its own spotrf_/strtri_, parallel); declared
// here so the build needs no LAPACKE. Column-major, 32-bit integers (Debian's OpenBLAS is not
// built with INTERFACE64).
extern "C" {
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);
void strtri_(const char* uplo, const char* diag, const int* n, float* a, const int* lda, int* info);
}

namespace frugal::dense {

void SetThreads(int n) {
  if (n > 0) openblas_set_num_threads(n);
}

int Threads() { return openblas_get_num_threads(); }

std::string Backend() {
  std::string s = "OpenBLAS";
  if (const char* c = openblas_get_config()) s += std::string(" ") + c;
  if (const char* core = openblas_get_corename()) s += std::string(", core ") + core;
  return s;
}

void AddGramLower(const float* x, int64_t rows, int64_t n, float* h) {
  if (rows <= 0 || n <= 0) return;
  // x is, column-major, the n x rows matrix X whose columns are the inputs; h += X X^T. The
  // column-major upper triangle is the row-major lower one.
  cblas_ssyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<int>(n), static_cast<int>(rows),
              1.0f, x, static_cast<int>(n), 1.0f, h, static_cast<int>(n));
}

void CopyLowerToUpper(float* h, int64_t n) {
  // In tiles, so that both the rows read and the columns written stay in cache.
  constexpr int64_t kTile = 64;
  for (int64_t a0 = 0; a0 < n; a0 += kTile) {
    for (int64_t b0 = 0; b0 <= a0; b0 += kTile) {
      const int64_t a1 = std::min(n, a0 + kTile), b1 = std::min(n, b0 + kTile);
      for (int64_t a = a0; a < a1; ++a) {
        for (int64_t b = b0; b < std::min(b1, a); ++b) h[b * n + a] = h[a * n + b];
      }
    }
  }
}

bool UpperFactorOfInverse(float* a, int64_t n) {
  if (n <= 0) return true;
  const int ni = static_cast<int>(n);
  int info = 0;
  // Reversing the whole buffer maps element (i, j) to (n-1-i, n-1-j): J M J.
  std::reverse(a, a + n * n);
  spotrf_("L", &ni, a, &ni, &info);
  if (info != 0) return false;
  strtri_("L", "N", &ni, a, &ni, &info);
  if (info != 0) return false;
  // spotrf_ leaves the strict upper triangle as it was: clear it, so that reversed back it is
  // U's (zero) lower triangle.
  for (int64_t j = 1; j < n; ++j) std::memset(a + j * n, 0, static_cast<size_t>(j) * sizeof(float));
  std::reverse(a, a + n * n);  // U = J L^-1 J, column-major
  return true;
}

void GemmNT(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

void GemmNN(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

double OutputEnergy(const float* m, int64_t rows, int64_t cols, const float* x, int64_t n) {
  if (rows <= 0 || n <= 0) return 0;
  std::vector<float> y(static_cast<size_t>(n * rows));
  GemmNT(n, rows, cols, 1.0f, x, cols, m, cols, 0.0f, y.data(), rows);
  double s = 0;
  for (float v : y) s += static_cast<double>(v) * v;
  return s;
}

}  // namespace frugal::dense
