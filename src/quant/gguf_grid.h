// GGUF block types that `frugal quantize` fits and packs itself, so that RTN, GPTQ and AWQ
// optimise the grid of the file stock llama.cpp reads (--target llama.cpp): Q5_0 and Q5_1 (a
// scale, and an offset, per 32 inputs) and the K-quants Q4_K, Q5_K and Q6_K, whose sub-block
// scales are small integers times a super-block scale shared by 256 inputs.
//
// A K-quant super-block is fitted as one span (QuantFormat::super): each sub-block's best scale
// (and minimum) is searched in float, weighted by the inputs' importance (GPTQ: its Hessian's
// diagonal), the super-block scales are set from the largest of them and rounded to fp16, and
// each sub-block then takes whichever of the integers next to its rounded scale (and minimum) has
// the least weighted error. The effective per-sub-block parameters (GroupParams) are computed as
// llama.cpp's dequantizers compute them (d * sc and dmin * m in float), so that
// QuantizedMatrix::Dequantize gives exactly the floats llama.cpp reads back.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/quant_format.h"

namespace frugal {

// The integers of a kind: w / d rounded into [lo, hi] (symmetric kinds, before any stored
// offset), or (w - m) / d into [0, hi] (asymmetric).
struct GridLevels {
  float lo = 0, hi = 0;
  bool asym = false;
};
constexpr GridLevels LevelsOf(IntKind kind) {
  switch (kind) {
    case IntKind::kInt8:
      return {-127, 127, false};
    case IntKind::kInt4Sym:
      return {-8, 7, false};
    case IntKind::kInt4Asym:
      return {0, 15, true};
    case IntKind::kInt5Sym:
      return {-16, 15, false};
    case IntKind::kInt5Asym:
      return {0, 31, true};
    case IntKind::kInt6Sym:
      return {-32, 31, false};
  }
  return {};
}

// Q4_K, Q5_K, Q6_K, Q5_0 and Q5_1.
bool IsGgufGrid(TensorType type);
// Its format for rows of `cols` inputs (a multiple of 256 for K-quants, of 32 otherwise).
StatusOr<QuantFormat> GgufGridFormat(TensorType type, int64_t cols);

// Round-to-nearest parameters of a Q5_0 / Q5_1 block (n weights): the signed weight of largest
// magnitude onto -16 (as llama.cpp), or the range onto [0, 31]; fp16 as stored.
GroupParams MinMaxGgufBlock(const QuantFormat& f, const float* w, int64_t n);

// A K-quant super-block (f.super weights w, importance a or null): params[0 .. super / group)
// and the stored *super.
void FitSuperBlock(const QuantFormat& f, const float* w, const float* a, GroupParams* params,
                   SuperParams* super);

// m in GGUF's blocks, row by row (m.format a GGUF grid type).
StatusOr<std::vector<uint8_t>> PackGgufBlocks(const QuantizedMatrix& m);

}  // namespace frugal
