#include "quant/gptq.h"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <numeric>
#include <vector>

namespace frugal {
namespace {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

}  // namespace

StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const float* h, const GptqOptions& options) {
  if (rows <= 0 || cols <= 0 || cols % f.span() != 0)
    return InvalidArgument("GPTQ: bad matrix shape");
  const int64_t groups = f.groups(cols), span = f.span(), spans = cols / span;
  // Column order: by decreasing H diagonal with act-order.
  std::vector<int64_t> perm(static_cast<size_t>(cols));
  std::iota(perm.begin(), perm.end(), 0);
  if (options.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h[a * cols + a] > h[b * cols + b]; });
  }
  std::vector<int64_t> pos(static_cast<size_t>(cols));  // original column -> permuted position
  for (int64_t j = 0; j < cols; ++j) pos[static_cast<size_t>(perm[static_cast<size_t>(j)])] = j;

  // Weights in permuted column order, column-major so a column is contiguous.
  MatrixF W(rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) W(r, j) = w[r * cols + perm[static_cast<size_t>(j)]];
  }
  MatrixF H(cols, cols);
  double mean_diag = 0;
  for (int64_t a = 0; a < cols; ++a) {
    const int64_t pa = perm[static_cast<size_t>(a)];
    for (int64_t b = 0; b < cols; ++b) H(a, b) = h[pa * cols + perm[static_cast<size_t>(b)]];
    mean_diag += H(a, a);
  }
  mean_diag /= static_cast<double>(cols);
  if (!(mean_diag > 0)) mean_diag = 1;
  // An input that never fired carries no information: its weights cannot matter on the
  // calibration data; keep H invertible and let RTN decide them.
  for (int64_t a = 0; a < cols; ++a) {
    if (H(a, a) <= 0) H(a, a) = static_cast<float>(mean_diag);
  }

  // U: upper Cholesky factor of H^-1. Raise the damping until H is positive definite.
  GptqResult result;
  MatrixF U;
  double damp = options.damp;
  for (int attempt = 0;; ++attempt) {
    MatrixF Hd = H;
    Hd.diagonal().array() += static_cast<float>(damp * mean_diag);
    Eigen::LLT<MatrixF> llt(Hd);
    if (llt.info() == Eigen::Success) {
      MatrixF Linv = MatrixF::Identity(cols, cols);
      llt.matrixL().solveInPlace(Linv);
      const MatrixF Hinv = Linv.transpose() * Linv;
      Eigen::LLT<MatrixF> llt_inv(Hinv);
      if (llt_inv.info() == Eigen::Success) {
        U = llt_inv.matrixU();
        break;
      }
    }
    if (attempt == 8)
      return Internal("GPTQ: the Hessian stays singular even with damping " + std::to_string(damp));
    damp = damp > 0 ? damp * 10 : 1e-4;
  }
  result.damp_used = damp;

  QuantizedMatrix& out = result.matrix;
  out.format = f;
  out.rows = rows;
  out.cols = cols;
  out.q.resize(static_cast<size_t>(rows * cols));
  out.params.resize(static_cast<size_t>(rows * groups));
  if (f.super > 0) out.supers.resize(static_cast<size_t>(rows * spans));
  std::vector<char> fitted(static_cast<size_t>(spans), 0);
  std::vector<float> gw(static_cast<size_t>(span)), gimp(static_cast<size_t>(span));

  const int64_t block = std::max<int64_t>(1, options.block);
  MatrixF Err(rows, block);
  for (int64_t i1 = 0; i1 < cols; i1 += block) {
    const int64_t i2 = std::min(cols, i1 + block), bn = i2 - i1;
    for (int64_t j = i1; j < i2; ++j) {
      const int64_t col = perm[static_cast<size_t>(j)], g = col / f.group, s = col / span;
      if (!fitted[static_cast<size_t>(s)]) {
        // This group's (or K-quant super-block's) scales, from its weights as they are now
        // (earlier columns' errors already folded in).
        for (int64_t k = 0; k < span; ++k) {
          const int64_t c = s * span + k;
          gimp[static_cast<size_t>(k)] = std::max(0.0f, h[c * cols + c]);
        }
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = 0; k < span; ++k)
            gw[static_cast<size_t>(k)] = W(r, pos[static_cast<size_t>(s * span + k)]);
          FitSpan(f, gw.data(), options.fit, gimp.data(),
                  &out.params[static_cast<size_t>(r * groups + s * span / f.group)],
                  f.super > 0 ? &out.supers[static_cast<size_t>(r * spans + s)] : nullptr);
        }
        fitted[static_cast<size_t>(s)] = 1;
      }
      const float djj = U(j, j);
      for (int64_t r = 0; r < rows; ++r) {
        const float wv = W(r, j);
        const GroupParams& p = out.params[static_cast<size_t>(r * groups + g)];
        const int8_t q = QuantizeValue(f, p, wv);
        out.q[static_cast<size_t>(r * cols + col)] = q;
        Err(r, j - i1) = (wv - DequantizeValue(f, p, q)) / djj;
      }
      // Spread this column's error over the rest of the block.
      const int64_t rest = i2 - j - 1;
      if (rest > 0) {
        W.block(0, j + 1, rows, rest).noalias() -= Err.col(j - i1) * U.block(j, j + 1, 1, rest);
      }
    }
    // ... and the block's error over every later column, in one product.
    if (i2 < cols) {
      W.block(0, i2, rows, cols - i2).noalias() -=
          Err.leftCols(bn) * U.block(i1, i2, bn, cols - i2);
    }
  }
  return result;
}

OutputError MeasureOutputError(const float* w, const float* wq, int64_t rows, int64_t cols,
                               const float* h) {
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> W(w, rows,
                                                                                            cols);
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Wq(
      wq, rows, cols);
  Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> H(h, cols,
                                                                                            cols);
  const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> D = Wq - W;
  OutputError e;
  e.error = static_cast<double>((D * H).cwiseProduct(D).sum());
  e.energy = static_cast<double>((W * H).cwiseProduct(W).sum());
  return e;
}

}  // namespace frugal
