// GGUF block types re-laid into 8-row tiles when a model is loaded: Q4_0 / Q4_1 / Q8_0 as
// Frugal's own formats (their values are exactly those of I4S_G32 / I4A_G32 / I8_G32), and
// Q4_K / Q5_K / Q6_K / Q5_0 / Q5_1 as the in-memory tiles kQ*_X8 (formats/tensor_types.h,
// docs/formats.md). Also the scalar oracle of the in-memory tiles: dequantization with the very
// operations of the GGUF reference dequantizers (dequantize.cc), so that a re-laid tensor gives
// the same floats bit for bit, and integer dot products with INT8 activations.
#include <cstring>
#include <iterator>

#include "common/check.h"
#include "common/fp16.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "kernels/ref/gguf_blocks.h"

namespace frugal {
namespace {

constexpr int kR = kTileRows;
constexpr int kSubs = kQKK / kQK;  // 32-input sub-blocks per K-quant super-block

// The integer of input j (0..31) of row r in a chunk: its nibble, and with bits 5 or 6 the bits
// above it from the chunk's planes (tensor_types.h).
int ChunkAt(const ChunkNibbles& qs, const ChunkBitPlane* planes, int bits, int r, int j) {
  const int jj = j % 16, k = jj / kStepBytes, i = jj % kStepBytes;
  const uint8_t byte = qs[k][r][i];
  int q = j < 16 ? (byte & 0x0f) : (byte >> 4);
  if (bits == 5) q |= ((planes[0][r][i] >> (j < 16 ? k : 4 + k)) & 1) << 4;
  if (bits == 6) q |= ((planes[j / 16][r][i] >> (2 * k)) & 3) << 4;
  return q;
}

// Stores q[r][j] (0 .. 2^bits - 1) as one chunk; the planes must be zero.
void PackChunk(const int (&q)[kR][kQK], int bits, ChunkNibbles* qs, ChunkBitPlane* planes) {
  for (int r = 0; r < kR; ++r) {
    for (int k = 0; k < kQK / 2 / kStepBytes; ++k) {
      for (int i = 0; i < kStepBytes; ++i) {
        const int lo = q[r][kStepBytes * k + i], hi = q[r][16 + kStepBytes * k + i];
        (*qs)[k][r][i] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        if (bits == 5) {
          planes[0][r][i] |=
              static_cast<uint8_t>((((lo >> 4) & 1) << k) | (((hi >> 4) & 1) << (4 + k)));
        } else if (bits == 6) {
          planes[0][r][i] |= static_cast<uint8_t>(((lo >> 4) & 3) << (2 * k));
          planes[1][r][i] |= static_cast<uint8_t>(((hi >> 4) & 3) << (2 * k));
        }
      }
    }
  }
}

// --- the oracle ---

template <class Tile>  // TileQ4_K, TileQ5_K
int KAt(const Tile& t, int s, int r, int j) {
  if constexpr (std::is_same_v<Tile, TileQ4_K>) {
    return ChunkAt(t.qs[s], nullptr, 4, r, j);
  } else {
    return ChunkAt(t.qs[s], &t.qh[s], 5, r, j);
  }
}

template <class Tile>
void DequantTileK(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Tile*>(src);
  for (int64_t sb = 0; sb < n / kQKK; ++sb) {
    for (int r = 0; r < kR; ++r) {
      const float d = Fp16ToFp32(b[sb].d[r]), dmin = Fp16ToFp32(b[sb].dmin[r]);
      for (int s = 0; s < kSubs; ++s) {
        const float d1 = d * b[sb].sc[s][r], m1 = dmin * b[sb].m[s][r];  // as DequantQ4_K
        float* out = dst + r * n + sb * kQKK + s * kQK;
        for (int j = 0; j < kQK; ++j) out[j] = d1 * static_cast<float>(KAt(b[sb], s, r, j)) - m1;
      }
    }
  }
}

template <class Tile>
void DotTileK(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const Tile*>(tile);
  for (int r = 0; r < kR; ++r) {
    float sum = 0;
    for (int64_t sb = 0; sb < n / kQKK; ++sb) {
      const float d = Fp16ToFp32(b[sb].d[r]), dmin = Fp16ToFp32(b[sb].dmin[r]);
      for (int s = 0; s < kSubs; ++s) {
        const BlockQ8Act& xa = x[sb * kSubs + s];
        int32_t isum = 0;
        for (int j = 0; j < kQK; ++j) isum += KAt(b[sb], s, r, j) * xa.qs[j];
        sum += d * static_cast<float>(b[sb].sc[s][r]) * xa.d * static_cast<float>(isum) -
               dmin * static_cast<float>(b[sb].m[s][r]) * xa.s;
      }
    }
    out[r] = sum;
  }
}

void DequantTileQ6_K(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const TileQ6_K*>(src);
  for (int64_t sb = 0; sb < n / kQKK; ++sb) {
    for (int r = 0; r < kR; ++r) {
      const float d = Fp16ToFp32(b[sb].d[r]);
      for (int c = 0; c < kSubs; ++c) {
        float* out = dst + r * n + sb * kQKK + c * kQK;
        for (int j = 0; j < kQK; ++j) {  // as DequantQ6_K
          const int q = ChunkAt(b[sb].ql[c], b[sb].qh[c], 6, r, j) - 32;
          out[j] = d * b[sb].sc[2 * c + j / 16][r] * static_cast<float>(q);
        }
      }
    }
  }
}

void DotTileQ6_K(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const TileQ6_K*>(tile);
  for (int r = 0; r < kR; ++r) {
    float sum = 0;
    for (int64_t sb = 0; sb < n / kQKK; ++sb) {
      const float d = Fp16ToFp32(b[sb].d[r]);
      for (int c = 0; c < kSubs; ++c) {
        const BlockQ8Act& xa = x[sb * kSubs + c];
        int32_t isum[2] = {0, 0};
        for (int j = 0; j < kQK; ++j)
          isum[j / 16] += (ChunkAt(b[sb].ql[c], b[sb].qh[c], 6, r, j) - 32) * xa.qs[j];
        sum += d * xa.d *
               static_cast<float>(b[sb].sc[2 * c][r] * isum[0] + b[sb].sc[2 * c + 1][r] * isum[1]);
      }
    }
    out[r] = sum;
  }
}

template <class Tile>  // TileQ5_0, TileQ5_1
constexpr bool kHasMin = std::is_same_v<Tile, TileQ5_1>;

template <class Tile>
void DequantTileQ5(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Tile*>(src);
  for (int64_t g = 0; g < n / kQK; ++g) {
    for (int r = 0; r < kR; ++r) {
      const float d = Fp16ToFp32(b[g].d[r]);
      float* out = dst + r * n + g * kQK;
      for (int j = 0; j < kQK; ++j) {  // as DequantQ5_0 / DequantQ5_1
        const int q = ChunkAt(b[g].qs, &b[g].qh, 5, r, j);
        if constexpr (kHasMin<Tile>) {
          out[j] = static_cast<float>(q) * d + Fp16ToFp32(b[g].m[r]);
        } else {
          out[j] = static_cast<float>(q - 16) * d;
        }
      }
    }
  }
}

template <class Tile>
void DotTileQ5(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const Tile*>(tile);
  for (int r = 0; r < kR; ++r) {
    float sum = 0;
    for (int64_t g = 0; g < n / kQK; ++g) {
      const float d = Fp16ToFp32(b[g].d[r]);
      int32_t isum = 0;
      for (int j = 0; j < kQK; ++j)
        isum += (ChunkAt(b[g].qs, &b[g].qh, 5, r, j) - (kHasMin<Tile> ? 0 : 16)) * x[g].qs[j];
      sum += d * x[g].d * static_cast<float>(isum);
      if constexpr (kHasMin<Tile>) sum += Fp16ToFp32(b[g].m[r]) * x[g].s;
    }
    out[r] = sum;
  }
}

// --- re-laying ---

// Q4_0 / Q4_1 / Q8_0 as Frugal formats: per 32 inputs, 8 scales (8 offsets), 8 rows of quants.
template <typename Src, typename Dst>
void RepackAs(const TensorView& t, uint8_t* dst) {
  const int64_t blocks = t.ne[0] / kQK;
  const auto* src = reinterpret_cast<const Src*>(t.data);
  auto* out = reinterpret_cast<Dst*>(dst);
  for (int64_t tile = 0; tile < t.rows() / kR; ++tile) {
    for (int64_t b = 0; b < blocks; ++b, ++out) {
      for (int r = 0; r < kR; ++r) {
        const Src& in = src[(tile * kR + r) * blocks + b];
        out->d[r] = in.d;
        if constexpr (std::is_same_v<Src, BlockQ4_1>) out->m[r] = in.m;
        // GGUF's bytes in order, 4 per step: Q4 byte j holds inputs j and j + 16, as ours do.
        for (size_t k = 0; k < sizeof(in.qs) / kStepBytes; ++k) {
          std::memcpy(out->qs[0][k][r], in.qs + kStepBytes * k, kStepBytes);
        }
      }
    }
  }
}

// Every block of 8 rows (in[r] is row r's) into one tile. Q4_K and Q5_K: the 6-bit scales and
// minimums a byte each, the nibbles (and fifth bits) chunk by chunk.
template <class Block, class Tile>
void RelayBlocks(const Block* const* in, Tile* out) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  for (int r = 0; r < kR; ++r) {
    out->d[r] = in[r]->d;
    out->dmin[r] = in[r]->dmin;
    for (int s = 0; s < kSubs; ++s) Q4KScaleMin(s, in[r]->scales, &out->sc[s][r], &out->m[s][r]);
  }
  for (int s = 0; s < kSubs; ++s) {
    int q[kR][kQK];
    for (int r = 0; r < kR; ++r) {
      for (int j = 0; j < kQK; ++j) {
        if constexpr (kQ5) {
          q[r][j] = Q5KAt(*in[r], kQK * s + j);
        } else {
          q[r][j] = Q4KAt(*in[r], kQK * s + j);
        }
      }
    }
    if constexpr (kQ5) {
      PackChunk(q, 5, &out->qs[s], &out->qh[s]);
    } else {
      PackChunk(q, 4, &out->qs[s], nullptr);
    }
  }
}
void RelayBlocks(const BlockQ6_K* const* in, TileQ6_K* out) {
  for (int r = 0; r < kR; ++r) {
    out->d[r] = in[r]->d;
    for (int s = 0; s < kQKK / 16; ++s) out->sc[s][r] = in[r]->scales[s];
  }
  for (int c = 0; c < kSubs; ++c) {
    int q[kR][kQK];
    for (int r = 0; r < kR; ++r)
      for (int j = 0; j < kQK; ++j) q[r][j] = Q6KAt(*in[r], kQK * c + j);
    PackChunk(q, 6, &out->ql[c], out->qh[c]);
  }
}
template <class Block, class Tile>  // Q5_0 / Q5_1
void RelayBlocksQ5(const Block* const* in, Tile* out) {
  int q[kR][kQK];
  for (int r = 0; r < kR; ++r) {
    out->d[r] = in[r]->d;
    if constexpr (kHasMin<Tile>) out->m[r] = in[r]->m;
    for (int j = 0; j < kQK; ++j) q[r][j] = Q5At(*in[r], j);
  }
  PackChunk(q, 5, &out->qs, &out->qh);
}

template <typename Src, typename Dst>
void RelayAs(const TensorView& t, uint8_t* dst) {
  const int64_t blocks = t.ne[0] / GetTypeInfo(t.type)->block_size;
  const auto* src = reinterpret_cast<const Src*>(t.data);
  auto* out = reinterpret_cast<Dst*>(dst);
  std::memset(dst, 0, static_cast<size_t>(t.rows() / kR * blocks) * sizeof(Dst));
  for (int64_t tile = 0; tile < t.rows() / kR; ++tile) {
    for (int64_t b = 0; b < blocks; ++b, ++out) {
      const Src* in[kR];
      for (int r = 0; r < kR; ++r) in[r] = &src[(tile * kR + r) * blocks + b];
      if constexpr (std::is_same_v<Dst, TileQ5_0> || std::is_same_v<Dst, TileQ5_1>) {
        RelayBlocksQ5(in, out);
      } else {
        RelayBlocks(in, out);
      }
    }
  }
}

// The inverse of RepackAs: every 8-row tile back into 8 rows of GGUF blocks.
template <typename Dst, typename Src>
void UnpackAs(const TensorView& t, uint8_t* dst) {
  const int64_t blocks = t.ne[0] / kQK;
  const auto* in = reinterpret_cast<const Src*>(t.data);
  auto* out = reinterpret_cast<Dst*>(dst);
  for (int64_t tile = 0; tile < t.rows() / kR; ++tile) {
    for (int64_t b = 0; b < blocks; ++b, ++in) {
      for (int r = 0; r < kR; ++r) {
        Dst& o = out[(tile * kR + r) * blocks + b];
        o.d = in->d[r];
        if constexpr (std::is_same_v<Dst, BlockQ4_1>) o.m = in->m[r];
        for (size_t k = 0; k < sizeof(o.qs) / kStepBytes; ++k) {
          std::memcpy(o.qs + kStepBytes * k, in->qs[0][k][r], kStepBytes);
        }
      }
    }
  }
}

}  // namespace

