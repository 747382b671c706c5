// Reference (scalar) kernels for Frugal's tiled formats: they define what the bytes mean
// (docs/formats.md) and are the oracle for the SIMD versions. Also packing and RTN (the one
// round-to-nearest; src/quant's QuantizeRtn and scale search build on MinMaxParams and
// QuantizeLevel).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "common/check.h"
#include "common/fp16.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace frugal {
namespace {

constexpr int kR = kTileRows;

// The stored integer of input j (0..31) of row r in a 32-input chunk: INT4 chunks are 4 steps
// of [row][4 bytes], byte i of step k holding inputs 4k + i (low nibble) and 16 + 4k + i (high);
// INT8 chunks are 8 steps, step k holding inputs 4k .. 4k + 3.
inline int I4At(const uint8_t (*chunk)[kTileRows][kStepBytes], int r, int j) {
  const int jj = j % 16;
  const uint8_t byte = chunk[jj / kStepBytes][r][jj % kStepBytes];
  return j < 16 ? (byte & 0x0f) : (byte >> 4);
}
inline int I8At(const int8_t (*chunk)[kTileRows][kStepBytes], int r, int j) {
  return chunk[j / kStepBytes][r][j % kStepBytes];
}

// What a group block stores: INT8 levels as is, INT4 nibbles minus 8 (symmetric) or as is with
// an offset m (asymmetric).
template <template <int> class Block, int G>
constexpr bool kAsymmetric = std::is_same_v<Block<G>, BlockI4A<G>>;

template <template <int> class Block, int G>
inline int Level(const Block<G>& b, int c, int r, int j) {
  if constexpr (std::is_same_v<Block<G>, BlockI8<G>>) {
    return I8At(b.qs[c], r, j);
  } else if constexpr (kAsymmetric<Block, G>) {
    return I4At(b.qs[c], r, j);
  } else {
    return I4At(b.qs[c], r, j) - 8;
  }
}

template <template <int> class Block, int G>
void DequantTile(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Block<G>*>(src);
  for (int64_t g = 0; g < n / G; ++g) {
    for (int r = 0; r < kR; ++r) {
      const float d = Fp16ToFp32(b[g].d[r]);
      for (int c = 0; c < G / kQK; ++c) {
        float* out = dst + r * n + g * G + c * kQK;
        for (int j = 0; j < kQK; ++j) {
          if constexpr (kAsymmetric<Block, G>) {
            out[j] = static_cast<float>(Level<Block, G>(b[g], c, r, j)) * d + Fp16ToFp32(b[g].m[r]);
          } else {
            out[j] = static_cast<float>(Level<Block, G>(b[g], c, r, j)) * d;
          }
        }
      }
    }
  }
}

void DequantTileI8C(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const TileI8CHeader*>(src);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  for (int64_t k = 0; k < n / kQK; ++k) {
    for (int r = 0; r < kR; ++r) {
      float* out = dst + r * n + k * kQK;
      for (int j = 0; j < kQK; ++j) out[j] = static_cast<float>(I8At(b[k].qs, r, j)) * h->d[r];
    }
  }
}

// Integer dots with INT8 activations: out[r] = sum over 32-blocks of d_w * d_x * isum (+ m * s_x).
template <template <int> class Block, int G>
void DotTile(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const Block<G>*>(tile);
  for (int r = 0; r < kR; ++r) {
    float sum = 0;
    for (int64_t g = 0; g < n / G; ++g) {
      const float d = Fp16ToFp32(b[g].d[r]);
      for (int c = 0; c < G / kQK; ++c) {
        const BlockQ8Act& xb = x[g * (G / kQK) + c];
        int32_t isum = 0;
        for (int j = 0; j < kQK; ++j) isum += Level<Block, G>(b[g], c, r, j) * xb.qs[j];
        if constexpr (kAsymmetric<Block, G>) {
          sum += d * xb.d * static_cast<float>(isum) + Fp16ToFp32(b[g].m[r]) * xb.s;
        } else {
          sum += d * xb.d * static_cast<float>(isum);
        }
      }
    }
    out[r] = sum;
  }
}

void DotTileI8C(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* h = static_cast<const TileI8CHeader*>(tile);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  for (int r = 0; r < kR; ++r) {
    float sum = 0;
    for (int64_t k = 0; k < n / kQK; ++k) {
      int32_t isum = 0;
      for (int j = 0; j < kQK; ++j) isum += I8At(b[k].qs, r, j) * x[k].qs[j];
      sum += x[k].d * static_cast<float>(isum);
    }
    out[r] = h->d[r] * sum;
  }
}

}  // namespace

