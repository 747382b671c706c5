// AVX2 kernels for Frugal's tiled formats (docs/formats.md). Compiled with -mavx2 -mfma -mf16c
// and reached only through dispatch; compiled again for AVX-512 BW and VNNI through
// avx512bw_tiles.cc and avx512vnni_tiles.cc (x86_variant.h: VPDPBUSD, and the 512-bit two-tile
// kernels of avx512_pairs.h, with the same results). Dequantization
// reproduces the scalar oracle (kernels/ref/frugal_types.cc) bit for bit; the dot products sum
// in another order and are held to the error budgets of tests/unit/kernels_simd_test.cc.
//
// Dot products: a chunk step holds 4 bytes of each of the 8 rows, so 4 activations broadcast
// to every 32-bit lane meet all 8 rows in one u8 x s8 multiply-add, and each row's integer sum
// builds up in its own lane: no horizontal adds; scaled and accumulated in float per chunk.
// With up to 4 activation rows per call (batches, prefill), a chunk is loaded and unpacked once
// for all.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/x86_variant.h"

namespace frugal::FRUGAL_X86_NS {
namespace {

constexpr int kR = kTileRows;

inline __m256 LoadHalf8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// 32 int8 (or 16 nibble bytes) of row r of a chunk, gathered from its steps into input order.
inline __m256i RowI8(const int8_t (*chunk)[kTileRows][kStepBytes], int r) {
  int32_t w[8];
  for (int k = 0; k < 8; ++k) std::memcpy(&w[k], chunk[k][r], kStepBytes);
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
}
inline __m128i RowI4(const uint8_t (*chunk)[kTileRows][kStepBytes], int r) {
  int32_t w[4];
  for (int k = 0; k < 4; ++k) std::memcpy(&w[k], chunk[k][r], kStepBytes);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
}

inline void StoreI8x32(__m256i q, __m256 d, float* out) {
  const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
  for (int p = 0; p < 4; ++p) {
    const __m128i v = p % 2 == 0 ? halves[p / 2] : _mm_srli_si128(halves[p / 2], 8);
    _mm256_storeu_ps(out + 8 * p, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d));
  }
}

// 16 bytes of nibbles -> 32 values in input order (low nibbles, then high), as float, each as
// (q + bias) * d + m with the oracle's operation order.
template <bool kAsym>
inline void StoreI4x32(__m128i v, __m256 d, __m256 m, float* out) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(v, mask), hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int p = 0; p < 4; ++p) {
    __m256i i = _mm256_cvtepu8_epi32(parts[p]);
    if constexpr (kAsym) {
      _mm256_storeu_ps(out + 8 * p, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(i), d), m));
    } else {
      i = _mm256_sub_epi32(i, _mm256_set1_epi32(8));
      _mm256_storeu_ps(out + 8 * p, _mm256_mul_ps(_mm256_cvtepi32_ps(i), d));
    }
  }
}

template <int G>
void DequantTileI8(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockI8<G>*>(src);
  for (int64_t g = 0; g < n / G; ++g) {
    for (int r = 0; r < kR; ++r) {
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[g].d[r]));
      for (int c = 0; c < G / kQK; ++c) StoreI8x32(RowI8(b[g].qs[c], r), d, dst + r * n + g * G + c * kQK);
    }
  }
}

template <int G, bool kAsym>
void DequantTileI4(const void* src, float* dst, int64_t n) {
  using Block = std::conditional_t<kAsym, BlockI4A<G>, BlockI4S<G>>;
  const auto* b = static_cast<const Block*>(src);
  for (int64_t g = 0; g < n / G; ++g) {
    for (int r = 0; r < kR; ++r) {
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(b[g].d[r]));
      __m256 m = _mm256_setzero_ps();
      if constexpr (kAsym) m = _mm256_set1_ps(_cvtsh_ss(b[g].m[r]));
      for (int c = 0; c < G / kQK; ++c) {
        StoreI4x32<kAsym>(RowI4(b[g].qs[c], r), d, m, dst + r * n + g * G + c * kQK);
      }
    }
  }
}

void DequantTileI8C(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const TileI8CHeader*>(src);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  for (int64_t k = 0; k < n / kQK; ++k) {
    for (int r = 0; r < kR; ++r) StoreI8x32(RowI8(b[k].qs, r), _mm256_set1_ps(h->d[r]), dst + r * n + k * kQK);
  }
}

inline __m256i Broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return _mm256_set1_epi32(v);
}

