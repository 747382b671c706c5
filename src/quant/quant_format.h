// The arithmetic every quantization method shares: how a group of weights is mapped to the
// integers and scales of a Frugal format (docs/formats.md), exactly as they will be stored
// (scales and offsets rounded to fp16 first), so that what RTN, GPTQ and AWQ optimise is the
// error of the file that is written.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "formats/tensor_types.h"
#include "frugal/status.h"

namespace frugal {

struct QuantFormat {
  enum class Kind { kInt8, kInt4Sym, kInt4Asym };
  TensorType type = TensorType::kI8_C;
  Kind kind = Kind::kInt8;
  int64_t group = 0;  // inputs per scale; the row length for per-channel INT8

  // The format of `type` (a Frugal type) for rows of `cols` inputs.
  static StatusOr<QuantFormat> Of(TensorType type, int64_t cols);
  int64_t groups(int64_t cols) const { return cols / group; }
};

struct GroupParams {
  float d = 0;  // scale
  float m = 0;  // offset (INT4 asymmetric only)
};

// Round-to-nearest parameters of n weights w[0], w[stride], ...: max|w| / 127 (INT8) or / 7
// (INT4 symmetric); (max - min) / 15 and min (INT4 asymmetric); stored precision applied.
GroupParams FitGroup(const QuantFormat& f, const float* w, int64_t n, int64_t stride = 1);

// The stored integer of w ([-127, 127] for INT8, [0, 15] for INT4) and the value it stands for.
inline int8_t QuantizeValue(const QuantFormat& f, const GroupParams& p, float w);
inline float DequantizeValue(const QuantFormat& f, const GroupParams& p, int8_t q);

// A quantized matrix before packing: q[r * cols + c], params[r * groups + g].
struct QuantizedMatrix {
  QuantFormat format;
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> q;
  std::vector<GroupParams> params;

  // The values the matrix now stands for, [rows][cols].
  std::vector<float> Dequantize() const;
  // The file layout (kernels/quantize.h PackRows).
  StatusOr<std::vector<uint8_t>> Pack() const;
};

// Row i of the result is row from[i] of m (codes and group parameters move together).
QuantizedMatrix PermuteRows(const QuantizedMatrix& m, const std::vector<int64_t>& from);

// Round to nearest, group by group.
QuantizedMatrix QuantizeRtn(const QuantFormat& f, const float* w, int64_t rows, int64_t cols);

// --- inline definitions ---

inline int8_t QuantizeValue(const QuantFormat& f, const GroupParams& p, float w) {
  const float id = p.d != 0 ? 1.0f / p.d : 0.0f;
  switch (f.kind) {
    case QuantFormat::Kind::kInt8: {
      const float v = std::nearbyint(w * id);
      return static_cast<int8_t>(v < -127.0f ? -127.0f : (v > 127.0f ? 127.0f : v));
    }
    case QuantFormat::Kind::kInt4Sym: {
      const float v = std::nearbyint(w * id);
      return static_cast<int8_t>((v < -8.0f ? -8.0f : (v > 7.0f ? 7.0f : v)) + 8.0f);
    }
    case QuantFormat::Kind::kInt4Asym: {
      const float v = std::nearbyint((w - p.m) * id);
      return static_cast<int8_t>(v < 0.0f ? 0.0f : (v > 15.0f ? 15.0f : v));
    }
  }
  return 0;
}

inline float DequantizeValue(const QuantFormat& f, const GroupParams& p, int8_t q) {
  switch (f.kind) {
    case QuantFormat::Kind::kInt8: return static_cast<float>(q) * p.d;
    case QuantFormat::Kind::kInt4Sym: return static_cast<float>(q - 8) * p.d;
    case QuantFormat::Kind::kInt4Asym: return static_cast<float>(q) * p.d + p.m;
  }
  return 0;
}

}  // namespace frugal
