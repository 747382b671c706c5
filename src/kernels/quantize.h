// Writing tensors in Frugal's formats (docs/formats.md): packing already-quantized integers
// into the tiled layout, and round-to-nearest (RTN) quantization on top of it. GPTQ and AWQ
// (frugal quantize) choose the integers and scales themselves and pack them with PackRows.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "formats/gguf.h"
#include "formats/tensor_types.h"
#include "frugal/status.h"

namespace frugal {

// Groups per row of `cols` inputs: cols / group size, or 1 for per-channel types.
int64_t GroupsPerRow(TensorType type, int64_t cols);

// Packs rows x cols quantized weights of a Frugal type into dst (rows * RowBytes(type, cols)
// bytes). q[r * cols + c] is the stored integer: [-127, 127] for INT8, [0, 15] for INT4 (the
// value is then (q - 8) * d for I4S, q * d + m for I4A). scale[r * groups + g] is d; offset
// (I4A only, else null) is m. Group-type scales and offsets are stored as fp16: round them with
// RoundScale before choosing q so that the integers fit the stored scales.
Status PackRows(TensorType type, int64_t rows, int64_t cols, const int8_t* q, const float* scale,
                const float* offset, uint8_t* dst);

// The value a scale (or offset) of `type` has once stored: fp16 for the group types, float for
// INT8 per channel.
float RoundScale(TensorType type, float v);

// Round-to-nearest quantization of rows x cols floats (rows a multiple of 8, cols of the group
// size): symmetric types take d = max|w| / 127 (INT8) or / 7 (INT4); I4A takes d = (max - min) / 15
// and m = min. Returns the packed bytes.
StatusOr<std::vector<uint8_t>> QuantizeRowsRtn(TensorType type, const float* src, int64_t rows,
                                               int64_t cols);

// GGUF types whose blocks hold exactly the values of a Frugal format (Q4_0 = I4S_G32,
// Q4_1 = I4A_G32, Q8_0 = I8_G32): re-laid into tiles, a tensor keeps every weight bit for bit
// and runs on the tiled kernels. nullopt for other types and for a row count not a multiple
// of 8.
std::optional<TensorType> RepackedType(const TensorView& t);
// Writes t in the layout of *RepackedType(t) to dst (t.nbytes bytes: the sizes are equal).
void RepackRows(const TensorView& t, uint8_t* dst);

}  // namespace frugal