// Asks for the same block of the next tile (tile_bytes on) while this one is computed, for
// several activation rows: they spend long enough on a tile that its weights would otherwise
// arrive late (docs/benchmarks.md). A prefetch never faults, so the one past a matrix's last tile
// is harmless. One row streams fast enough for the hardware prefetcher alone.
template <int R, class Block>
inline void PrefetchNextTile(const Block* blk, size_t tile_bytes) {
  if constexpr (R > 1) {
    const auto* p = reinterpret_cast<const char*>(blk) + tile_bytes;
    for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
  }
}

// Integer sums of the 8 rows of one INT8 chunk with R activation blocks (xq[i], one per
// activation row), one weight row per lane: each step multiplies 4 inputs of every row by the
// same 4 broadcast activations. The weights are loaded and made unsigned once for all R rows.
template <int R>
inline void ChunkSumsI8(const int8_t (*chunk)[kTileRows][kStepBytes], const int8_t* const* xq, __m256i* sum) {
  // Even and odd steps in two sums, so that consecutive steps do not wait on each other
  // (VPDPBUSD adds into its accumulator: a chain of 8 would be latency-bound).
  __m256i even[R], odd[R];
  for (int i = 0; i < R; ++i) even[i] = odd[i] = _mm256_setzero_si256();
  for (int k = 0; k < kQK / kStepBytes; ++k) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[k]));
    const __m256i aw = _mm256_sign_epi8(w, w);
    for (int i = 0; i < R; ++i) {
      // |w| (unsigned) times x with w's sign; |pair sums| <= 2 * 127 * 127 fits int16.
      const __m256i x = _mm256_sign_epi8(Broadcast4(xq[i] + kStepBytes * k), w);
      if (k % 2 == 0) {
        even[i] = AddDotU8S8(even[i], aw, x);
      } else {
        odd[i] = AddDotU8S8(odd[i], aw, x);
      }
    }
  }
  for (int i = 0; i < R; ++i) sum[i] = _mm256_add_epi32(even[i], odd[i]);
}

// The same for an INT4 chunk. With AVX2 the int16 pair sums of all four steps stay below
// 4 * 2 * 2 * 15 * 127 = 30480, so they are added in int16 and widened once per chunk; VNNI
// adds each step to int32 directly. The same integers either way.
inline __m256i AddStepI4(__m256i acc, __m256i u, __m256i s) {
#if defined(FRUGAL_X86_VNNI)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s));
#endif
}
inline __m256i WidenI4(__m256i acc) {
#if defined(FRUGAL_X86_VNNI)
  return acc;
#else
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}

template <int R>
inline void ChunkSumsI4(const uint8_t (*chunk)[kTileRows][kStepBytes], const int8_t* const* xq, __m256i* sum) {
  constexpr int kSteps = kQK / 2 / kStepBytes;
  const __m256i mask = _mm256_set1_epi8(0x0f);
  if constexpr (R == 1) {  // decode: step by step, as the weights stream in
    // Low and high nibbles in two sums: two chains of 4 instead of one of 8 (ChunkSumsI8).
    __m256i acc_lo = _mm256_setzero_si256(), acc_hi = _mm256_setzero_si256();
    for (int k = 0; k < kSteps; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[k]));
      const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
      acc_lo = AddStepI4(acc_lo, lo, Broadcast4(xq[0] + kStepBytes * k));
      acc_hi = AddStepI4(acc_hi, hi, Broadcast4(xq[0] + 16 + kStepBytes * k));
    }
    sum[0] = _mm256_add_epi32(WidenI4(acc_lo), WidenI4(acc_hi));
    return;
  }
  // Several rows: the chunk's nibbles unpacked once (8 registers), then each activation row
  // runs through them with its own accumulator.
  __m256i lo[kSteps], hi[kSteps];
  for (int k = 0; k < kSteps; ++k) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[k]));
    lo[k] = _mm256_and_si256(v, mask);
    hi[k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
  }
  for (int i = 0; i < R; ++i) {
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < kSteps; ++k) {
      acc = AddStepI4(acc, lo[k], Broadcast4(xq[i] + kStepBytes * k));
      acc = AddStepI4(acc, hi[k], Broadcast4(xq[i] + 16 + kStepBytes * k));
    }
    sum[i] = WidenI4(acc);
  }
}

