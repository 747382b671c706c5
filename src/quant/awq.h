// AWQ (Lin et al., 2023): activation-aware scaling. Weights that meet large activations matter
// most, so before quantizing, input channel c of the matrices that share one input is scaled
// up by s_c (their weights are multiplied by s_c, the input divided by it, which the op before
// them absorbs: an RMSNorm's weight, or the rows of the matrix that produced the input).
// s = mean|x|^alpha, normalised; alpha is chosen on a grid by the output error of the
// quantized, scaled matrices on sampled calibration inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/thread_pool.h"
#include "quant/quant_format.h"

namespace frugal {

struct AwqOptions {
  int grid = 20;                     // alpha in {0, 1/grid, ..., (grid-1)/grid}
  ScaleFit fit = ScaleFit::kMinMax;  // how the scaled matrices' group scales are chosen
};

// One matrix that reads the shared input: rows x cols, row-major, and its format.
struct AwqMatrix {
  const float* w;
  int64_t rows;
  QuantFormat format;
};

struct AwqResult {
  std::vector<float> scale;  // s per input channel (all ones when alpha = 0 wins)
  double alpha = 0;
  double error = 0;           // summed squared output error with the chosen scales
  double error_unscaled = 0;  // the same at alpha = 0 (plain RTN)
};

// x: n sampled inputs [n][cols]; mean_abs: mean |x| per input channel over all calibration
// tokens. Scales follow mean_abs alone, so channels that must share one scale (grouped-query
// attention: the output projection's inputs of the heads that read one value head) get it by
// having equal mean_abs.
AwqResult SearchAwqScale(std::span<const AwqMatrix> mats, int64_t cols, const float* x, int64_t n,
                         const std::vector<double>& mean_abs, const AwqOptions& options,
                         ThreadPool& pool);

// Squared output error sum_rows ||(deq(Q(w * s)) / s - w) x^T||^2 of one matrix on inputs x
// (s null = no scaling), Q being RTN with scales chosen by `fit`.
double ScaledQuantError(const AwqMatrix& m, int64_t cols, const float* s, const float* x, int64_t n,
                        ThreadPool& pool, ScaleFit fit = ScaleFit::kMinMax);

}  // namespace frugal
