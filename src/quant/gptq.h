// GPTQ (Frantar et al., 2022): quantizes a matrix column by column and spreads each column's
// rounding error over the columns not yet quantized, weighted by the inverse Hessian of the
// layer's inputs (H = sum of x x^T over the calibration tokens), so that the layer's output on
// those inputs moves as little as possible. With act-order, columns with the largest H diagonal
// (the inputs that matter most) go first; with lazy block updates the error of a block of
// columns reaches the rest of the matrix in one matrix product. The inverse comes from a
// Cholesky factorisation (Eigen) of the damped H.
#pragma once

#include <cstdint>

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

// w: rows x cols, row-major. h: cols x cols, symmetric (sum of x x^T over calibration inputs).
// Group scales are chosen when a group's first column is reached (in act-order, from the
// weights as updated so far), and groups stay contiguous in the original column order, as the
// file format requires.
StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const float* h, const GptqOptions& options);

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