// Dot products of a tile's 8 rows with R activation rows (x + i * ldx blocks), out[i * 8 + r].
// Every row's sum takes the same operations in the same order whatever R, so the R-row kernels
// equal R calls of the one-row ones bit for bit.
template <int G, int R>
void DotTileI8(const void* tile, const BlockQ8Act* x, int64_t ldx, int64_t n, float* out) {
  const auto* b = static_cast<const BlockI8<G>*>(tile);
  __m256 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm256_setzero_ps();
  const size_t tile_bytes = static_cast<size_t>(n / G) * sizeof(BlockI8<G>);
  for (int64_t g = 0; g < n / G; ++g) {
    PrefetchNextTile<R>(b + g, tile_bytes);
    const __m256 d = LoadHalf8(b[g].d);
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act* xb[R];
      const int8_t* xq[R];
      for (int i = 0; i < R; ++i) xb[i] = x + i * ldx + g * (G / kQK) + c, xq[i] = xb[i]->qs;
      __m256i sum[R];
      ChunkSumsI8<R>(b[g].qs[c], xq, sum);
      for (int i = 0; i < R; ++i) {
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i]), _mm256_mul_ps(d, _mm256_set1_ps(xb[i]->d)), acc[i]);
      }
    }
  }
  for (int i = 0; i < R; ++i) _mm256_storeu_ps(out + i * kR, acc[i]);
}

template <int R>
void DotTileI8C(const void* tile, const BlockQ8Act* x, int64_t ldx, int64_t n, float* out) {
  const auto* h = static_cast<const TileI8CHeader*>(tile);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  __m256 acc0[R], acc1[R];  // even, odd chunks
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
  const int64_t nb = n / kQK;
  const size_t tile_bytes = sizeof(TileI8CHeader) + static_cast<size_t>(nb) * sizeof(BlockI8C);
  auto chunk = [&](int64_t k, __m256* acc) {
    PrefetchNextTile<R>(b + k, tile_bytes);
    const int8_t* xq[R];
    for (int i = 0; i < R; ++i) xq[i] = x[i * ldx + k].qs;
    __m256i sum[R];
    ChunkSumsI8<R>(b[k].qs, xq, sum);
    for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i]), _mm256_set1_ps(x[i * ldx + k].d), acc[i]);
  };
  int64_t k = 0;
  for (; k + 2 <= nb; k += 2) {
    chunk(k, acc0);
    chunk(k + 1, acc1);
  }
  if (k < nb) chunk(k, acc0);
  for (int i = 0; i < R; ++i) {
    _mm256_storeu_ps(out + i * kR, _mm256_mul_ps(_mm256_add_ps(acc0[i], acc1[i]), _mm256_loadu_ps(h->d)));
  }
}

template <int G, bool kAsym, int R>
void DotTileI4(const void* tile, const BlockQ8Act* x, int64_t ldx, int64_t n, float* out) {
  using Block = std::conditional_t<kAsym, BlockI4A<G>, BlockI4S<G>>;
  const auto* b = static_cast<const Block*>(tile);
  __m256 acc[R], corr[R];  // corr: sum over groups of (d or m) * sum(x)
  for (int i = 0; i < R; ++i) acc[i] = corr[i] = _mm256_setzero_ps();
  const size_t tile_bytes = static_cast<size_t>(n / G) * sizeof(Block);
  for (int64_t g = 0; g < n / G; ++g) {
    PrefetchNextTile<R>(b + g, tile_bytes);
    const __m256 d = LoadHalf8(b[g].d);
    float xs[R] = {};
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act* xb[R];
      const int8_t* xq[R];
      for (int i = 0; i < R; ++i) xb[i] = x + i * ldx + g * (G / kQK) + c, xq[i] = xb[i]->qs;
      __m256i sum[R];
      ChunkSumsI4<R>(b[g].qs[c], xq, sum);
      for (int i = 0; i < R; ++i) {
        acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[i]), _mm256_mul_ps(d, _mm256_set1_ps(xb[i]->d)), acc[i]);
        xs[i] += xb[i]->s;
      }
    }
    for (int i = 0; i < R; ++i) {
      if constexpr (kAsym) {
        corr[i] = _mm256_fmadd_ps(LoadHalf8(b[g].m), _mm256_set1_ps(xs[i]), corr[i]);
      } else {
        corr[i] = _mm256_fmadd_ps(d, _mm256_set1_ps(xs[i]), corr[i]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    if constexpr (kAsym) {
      _mm256_storeu_ps(out + i * kR, _mm256_add_ps(acc[i], corr[i]));
    } else {
      _mm256_storeu_ps(out + i * kR, _mm256_fnmadd_ps(_mm256_set1_ps(8.0f), corr[i], acc[i]));  // q - 8
    }
  }
}

// f(std::integral_constant<int, m>) for m in 1..4, so that each row count gets its own kernel.
template <class F>
inline void WithRows(int m, F&& f) {
  switch (m) {
    case 1: return f(std::integral_constant<int, 1>());
    case 2: return f(std::integral_constant<int, 2>());
    case 3: return f(std::integral_constant<int, 3>());
    default: return f(std::integral_constant<int, 4>());
  }
}

// KernelTraits' entry points: dot_q8_tile (one activation row) and dot_q8_tiles (1..4 rows).
template <int G>
void DotTileI8One(const void* t, const BlockQ8Act* x, int64_t n, float* out) { DotTileI8<G, 1>(t, x, 0, n, out); }
template <int G>
void DotTilesI8(const void* t, const BlockQ8Act* x, int64_t ldx, int m, int64_t n, float* out) {
  WithRows(m, [&](auto r) { DotTileI8<G, decltype(r)::value>(t, x, ldx, n, out); });
}
void DotTileI8COne(const void* t, const BlockQ8Act* x, int64_t n, float* out) { DotTileI8C<1>(t, x, 0, n, out); }
void DotTilesI8C(const void* t, const BlockQ8Act* x, int64_t ldx, int m, int64_t n, float* out) {
  WithRows(m, [&](auto r) { DotTileI8C<decltype(r)::value>(t, x, ldx, n, out); });
}
template <int G, bool kAsym>
void DotTileI4One(const void* t, const BlockQ8Act* x, int64_t n, float* out) { DotTileI4<G, kAsym, 1>(t, x, 0, n, out); }
template <int G, bool kAsym>
void DotTilesI4(const void* t, const BlockQ8Act* x, int64_t ldx, int m, int64_t n, float* out) {
  WithRows(m, [&](auto r) { DotTileI4<G, kAsym, decltype(r)::value>(t, x, ldx, n, out); });
}

#if defined(FRUGAL_X86_AVX512)
#include "kernels/x86/avx512_pairs.h"  // NOLINT(build/include): its kernels live in this namespace
#define FRUGAL_PAIR(...) , .dot_q8_tile_pair = __VA_ARGS__
#else
#define FRUGAL_PAIR(...)
#endif

}  // namespace

