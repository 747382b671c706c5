// AVX2 kernels for Frugal's tiled formats (docs/formats.md). Compiled with -mavx2 -mfma -mf16c
// and reached only through dispatch. Dequantization reproduces the scalar oracle
// (kernels/ref/frugal_types.cc) bit for bit; the dot products sum in another order and are held
// to the error budgets of tests/unit/kernels_simd_test.cc.
//
// Dot products: a chunk step holds 4 bytes of each of the 8 rows, so 4 activations broadcast
// to every 32-bit lane meet all 8 rows in one maddubs, and each row's integer sum builds up in
// its own lane: no horizontal adds; scaled and accumulated in float per chunk.
#if defined(__x86_64__)
#include <immintrin.h>

#include <iterator>
#include <cstring>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal::avx2 {
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

// Integer sums of the 8 rows of one INT8 chunk with one activation block, one row per lane:
// each step multiplies 4 inputs of every row by the same 4 broadcast activations.
inline __m256i ChunkSumsI8(const int8_t (*chunk)[kTileRows][kStepBytes], const int8_t* xq) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sum = _mm256_setzero_si256();
  for (int k = 0; k < kQK / kStepBytes; ++k) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[k]));
    const __m256i x = Broadcast4(xq + kStepBytes * k);
    // |w| (unsigned) times x with w's sign; |pair sums| <= 2 * 127 * 127 fits int16.
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones));
  }
  return sum;
}

// The same for an INT4 chunk. The int16 pair sums of all four steps stay below
// 4 * 2 * 2 * 15 * 127 = 30480, so they are widened once per chunk.
inline __m256i ChunkSumsI4(const uint8_t (*chunk)[kTileRows][kStepBytes], const int8_t* xq) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  __m256i sum16 = _mm256_setzero_si256();
  for (int k = 0; k < kQK / 2 / kStepBytes; ++k) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk[k]));
    const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(lo, Broadcast4(xq + kStepBytes * k)));
    sum16 = _mm256_add_epi16(sum16, _mm256_maddubs_epi16(hi, Broadcast4(xq + 16 + kStepBytes * k)));
  }
  return _mm256_madd_epi16(sum16, _mm256_set1_epi16(1));
}

template <int G>
void DotTileI8(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const BlockI8<G>*>(tile);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0; g < n / G; ++g) {
    const __m256 d = LoadHalf8(b[g].d);
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act& xb = x[g * (G / kQK) + c];
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ChunkSumsI8(b[g].qs[c], xb.qs)),
                            _mm256_mul_ps(d, _mm256_set1_ps(xb.d)), acc);
    }
  }
  _mm256_storeu_ps(out, acc);
}

void DotTileI8C(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* h = static_cast<const TileI8CHeader*>(tile);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // even, odd chunks
  int64_t k = 0;
  const int64_t nb = n / kQK;
  auto chunk = [&](int64_t i) { return _mm256_cvtepi32_ps(ChunkSumsI8(b[i].qs, x[i].qs)); };
  for (; k + 2 <= nb; k += 2) {
    acc0 = _mm256_fmadd_ps(chunk(k), _mm256_set1_ps(x[k].d), acc0);
    acc1 = _mm256_fmadd_ps(chunk(k + 1), _mm256_set1_ps(x[k + 1].d), acc1);
  }
  if (k < nb) acc0 = _mm256_fmadd_ps(chunk(k), _mm256_set1_ps(x[k].d), acc0);
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_add_ps(acc0, acc1), _mm256_loadu_ps(h->d)));
}

template <int G, bool kAsym>
void DotTileI4(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  using Block = std::conditional_t<kAsym, BlockI4A<G>, BlockI4S<G>>;
  const auto* b = static_cast<const Block*>(tile);
  __m256 acc = _mm256_setzero_ps();
  __m256 corr = _mm256_setzero_ps();  // sum over groups of (d or m) * sum(x)
  for (int64_t g = 0; g < n / G; ++g) {
    const __m256 d = LoadHalf8(b[g].d);
    float xs = 0;
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act& xb = x[g * (G / kQK) + c];
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ChunkSumsI4(b[g].qs[c], xb.qs)),
                            _mm256_mul_ps(d, _mm256_set1_ps(xb.d)), acc);
      xs += xb.s;
    }
    if constexpr (kAsym) {
      corr = _mm256_fmadd_ps(LoadHalf8(b[g].m), _mm256_set1_ps(xs), corr);
    } else {
      corr = _mm256_fmadd_ps(d, _mm256_set1_ps(xs), corr);
    }
  }
  if constexpr (kAsym) {
    _mm256_storeu_ps(out, _mm256_add_ps(acc, corr));
  } else {
    _mm256_storeu_ps(out, _mm256_fnmadd_ps(_mm256_set1_ps(8.0f), corr, acc));  // q - 8
  }
}

}  // namespace

const KernelTraits* GetAvx2FrugalTraits(TensorType type) {
  // In type id order, kI8_C (1024) .. kI4A_G128 (1033).
  static const KernelTraits kTable[] = {
      {.dequantize_tile = DequantTileI8C, .dot_q8_tile = DotTileI8C},
      {.dequantize_tile = DequantTileI8<32>, .dot_q8_tile = DotTileI8<32>},
      {.dequantize_tile = DequantTileI8<64>, .dot_q8_tile = DotTileI8<64>},
      {.dequantize_tile = DequantTileI8<128>, .dot_q8_tile = DotTileI8<128>},
      {.dequantize_tile = DequantTileI4<32, false>, .dot_q8_tile = DotTileI4<32, false>},
      {.dequantize_tile = DequantTileI4<64, false>, .dot_q8_tile = DotTileI4<64, false>},
      {.dequantize_tile = DequantTileI4<128, false>, .dot_q8_tile = DotTileI4<128, false>},
      {.dequantize_tile = DequantTileI4<32, true>, .dot_q8_tile = DotTileI4<32, true>},
      {.dequantize_tile = DequantTileI4<64, true>, .dot_q8_tile = DotTileI4<64, true>},
      {.dequantize_tile = DequantTileI4<128, true>, .dot_q8_tile = DotTileI4<128, true>},
  };
  const uint32_t i = static_cast<uint32_t>(type) - static_cast<uint32_t>(TensorType::kI8_C);
  return i < std::size(kTable) ? &kTable[i] : nullptr;
}

}  // namespace frugal::avx2
#endif  // __x86_64__
