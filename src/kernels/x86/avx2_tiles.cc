// AVX2 kernels for Frugal's tiled formats (docs/formats.md). Compiled with -mavx2 -mfma -mf16c
// and reached only through dispatch. Dequantization reproduces the scalar oracle
// (kernels/ref/frugal_types.cc) bit for bit; the dot products sum in another order and are held
// to the error budgets of tests/unit/kernels_simd_test.cc.
//
// Dot products: a tile stores, for each 32-input chunk, the 8 rows one after the other, so one
// activation chunk is loaded once and multiplied into all 8 rows; the 8 per-row integer sums
// are gathered into one vector with horizontal adds, scaled and accumulated in float, and
// never reduced across lanes until the end.
#if defined(__x86_64__)
#include <immintrin.h>

#include <iterator>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal::avx2 {
namespace {

constexpr int kR = kTileRows;

inline __m256 LoadHalf8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

inline void StoreI8x32(const int8_t* q, __m256 d, float* out) {
  for (int p = 0; p < 4; ++p) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * p));
    _mm256_storeu_ps(out + 8 * p, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d));
  }
}

// 16 bytes of nibbles -> 32 values in element order (low nibbles, then high), as float,
// each as (q + bias) * d + m with the oracle's operation order.
template <bool kAsym>
inline void StoreI4x32(const uint8_t* q, __m256 d, __m256 m, float* out) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
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
      for (int c = 0; c < G / kQK; ++c) StoreI8x32(b[g].qs[c][r], d, dst + r * n + g * G + c * kQK);
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
        StoreI4x32<kAsym>(b[g].qs[c][r], d, m, dst + r * n + g * G + c * kQK);
      }
    }
  }
}

void DequantTileI8C(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const TileI8CHeader*>(src);
  const auto* b = reinterpret_cast<const BlockI8C*>(h + 1);
  for (int64_t k = 0; k < n / kQK; ++k) {
    for (int r = 0; r < kR; ++r) StoreI8x32(b[k].qs[r], _mm256_set1_ps(h->d[r]), dst + r * n + k * kQK);
  }
}

// Integer sums of 8 rows x one 32-input activation chunk, rows in natural order.
inline __m256i ChunkSumsI8(const int8_t* q, __m256i x) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i s[kR];
  for (int r = 0; r < kR; ++r) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kQK * r));
    // |w| (unsigned) times x with w's sign; |pair sums| <= 2 * 127 * 127 fits int16.
    s[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones);
  }
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
  // a = [r0..r3 | r0..r3] and b = [r4..r7 | r4..r7], each half a partial sum.
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// Integer sums of 8 rows of nibbles x one activation chunk, rows in the order
// r0 r2 r4 r6 r1 r3 r5 r7 (kI4Order).
inline __m256i ChunkSumsI4(const uint8_t* q, const int8_t* xq) {
  const __m256i mask = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i xlo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xq)));
  const __m256i xhi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xq + 16)));
  __m256i s[kR / 2];
  for (int p = 0; p < kR / 2; ++p) {  // rows 2p (low lane) and 2p + 1 (high lane)
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * p));
    const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    // Each int16 is at most 2 * 2 * 15 * 127: no saturation.
    const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
    s[p] = _mm256_madd_epi16(p16, ones);
  }
  return _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
}

template <int G>
void DotTileI8(const void* tile, const BlockQ8Act* x, int64_t n, float* out) {
  const auto* b = static_cast<const BlockI8<G>*>(tile);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t g = 0; g < n / G; ++g) {
    const __m256 d = LoadHalf8(b[g].d);
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act& xb = x[g * (G / kQK) + c];
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ChunkSumsI8(b[g].qs[c][0], xv)),
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
  auto chunk = [&](int64_t i) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    return _mm256_cvtepi32_ps(ChunkSumsI8(b[i].qs[0], xv));
  };
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
  const __m256i to_i4_order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i from_i4_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256 acc = _mm256_setzero_ps();   // kI4Order
  __m256 corr = _mm256_setzero_ps();  // natural order: sum over groups of (d or m) * sum(x)
  for (int64_t g = 0; g < n / G; ++g) {
    const __m256 d = LoadHalf8(b[g].d);
    const __m256 dp = _mm256_permutevar8x32_ps(d, to_i4_order);
    float xs = 0;
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act& xb = x[g * (G / kQK) + c];
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ChunkSumsI4(b[g].qs[c][0], xb.qs)),
                            _mm256_mul_ps(dp, _mm256_set1_ps(xb.d)), acc);
      xs += xb.s;
    }
    if constexpr (kAsym) {
      corr = _mm256_fmadd_ps(LoadHalf8(b[g].m), _mm256_set1_ps(xs), corr);
    } else {
      corr = _mm256_fmadd_ps(d, _mm256_set1_ps(xs), corr);
    }
  }
  const __m256 sums = _mm256_permutevar8x32_ps(acc, from_i4_order);
  if constexpr (kAsym) {
    _mm256_storeu_ps(out, _mm256_add_ps(sums, corr));
  } else {
    _mm256_storeu_ps(out, _mm256_fnmadd_ps(_mm256_set1_ps(8.0f), corr, sums));  // q - 8
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