const KernelTraits* GetFrugalTraits(TensorType type) {
  // In type id order, kI8_C (1024) .. kI4A_G128 (1033).
  static const KernelTraits kTable[] = {
      {.dequantize_tile = DequantTileI8C, .dot_q8_tile = DotTileI8COne, .dot_q8_tiles = DotTilesI8C FRUGAL_PAIR(DotPairsI8C)},
      {.dequantize_tile = DequantTileI8<32>, .dot_q8_tile = DotTileI8One<32>, .dot_q8_tiles = DotTilesI8<32> FRUGAL_PAIR(DotPairsI8<32>)},
      {.dequantize_tile = DequantTileI8<64>, .dot_q8_tile = DotTileI8One<64>, .dot_q8_tiles = DotTilesI8<64> FRUGAL_PAIR(DotPairsI8<64>)},
      {.dequantize_tile = DequantTileI8<128>, .dot_q8_tile = DotTileI8One<128>, .dot_q8_tiles = DotTilesI8<128> FRUGAL_PAIR(DotPairsI8<128>)},
      {.dequantize_tile = DequantTileI4<32, false>, .dot_q8_tile = DotTileI4One<32, false>, .dot_q8_tiles = DotTilesI4<32, false> FRUGAL_PAIR(DotPairsI4<32, false>)},
      {.dequantize_tile = DequantTileI4<64, false>, .dot_q8_tile = DotTileI4One<64, false>, .dot_q8_tiles = DotTilesI4<64, false> FRUGAL_PAIR(DotPairsI4<64, false>)},
      {.dequantize_tile = DequantTileI4<128, false>, .dot_q8_tile = DotTileI4One<128, false>, .dot_q8_tiles = DotTilesI4<128, false> FRUGAL_PAIR(DotPairsI4<128, false>)},
      {.dequantize_tile = DequantTileI4<32, true>, .dot_q8_tile = DotTileI4One<32, true>, .dot_q8_tiles = DotTilesI4<32, true> FRUGAL_PAIR(DotPairsI4<32, true>)},
      {.dequantize_tile = DequantTileI4<64, true>, .dot_q8_tile = DotTileI4One<64, true>, .dot_q8_tiles = DotTilesI4<64, true> FRUGAL_PAIR(DotPairsI4<64, true>)},
      {.dequantize_tile = DequantTileI4<128, true>, .dot_q8_tile = DotTileI4One<128, true>, .dot_q8_tiles = DotTilesI4<128, true> FRUGAL_PAIR(DotPairsI4<128, true>)},
  };
  const uint32_t i = static_cast<uint32_t>(type) - static_cast<uint32_t>(TensorType::kI8_C);
  // Not std::size: a template instance would be a weak symbol (x86_variant.h).
  return i < sizeof(kTable) / sizeof(kTable[0]) ? &kTable[i] : nullptr;
}
#undef FRUGAL_PAIR

}  // namespace frugal::FRUGAL_X86_NS
#endif  // __x86_64__
