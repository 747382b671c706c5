// Writing tensors in Frugal's formats (docs/formats.md): the integer kinds, round-to-nearest
// (RTN) quantization -- the one implementation; src/quant's methods call it -- and packing
// already-quantized integers into the tiled layout. GPTQ and AWQ (frugal quantize) choose the
// integers and scales themselves and pack them with PackRows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "formats/gguf.h"
#include "formats/tensor_types.h"
#include "frugal/status.h"

namespace frugal {

// What a Frugal type's stored integers mean: the one list of integer kinds (quant's formats and
// recipes use it too).
enum class IntKind {
  kInt8,      // [-127, 127], value q * d (per group, or per channel for I8_C)
  kInt4Sym,   // [0, 15], value (q - 8) * d
  kInt4Asym,  // [0, 15], value q * d + m
  // The grids of GGUF block types that frugal quantize also writes (src/quant/gguf_grid.h): d and
  // m are then a block's or a K-quant sub-block's effective scale and offset.
  kInt5Sym,   // [0, 31], value (q - 16) * d (Q5_0)
  kInt5Asym,  // [0, 31], value q * d + m (Q5_1, Q5_K)
  kInt6Sym,   // [-32, 31], value q * d (Q6_K)
};
// The kind of a Frugal type (IsFrugalType(type)).
IntKind IntKindOf(TensorType type);

// A group's scale d and offset m (m: kInt4Asym only), as stored (RoundScale applied).
struct GroupParams {
  float d = 0;
  float m = 0;
};

// Round-to-nearest's parameters for the n weights w[0..n) of a group of `type`: d = max|w| / 127
// (INT8) or / 7 (INT4 symmetric); d = (max - min) / 15 and m = min (INT4 asymmetric).
GroupParams MinMaxParams(TensorType type, const float* w, int64_t n);

// v rounded to the nearest integer, ties to even (as std::nearbyint in the default rounding
// mode), for |v| <= 2^22: adding and subtracting 1.5 * 2^23 leaves no fraction bits (IEEE
// arithmetic; the project is not built with -ffast-math). Two adds instead of a libm call, as
// the quantizers round every weight many times.
inline float RoundSmall(float v) { return (v + 12582912.0f) - 12582912.0f; }

// The stored integer of w under p ([-127, 127] for INT8, [0, 15] for INT4), rounded to nearest,
// and the value a stored integer stands for.
inline int8_t QuantizeLevel(IntKind kind, const GroupParams& p, float w) {
  const float id = p.d != 0 ? 1.0f / p.d : 0.0f;
  // Clamped first, then rounded: the same as rounding first, as the bounds are integers.
  switch (kind) {
    case IntKind::kInt8:
      return static_cast<int8_t>(RoundSmall(std::clamp(w * id, -127.0f, 127.0f)));
    case IntKind::kInt4Sym:
      return static_cast<int8_t>(RoundSmall(std::clamp(w * id, -8.0f, 7.0f)) + 8.0f);
    case IntKind::kInt4Asym:
      return static_cast<int8_t>(RoundSmall(std::clamp((w - p.m) * id, 0.0f, 15.0f)));
    case IntKind::kInt5Sym:
      return static_cast<int8_t>(RoundSmall(std::clamp(w * id, -16.0f, 15.0f)) + 16.0f);
    case IntKind::kInt5Asym:
      return static_cast<int8_t>(RoundSmall(std::clamp((w - p.m) * id, 0.0f, 31.0f)));
    case IntKind::kInt6Sym:
      return static_cast<int8_t>(RoundSmall(std::clamp(w * id, -32.0f, 31.0f)));
  }
  return 0;
}

inline float DequantizeLevel(IntKind kind, const GroupParams& p, int8_t q) {
  switch (kind) {
    case IntKind::kInt8:
      return static_cast<float>(q) * p.d;
    case IntKind::kInt4Sym:
      return static_cast<float>(q - 8) * p.d;
    case IntKind::kInt4Asym:
    case IntKind::kInt5Asym:
      return static_cast<float>(q) * p.d + p.m;
    case IntKind::kInt5Sym:
      return static_cast<float>(q - 16) * p.d;
    case IntKind::kInt6Sym:
      return static_cast<float>(q) * p.d;
  }
  return 0;
}

// Round to nearest of a group's n weights under p: q[j] = QuantizeLevel(kind, p, w[j]).
inline void QuantizeGroup(IntKind kind, const GroupParams& p, const float* w, int64_t n,
                          int8_t* q) {
  for (int64_t j = 0; j < n; ++j) q[j] = QuantizeLevel(kind, p, w[j]);
}

// Groups per row of `cols` inputs: cols / group size, or 1 for per-channel types.
int64_t GroupsPerRow(TensorType type, int64_t cols);

// Packs rows x cols quantized weights of a Frugal type into dst (rows * RowBytes(type, cols)
// bytes). q[r * cols + c] is the stored integer: [-127, 127] for INT8, [0, 15] for INT4 (the
// value is then (q - 8) * d for I4S, q * d + m for I4A). scale[r * groups + g] is d; offset
// (I4A only, else null) is m. Group-type scales and offsets are stored as fp16: round them with
// RoundScale before choosing q so that the integers fit the stored scales.
Status PackRows(TensorType type, int64_t rows, int64_t cols, const int8_t* q, const float* scale,
                const float* offset, uint8_t* dst);

// The inverse of PackRows: from src (rows * RowBytes(type, cols) bytes of a Frugal type), the
// stored integers q[r * cols + c], scales scale[r * groups + g] and, for I4A (else null), offsets
// offset[r * groups + g], every bit as stored (fp16 scales widened to float).
Status UnpackRows(TensorType type, int64_t rows, int64_t cols, const uint8_t* src, int8_t* q,
                  float* scale, float* offset);

// The value a scale (or offset) of `type` has once stored: fp16 for the group types, float for
// INT8 per channel.
float RoundScale(TensorType type, float v);

// Round-to-nearest quantization of rows x cols floats (rows a multiple of 8, cols of the group
// size): each group's MinMaxParams, then QuantizeGroup. Returns the packed bytes.
StatusOr<std::vector<uint8_t>> QuantizeRowsRtn(TensorType type, const float* src, int64_t rows,
                                               int64_t cols);

// GGUF block types re-laid into 8-row tiles at load (kernels/ref/gguf_tiles.cc), every weight
// kept bit for bit, so that they run on the tiled integer kernels: Q4_0, Q4_1 and Q8_0 hold
// exactly the values of I4S_G32, I4A_G32 and I8_G32; Q4_K, Q5_K, Q6_K, Q5_0 and Q5_1 become the
// in-memory tiles kQ4_K_X8 ... (formats/tensor_types.h). nullopt for other types and for a row
// count not a multiple of 8.
std::optional<TensorType> RepackedType(const TensorView& t);
// The bytes of t re-laid (a K-quant tile is slightly larger than its blocks: the 6-bit scales
// take a byte each).
size_t RepackedBytes(const TensorView& t);
// Writes t in the layout of *RepackedType(t) to dst (RepackedBytes(t) bytes).
void RepackRows(const TensorView& t, uint8_t* dst);

// The GGUF block type whose values are exactly those of a Frugal format: I8_G32 -> Q8_0,
// I4S_G32 -> Q4_0, I4A_G32 -> Q4_1 (what stock llama.cpp reads); nullopt for the others.
std::optional<TensorType> GgufEquivalent(TensorType frugal);
// The inverse of RepackRows for those: t (one of the three) in GGUF's row-by-row blocks, to dst
// (t.nbytes bytes: the sizes are equal). Every bit kept.
void UnpackToGguf(const TensorView& t, uint8_t* dst);

}  // namespace frugal