const KernelTraits* GetScalarGgufTileTraits(TensorType type) {
  // In type id order from kQ4_K_X8 (2048).
  static const KernelTraits kTable[] = {
      {.dequantize_tile = DequantTileK<TileQ4_K>, .dot_q8_tile = DotTileK<TileQ4_K>},
      {.dequantize_tile = DequantTileK<TileQ5_K>, .dot_q8_tile = DotTileK<TileQ5_K>},
      {.dequantize_tile = DequantTileQ6_K, .dot_q8_tile = DotTileQ6_K},
      {.dequantize_tile = DequantTileQ5<TileQ5_0>, .dot_q8_tile = DotTileQ5<TileQ5_0>},
      {.dequantize_tile = DequantTileQ5<TileQ5_1>, .dot_q8_tile = DotTileQ5<TileQ5_1>},
  };
  const uint32_t i = static_cast<uint32_t>(type) - static_cast<uint32_t>(TensorType::kQ4_K_X8);
  return i < std::size(kTable) ? &kTable[i] : nullptr;
}

std::optional<TensorType> RepackedType(const TensorView& t) {
  const TypeInfo* info = GetTypeInfo(t.type);
  if (info == nullptr || t.rows() % kR != 0 || t.ne[0] % info->block_size != 0) return std::nullopt;
  switch (t.type) {
    case TensorType::kQ4_0:
      return TensorType::kI4S_G32;
    case TensorType::kQ4_1:
      return TensorType::kI4A_G32;
    case TensorType::kQ8_0:
      return TensorType::kI8_G32;
    case TensorType::kQ4_K:
      return TensorType::kQ4_K_X8;
    case TensorType::kQ5_K:
      return TensorType::kQ5_K_X8;
    case TensorType::kQ6_K:
      return TensorType::kQ6_K_X8;
    case TensorType::kQ5_0:
      return TensorType::kQ5_0_X8;
    case TensorType::kQ5_1:
      return TensorType::kQ5_1_X8;
    default:
      return std::nullopt;
  }
}