const KernelTraits* GetScalarFrugalTraits(TensorType type) {
  // In type id order, kI8_C (1024) .. kI4A_G128 (1033).
  static const KernelTraits kTable[] = {
      {.dequantize_tile = DequantTileI8C, .dot_q8_tile = DotTileI8C},
      {.dequantize_tile = DequantTile<BlockI8, 32>, .dot_q8_tile = DotTile<BlockI8, 32>},
      {.dequantize_tile = DequantTile<BlockI8, 64>, .dot_q8_tile = DotTile<BlockI8, 64>},
      {.dequantize_tile = DequantTile<BlockI8, 128>, .dot_q8_tile = DotTile<BlockI8, 128>},
      {.dequantize_tile = DequantTile<BlockI4S, 32>, .dot_q8_tile = DotTile<BlockI4S, 32>},
      {.dequantize_tile = DequantTile<BlockI4S, 64>, .dot_q8_tile = DotTile<BlockI4S, 64>},
      {.dequantize_tile = DequantTile<BlockI4S, 128>, .dot_q8_tile = DotTile<BlockI4S, 128>},
      {.dequantize_tile = DequantTile<BlockI4A, 32>, .dot_q8_tile = DotTile<BlockI4A, 32>},
      {.dequantize_tile = DequantTile<BlockI4A, 64>, .dot_q8_tile = DotTile<BlockI4A, 64>},
      {.dequantize_tile = DequantTile<BlockI4A, 128>, .dot_q8_tile = DotTile<BlockI4A, 128>},
  };
  const uint32_t i = static_cast<uint32_t>(type) - static_cast<uint32_t>(TensorType::kI8_C);
  return i < std::size(kTable) ? &kTable[i] : nullptr;
}

IntKind IntKindOf(TensorType type) {
  switch (type) {
    case TensorType::kI8_C:
    case TensorType::kI8_G32:
    case TensorType::kI8_G64:
    case TensorType::kI8_G128:
      return IntKind::kInt8;
    case TensorType::kI4S_G32:
    case TensorType::kI4S_G64:
    case TensorType::kI4S_G128:
      return IntKind::kInt4Sym;
    default:
      return IntKind::kInt4Asym;
  }
}

int64_t GroupsPerRow(TensorType type, int64_t cols) {
  const TypeInfo* info = GetTypeInfo(type);
  return info->group_size == 0 ? 1 : cols / info->group_size;
}

float RoundScale(TensorType type, float v) {
  return type == TensorType::kI8_C ? v : Fp16ToFp32(Fp32ToFp16(v));
}

