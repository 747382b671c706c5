// GPTQ (Frantar et al., 2022): quantizes a matrix column by column and spreads each column's
// rounding error over the columns not yet quantized, weighted by the inverse Hessian of the
// layer's inputs (H = sum of x x^T over the calibration tokens), so that the layer's output on
// those inputs moves as little as possible. With act-order, columns with the largest H diagonal
// (the inputs that matter most) go first; with lazy block updates the error of a block of
// columns reaches the rest of the matrix in one matrix product. The inverse's factor comes from
// one Cholesky factorisation and one triangular inverse of the damped H, on OpenBLAS
// (quant/dense.h); the block updates are one sgemm each, and within a block the rows are
// independent and split over the thread pool (scale search included).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/thread_pool.h"
#include "quant/quant_format.h"

namespace frugal {

struct GptqOptions {
  double damp = 0.01;     // added to H's diagonal, as a share of its mean
  bool act_order = true;  // quantize columns in order of decreasing H diagonal
  int64_t block = 128;    // columns per lazy update
  // Group scales: kSearch weighs each column's squared rounding error by its H diagonal (the
  // energy of its input), so the scale favours the inputs that matter.
  ScaleFit fit = ScaleFit::kMinMax;
};

struct GptqResult {
  QuantizedMatrix matrix;
  double damp_used = 0;  // the share of the mean diagonal actually added (raised when H is not
                         // positive definite at the asked damping)
};

// What GPTQ needs of a Hessian h (cols x cols, symmetric: sum of x x^T over calibration
// inputs): the column order, and the upper Cholesky factor of the permuted, damped h's inverse.
// It depends on h and the options only, so the matrices that share an input (q/k/v, gate/up)
// share one: for a 70B model's 8192-wide inputs that saves four factorisations a layer.
struct GptqFactor {
  int64_t cols = 0;
  std::vector<int64_t> perm;  // quantization order -> original column
  std::vector<int64_t> pos;   // original column -> position in that order
  std::vector<float> u;       // cols x cols, column-major (dense::UpperFactorOfInverse)
  std::vector<float> imp;     // h's diagonal (clamped at 0), original order: the scale search's
                              // weights
  double damp_used = 0;       // the share of the mean diagonal actually added (raised when h is
                              // not positive definite at the asked damping)
};
StatusOr<std::shared_ptr<const GptqFactor>> FactorHessian(const float* h, int64_t cols,
                                                          const GptqOptions& options,
                                                          ThreadPool* pool = nullptr);

// w: rows x cols, row-major. Group scales are chosen when a group's first column is reached (in
// act-order, from the weights as updated so far), and groups stay contiguous in the original
// column order, as the file format requires. Rows are split over `pool` when given; the dense
// algebra uses dense::SetThreads' threads. The result is the same for any pool size, and for a
// given BLAS thread count.
StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const GptqFactor& factor, const GptqOptions& options,
                                  ThreadPool* pool = nullptr);
// The same, factoring h first.
StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const float* h, const GptqOptions& options,
                                  ThreadPool* pool = nullptr);

// Output error of a quantized matrix on the inputs that made h: sum over rows of
// (w_q - w) H (w_q - w)^T, and the same for w itself (its output energy), so that
// error / energy is the relative squared output error.
struct OutputError {
  double error = 0;
  double energy = 0;
  double relative() const { return energy > 0 ? error / energy : 0; }
};
OutputError MeasureOutputError(const float* w, const float* wq, int64_t rows, int64_t cols,
                               const float* h);

}  // namespace frugal
