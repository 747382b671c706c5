// The quantizer's dense float linear algebra, on OpenBLAS (Debian's libopenblas0-pthread: kernels
// chosen for the CPU at run time, DYNAMIC_ARCH; its own thread pool). GPTQ's Hessians, their
// Cholesky factors and inverses, and its block updates are the quantizer's largest costs (a
// 28,672-wide Hessian for a 70B model's ffn_down is ~1e13 flops), so they run where the machine's
// cores and vector width are used. Only the calls used are wrapped here; everything else in the
// quantizer stays free of BLAS types.
//
// Thread safety: the functions are safe to call from one thread at a time; OpenBLAS splits each
// call over its own threads (SetThreads). Results are deterministic for a given thread count;
// across counts they agree to float rounding.
#pragma once

#include <cstdint>
#include <string>

namespace frugal::dense {

// Threads every later call uses (OpenBLAS has one process-wide setting); n <= 0 leaves it.
void SetThreads(int n);
int Threads();
// "OpenBLAS <config>, core <name>": what the run-time dispatch picked, for reports.
std::string Backend();

// h [n][n] (row-major) += x^T x for x [rows][n] (row-major). Only h's lower triangle (h[a][b],
// a >= b) is updated; CopyLowerToUpper makes h symmetric once the sum is complete.
void AddGramLower(const float* x, int64_t rows, int64_t n, float* h);
void CopyLowerToUpper(float* h, int64_t n);

// a [n][n]: a symmetric positive definite matrix M in, the upper triangular U with
// U^T U = M^-1 out (GPTQ's factor), stored column-major (U(i, j) = a[i + j * n]; below the
// diagonal zeros). Computed as J L^-1 J from the lower Cholesky factor L of J M J (J reverses the
// order): one factorisation and one triangular inverse, 2/3 n^3 flops. false (a clobbered) when M
// is not positive definite.
bool UpperFactorOfInverse(float* a, int64_t n);

// c [m][n] = alpha * a [m][k] * b^T + beta * c, row-major, b given as [n][k] (ldb its row stride),
// lda / ldc the row strides of a and c.
void GemmNT(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// c [m][n] = alpha * a [m][k] * b [k][n] + beta * c, row-major, with row strides.
void GemmNN(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// ||x m^T||^2 (summed in double): the output energy of matrix m [rows][cols] on the inputs
// x [n][cols], both row-major: GPTQ's and AWQ's output-error measures.
double OutputEnergy(const float* m, int64_t rows, int64_t cols, const float* x, int64_t n);

}  // namespace frugal::dense