Status PackRows(TensorType type, int64_t rows, int64_t cols, const int8_t* q, const float* scale,
                const float* offset, uint8_t* dst) {
  if (!IsFrugalType(type) || GetTypeInfo(type) == nullptr) {
    return InvalidArgument("PackRows: " + TypeName(type) + " is not a Frugal format");
  }
  const IntKind kind = IntKindOf(type);
  const bool per_channel = GetTypeInfo(type)->group_size == 0;
  if (rows % kR != 0) {
    return InvalidArgument(TypeName(type) + " needs a multiple of 8 rows, not " +
                           std::to_string(rows));
  }
  if ((kind == IntKind::kInt4Asym) != (offset != nullptr)) {
    return InvalidArgument("PackRows: offsets are given exactly for the asymmetric INT4 types");
  }
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(type, cols));
  const int64_t groups = GroupsPerRow(type, cols);
  const int64_t gsize = cols / groups;
  const int64_t chunks = gsize / kQK;
  const bool int8 = kind == IntKind::kInt8;
  for (int64_t t = 0; t < rows / kR; ++t) {
    uint8_t* p = dst + static_cast<size_t>(t * kR) * row_bytes;
    const int64_t r0 = t * kR;
    if (per_channel) {
      TileI8CHeader h;
      for (int r = 0; r < kR; ++r) h.d[r] = scale[r0 + r];
      std::memcpy(p, &h, sizeof(h));
      p += sizeof(h);
    }
    for (int64_t g = 0; g < groups; ++g) {
      if (!per_channel) {
        for (int r = 0; r < kR; ++r) {
          const uint16_t d = Fp32ToFp16(scale[(r0 + r) * groups + g]);
          std::memcpy(p + 2 * r, &d, 2);
        }
        p += 2 * kR;
        if (kind == IntKind::kInt4Asym) {
          for (int r = 0; r < kR; ++r) {
            const uint16_t m = Fp32ToFp16(offset[(r0 + r) * groups + g]);
            std::memcpy(p + 2 * r, &m, 2);
          }
          p += 2 * kR;
        }
      }
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t col0 = g * gsize + c * kQK;
        for (int r = 0; r < kR; ++r) {  // validate the chunk's levels
          const int8_t* src = q + (r0 + r) * cols + col0;
          for (int j = 0; j < kQK; ++j) {
            if (int8 ? src[j] < -127 : (src[j] < 0 || src[j] > 15)) {
              return InvalidArgument(int8 ? "INT8 level below -127" : "INT4 level outside [0, 15]");
            }
          }
        }
        if (int8) {
          for (int k = 0; k < kQK / kStepBytes; ++k) {
            for (int r = 0; r < kR; ++r) {
              std::memcpy(p, q + (r0 + r) * cols + col0 + kStepBytes * k, kStepBytes);
              p += kStepBytes;
            }
          }
        } else {
          for (int k = 0; k < kQK / 2 / kStepBytes; ++k) {
            for (int r = 0; r < kR; ++r) {
              const int8_t* src = q + (r0 + r) * cols + col0;
              for (int i = 0; i < kStepBytes; ++i) {
                const int j = kStepBytes * k + i;
                *p++ = static_cast<uint8_t>(src[j] | (src[j + 16] << 4));
              }
            }
          }
        }
      }
    }
  }
  return Status::Ok();
}

