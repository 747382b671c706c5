// The arithmetic every quantization method shares: how a group of weights is mapped to the
// integers and scales of a Frugal format (docs/formats.md), exactly as they will be stored
// (scales and offsets rounded to fp16 first), so that what RTN, GPTQ and AWQ optimise is the
// error of the file that is written.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "formats/tensor_types.h"
#include "frugal/status.h"
#include "kernels/quantize.h"

namespace frugal {

class ThreadPool;

struct QuantFormat {
  TensorType type = TensorType::kI8_C;
  IntKind kind = IntKind::kInt8;  // IntKindOf(type), or the grid of a GGUF type (gguf_grid.h)
  int64_t group = 0;              // inputs per scale; the row length for per-channel INT8
  // K-quants (Q4_K, Q5_K, Q6_K): the inputs of a super-block (256), whose sub-block scales are
  // chosen together as they share a stored super-scale; 0 for every other type.
  int64_t super = 0;
  // kInt4Asym only: the offset is an integer zero point, m = -z * d with z in [1, 15] and z * d
  // an fp16 (so the stored offset holds it exactly): value q * d + m == (q - z) * d, the grid
  // of GPTQ checkpoints (`--target vllm`, src/quant/gptq_export.h). Off for Frugal's own files.
  bool integer_zero = false;

  // The format of `type` (a Frugal type, or a GGUF type of gguf_grid.h) for rows of `cols`
  // inputs.
  static StatusOr<QuantFormat> Of(TensorType type, int64_t cols);
  int64_t groups(int64_t cols) const { return cols / group; }
  // The inputs whose parameters are fitted together: a group, or a K-quant super-block.
  int64_t span() const { return super > 0 ? super : group; }
};

// A K-quant super-block's stored scales, as the file holds them.
struct SuperParams {
  uint16_t d = 0;      // fp16 bits: the sub-block scales' scale
  uint16_t dmin = 0;   // fp16 bits: the sub-block minimums' scale (Q4_K, Q5_K)
  int8_t sc[16] = {};  // sub-block scales: 8 of 6 bits (Q4_K, Q5_K) or 16 signed bytes (Q6_K)
  uint8_t mn[8] = {};  // sub-block minimums, 6 bits (Q4_K, Q5_K)
};

// How a group's scale (and offset) is chosen.
enum class ScaleFit {
  kMinMax,  // from the group's range alone (below)
  kSearch,  // the candidate with the least squared error, as stored (below)
};

// GroupParams (a group's scale and offset) is kernels/quantize.h's.

// Parameters of the n weights w[0..n), with the stored precision applied. kMinMax: RTN's
// (kernels/quantize.h MinMaxParams): max|w| / 127 (INT8) or / 7 (INT4 symmetric);
// (max - min) / 15 and min (INT4 asymmetric). kSearch (INT4
// only, n a multiple of 8; otherwise kMinMax): tries scales that map the range onto slightly
// fewer or more levels than it has (so the extremes may clip), fits scale and offset to each
// candidate's integers by least squares, rounds them to fp16, and keeps whichever candidate,
// min-max included, has the least squared error sum_i a_i (deq(q_i) - w_i)^2, where a is
// `importance` (n weights; null = all ones). This is the clipping search of AWQ's and GPTQ's
// reference code and of llama.cpp's K-quants.
// With f.integer_zero (INT4 asymmetric): min-max puts the range on 15 steps (on 14 above zero, or
// 15 below, when the range lies on one side of it) and rounds the zero point into [1, 15]; each
// search candidate's least-squares offset is rounded to a zero point and its scale refitted for
// it; every scale is moved to the nearest fp16 whose product with its zero point is an fp16.
GroupParams FitGroup(const QuantFormat& f, const float* w, int64_t n,
                     ScaleFit fit = ScaleFit::kMinMax, const float* importance = nullptr);

// sum_i a_i (deq(Q(w_i)) - w_i)^2 over the n weights w (n a multiple of 8) under p.
float GroupError(IntKind kind, const GroupParams& p, const float* w, const float* a, int64_t n);

// Weighted sums over a candidate's integers L: a, a L, a L^2, a x, a x L.
struct AsymSums {
  double w = 0, l = 0, l2 = 0, x = 0, xl = 0;
};
// The candidates of an asymmetric grid's scale search for the n weights w (n a multiple of 8,
// importance a): the range [lo, hi] mapped onto top + k / 10 levels (k = -10 .. 10), rounded and
// clamped to [0, top]; take() gets each candidate's sums, from which the caller fits its grid's
// scale and offset (SolveAsym, or a constrained fit).
void ForEachAsymCandidate(const float* w, const float* a, int64_t n, float lo, float hi, float top,
                          const std::function<void(const AsymSums&)>& take);
// The least-squares d and m of min sum a (d L + m - x)^2; false when the sums are singular.
bool SolveAsym(const AsymSums& s, double* d, double* m);

// The parameters of the span() weights w (a group, or a K-quant super-block, gguf_grid.h
// FitSuperBlock): params[0 .. span / group), and *super for K-quants (else unused, may be null).
// importance: span() weights (null = all ones).
void FitSpan(const QuantFormat& f, const float* w, ScaleFit fit, const float* importance,
             GroupParams* params, SuperParams* super);
// The zero point z of integer-zero parameters (QuantFormat::integer_zero): p.m == -z * p.d
// exactly with z in [1, 15]; nullopt when p is not on that grid.
std::optional<int> IntegerZeroOf(const GroupParams& p);

// The stored integer of w ([-127, 127] for INT8, [0, 15] for INT4) and the value it stands for
// (kernels/quantize.h QuantizeLevel and DequantizeLevel).
inline int8_t QuantizeValue(const QuantFormat& f, const GroupParams& p, float w) {
  return QuantizeLevel(f.kind, p, w);
}
inline float DequantizeValue(const QuantFormat& f, const GroupParams& p, int8_t q) {
  return DequantizeLevel(f.kind, p, q);
}

// A quantized matrix before packing: q[r * cols + c], params[r * groups + g], and for K-quants
// supers[r * (cols / super) + s].
struct QuantizedMatrix {
  QuantFormat format;
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> q;
  std::vector<GroupParams> params;
  std::vector<SuperParams> supers;

  // The values the matrix now stands for, [rows][cols].
  std::vector<float> Dequantize() const;
  // The file layout (kernels/quantize.h PackRows; GGUF's blocks for a GGUF type).
  StatusOr<std::vector<uint8_t>> Pack() const;
};

// Row i of the result is row from[i] of m (codes and group parameters move together).
QuantizedMatrix PermuteRows(const QuantizedMatrix& m, const std::vector<int64_t>& from);

// Round to nearest, group by group (each group's FitGroup, then kernels/quantize.h
// QuantizeGroup: with kMinMax, the bytes of QuantizeRowsRtn). importance: one weight per input
// column (null = all ones). Rows are split over `pool` when given.
QuantizedMatrix QuantizeRtn(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                            ScaleFit fit = ScaleFit::kMinMax, const float* importance = nullptr,
                            ThreadPool* pool = nullptr);

}  // namespace frugal