size_t RepackedBytes(const TensorView& t) {
  const std::optional<TensorType> type = RepackedType(t);
  FRUGAL_CHECK(type.has_value());
  return static_cast<size_t>(t.rows()) * *RowBytes(*type, t.ne[0]);
}

void RepackRows(const TensorView& t, uint8_t* dst) {
  switch (t.type) {
    case TensorType::kQ4_0:
      return RepackAs<BlockQ4_0, BlockI4S<32>>(t, dst);
    case TensorType::kQ4_1:
      return RepackAs<BlockQ4_1, BlockI4A<32>>(t, dst);
    case TensorType::kQ8_0:
      return RepackAs<BlockQ8_0, BlockI8<32>>(t, dst);
    case TensorType::kQ4_K:
      return RelayAs<BlockQ4_K, TileQ4_K>(t, dst);
    case TensorType::kQ5_K:
      return RelayAs<BlockQ5_K, TileQ5_K>(t, dst);
    case TensorType::kQ6_K:
      return RelayAs<BlockQ6_K, TileQ6_K>(t, dst);
    case TensorType::kQ5_0:
      return RelayAs<BlockQ5_0, TileQ5_0>(t, dst);
    case TensorType::kQ5_1:
      return RelayAs<BlockQ5_1, TileQ5_1>(t, dst);
    default:
      FRUGAL_CHECK(false && "RepackRows: type has no tiled form");
  }
}

std::optional<TensorType> GgufEquivalent(TensorType frugal) {
  switch (frugal) {
    case TensorType::kI8_G32:
      return TensorType::kQ8_0;
    case TensorType::kI4S_G32:
      return TensorType::kQ4_0;
    case TensorType::kI4A_G32:
      return TensorType::kQ4_1;
    default:
      return std::nullopt;
  }
}

void UnpackToGguf(const TensorView& t, uint8_t* dst) {
  switch (t.type) {
    case TensorType::kI8_G32:
      return UnpackAs<BlockQ8_0, BlockI8<32>>(t, dst);
    case TensorType::kI4S_G32:
      return UnpackAs<BlockQ4_0, BlockI4S<32>>(t, dst);
    case TensorType::kI4A_G32:
      return UnpackAs<BlockQ4_1, BlockI4A<32>>(t, dst);
    default:
      FRUGAL_CHECK(false && "UnpackToGguf: type has no GGUF equivalent");
  }
}

}  // namespace frugal