Status UnpackRows(TensorType type, int64_t rows, int64_t cols, const uint8_t* src, int8_t* q,
                  float* scale, float* offset) {
  if (!IsFrugalType(type) || GetTypeInfo(type) == nullptr) {
    return InvalidArgument("UnpackRows: " + TypeName(type) + " is not a Frugal format");
  }
  const IntKind kind = IntKindOf(type);
  if (rows % kR != 0) {
    return InvalidArgument(TypeName(type) + " needs a multiple of 8 rows, not " +
                           std::to_string(rows));
  }
  if ((kind == IntKind::kInt4Asym) != (offset != nullptr)) {
    return InvalidArgument("UnpackRows: offsets are read exactly for the asymmetric INT4 types");
  }
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(type, cols));
  const bool per_channel = GetTypeInfo(type)->group_size == 0;
  const int64_t groups = GroupsPerRow(type, cols);
  const int64_t gsize = cols / groups;
  const int64_t chunks = gsize / kQK;
  // The same walk as PackRows, reading where it writes.
  for (int64_t t = 0; t < rows / kR; ++t) {
    const uint8_t* p = src + static_cast<size_t>(t * kR) * row_bytes;
    const int64_t r0 = t * kR;
    if (per_channel) {
      TileI8CHeader h;
      std::memcpy(&h, p, sizeof(h));
      p += sizeof(h);
      for (int r = 0; r < kR; ++r) scale[r0 + r] = h.d[r];
    }
    for (int64_t g = 0; g < groups; ++g) {
      if (!per_channel) {
        for (int r = 0; r < kR; ++r) {
          uint16_t d;
          std::memcpy(&d, p + 2 * r, 2);
          scale[(r0 + r) * groups + g] = Fp16ToFp32(d);
        }
        p += 2 * kR;
        if (kind == IntKind::kInt4Asym) {
          for (int r = 0; r < kR; ++r) {
            uint16_t m;
            std::memcpy(&m, p + 2 * r, 2);
            offset[(r0 + r) * groups + g] = Fp16ToFp32(m);
          }
          p += 2 * kR;
        }
      }
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t col0 = g * gsize + c * kQK;
        if (kind == IntKind::kInt8) {
          for (int k = 0; k < kQK / kStepBytes; ++k) {
            for (int r = 0; r < kR; ++r) {
              std::memcpy(q + (r0 + r) * cols + col0 + kStepBytes * k, p, kStepBytes);
              p += kStepBytes;
            }
          }
        } else {
          for (int k = 0; k < kQK / 2 / kStepBytes; ++k) {
            for (int r = 0; r < kR; ++r) {
              int8_t* dst = q + (r0 + r) * cols + col0;
              for (int i = 0; i < kStepBytes; ++i) {
                const int j = kStepBytes * k + i;
                dst[j] = static_cast<int8_t>(*p & 0x0f);
                dst[j + 16] = static_cast<int8_t>(*p >> 4);
                ++p;
              }
            }
          }
        }
      }
    }
  }
  return Status::Ok();
}

GroupParams MinMaxParams(TensorType type, const float* w, int64_t n) {
  GroupParams p;
  const IntKind kind = IntKindOf(type);
  if (kind == IntKind::kInt4Asym) {
    float lo = w[0], hi = w[0];
    for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
    p.d = RoundScale(type, (hi - lo) / 15.0f);
    p.m = RoundScale(type, lo);
    return p;
  }
  float amax = 0;
  for (int64_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(w[j]));
  p.d = RoundScale(type, amax / (kind == IntKind::kInt8 ? 127.0f : 7.0f));
  return p;
}

StatusOr<std::vector<uint8_t>> QuantizeRowsRtn(TensorType type, const float* src, int64_t rows,
                                               int64_t cols) {
  if (!IsFrugalType(type) || GetTypeInfo(type) == nullptr) {
    return InvalidArgument(TypeName(type) + " is not a Frugal format");
  }
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(type, cols));
  const IntKind kind = IntKindOf(type);
  const int64_t groups = GroupsPerRow(type, cols);
  const int64_t gsize = cols / groups;
  std::vector<int8_t> q(static_cast<size_t>(rows * cols));
  std::vector<float> scale(static_cast<size_t>(rows * groups));
  std::vector<float> offset(kind == IntKind::kInt4Asym ? scale.size() : 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* w = src + r * cols + g * gsize;
      const GroupParams p = MinMaxParams(type, w, gsize);
      QuantizeGroup(kind, p, w, gsize, &q[static_cast<size_t>(r * cols + g * gsize)]);
      const size_t si = static_cast<size_t>(r * groups + g);
      scale[si] = p.d;
      if (!offset.empty()) offset[si] = p.m;
    }
  }
  std::vector<uint8_t> out(static_cast<size_t>(rows) * row_bytes);
  FRUGAL_RETURN_IF_ERROR(PackRows(type, rows, cols, q.data(), scale.data(),
                                  offset.empty() ? nullptr : offset.data(), out.data()));
  return out;
}

}  // namespace frugal
