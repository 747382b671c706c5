// AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt) and reached
// only through dispatch when the CPU supports them; compiled again for AVX-512 BW and VNNI
// through avx512bw.cc and avx512vnni.cc (x86_variant.h: with VNNI the integer dot products use
// VPDPBUSD, with the same results).
//
// Dequantization reproduces the scalar oracle bit for bit (same operations, no fused
// multiply-add), so a model's weights mean the same thing at every level. Dot products use FMA
// and a different summation order than the oracle; their error budget is tested in
// tests/unit/kernels_simd_test.cc. Dot and Dot4 share one template, so a row's result does not
// depend on how many rows were computed together (batch composition never changes outputs).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/x86_variant.h"

namespace frugal {
const KernelTraits* GetScalarKernelTraits(TensorType type);  // kernels/ref/dequantize.cc
}

namespace frugal::FRUGAL_X86_NS {
namespace {

inline float Half(uint16_t h) { return _cvtsh_ss(h); }

inline float HorizontalSum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// Eight unsigned bytes -> eight floats.
inline __m256 U8x8ToFloat(__m128i bytes) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)); }

// out[r] = sum_i w[i] * x[r * ldx + i] for r < R, with per-row arithmetic independent of R.
template <int R>
inline void DotRows(const float* w, const float* x, int64_t ldx, int64_t n, float* out) {
  __m256 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + 8);
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * ldx + i), acc0[r]);
      acc1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * ldx + i + 8), acc1[r]);
    }
  }
  if (i + 8 <= n) {
    const __m256 w0 = _mm256_loadu_ps(w + i);
    for (int r = 0; r < R; ++r) acc0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * ldx + i), acc0[r]);
    i += 8;
  }
  for (int r = 0; r < R; ++r) {
    float s = HorizontalSum(_mm256_add_ps(acc0[r], acc1[r]));
    for (int64_t j = i; j < n; ++j) s += w[j] * x[r * ldx + j];
    out[r] = s;
  }
}

// The 6-bit (scale, min) pairs of Q4_K sub-blocks 2j and 2j + 1 (see the scalar oracle).
inline void Q4KScaleMinPair(const uint8_t* s, int j, uint8_t* sc, uint8_t* mn) {
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * j + h;
    if (k < 4) {
      sc[h] = s[k] & 63;
      mn[h] = s[k + 4] & 63;
    } else {
      sc[h] = static_cast<uint8_t>((s[k + 4] & 0x0f) | ((s[k - 4] >> 6) << 4));
      mn[h] = static_cast<uint8_t>((s[k + 4] >> 4) | ((s[k] >> 6) << 4));
    }
  }
}

inline __m256i Q4Bytes(const uint8_t* qs) {  // 32 nibbles as bytes, in element order
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

// Sum of u8 x s8 products of 32 bytes, as 8 int32 lanes converted to float.
// Every caller passes u <= 128 (nibbles, or |w| of an int8 w), so |pair sums| <= 2 * 128 * 127
// fit int16 (x86_variant.h).
inline __m256 DotU8S8(__m256i u, __m256i s) {
  return _mm256_cvtepi32_ps(AddDotU8S8(_mm256_setzero_si256(), u, s));
}

}  // namespace

float DotQ8Q4_0(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(row);
  const int64_t nb = n / kQK;
  auto block = [&](int64_t i) {
    return DotU8S8(Q4Bytes(b[i].qs), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs)));
  };
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // even, odd blocks
  float corr = 0;  // the -8 offset: -8 * d_w * d_x * sum(q_x)
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const float dw0 = Half(b[i].d), dw1 = Half(b[i + 1].d);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(dw0 * x[i].d), block(i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(dw1 * x[i + 1].d), block(i + 1), acc1);
    corr += dw0 * x[i].s;
    corr += dw1 * x[i + 1].s;
  }
  if (i < nb) {
    const float dw = Half(b[i].d);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(dw * x[i].d), block(i), acc0);
    corr += dw * x[i].s;
  }
  return HorizontalSum(_mm256_add_ps(acc0, acc1)) - 8.0f * corr;
}

float DotQ8Q4_1(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(row);
  const int64_t nb = n / kQK;
  // Two independent accumulators (even, odd blocks) so consecutive FMAs do not wait on each
  // other; the summation order is fixed, so results stay deterministic and batch-invariant.
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  float summ = 0;
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    const __m256i y1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i + 1].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i].d) * x[i].d), DotU8S8(Q4Bytes(b[i].qs), y0), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i + 1].d) * x[i + 1].d), DotU8S8(Q4Bytes(b[i + 1].qs), y1), acc1);
    summ += Half(b[i].m) * x[i].s;
    summ += Half(b[i + 1].m) * x[i + 1].s;
  }
  if (i < nb) {
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i].d) * x[i].d), DotU8S8(Q4Bytes(b[i].qs), y), acc0);
    summ += Half(b[i].m) * x[i].s;
  }
  return HorizontalSum(_mm256_add_ps(acc0, acc1)) + summ;
}

float DotQ8Q8_0(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(row);
  const int64_t nb = n / kQK;
  // |w| as unsigned times y with w's sign: the u8 x s8 instruction on signed inputs.
  auto block = [&](int64_t i) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    return DotU8S8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(y, w));
  };
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // even, odd blocks
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i].d) * x[i].d), block(i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i + 1].d) * x[i + 1].d), block(i + 1), acc1);
  }
  if (i < nb) acc0 = _mm256_fmadd_ps(_mm256_set1_ps(Half(b[i].d) * x[i].d), block(i), acc0);
  return HorizontalSum(_mm256_add_ps(acc0, acc1));
}

float DotQ8Q4_K(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(row);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();  // low, high nibble sub-blocks
  float summ = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Half(b[i].d), dmin = Half(b[i].dmin);
    const uint8_t* s = b[i].scales;
    const BlockQ8Act* xb = x + i * (kQKK / kQK);
    for (int j = 0; j < 4; ++j) {
      uint8_t sc[2], mn[2];
      Q4KScaleMinPair(s, j, sc, mn);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 32 * j));
      const BlockQ8Act& xa = xb[2 * j];
      const BlockQ8Act& xh = xb[2 * j + 1];
      const __m256i ya = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xa.qs));
      const __m256i yh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xh.qs));
      acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d * static_cast<float>(sc[0]) * xa.d),
                             DotU8S8(_mm256_and_si256(q, mask), ya), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d * static_cast<float>(sc[1]) * xh.d),
                             DotU8S8(_mm256_and_si256(_mm256_srli_epi16(q, 4), mask), yh), acc1);
      summ += dmin * static_cast<float>(mn[0]) * xa.s + dmin * static_cast<float>(mn[1]) * xh.s;
    }
  }
  return HorizontalSum(_mm256_add_ps(acc0, acc1)) - summ;
}

float DotQ8Q6_K(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(row);
  const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Half(b[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh + 32 * half));
      // The four 32-element blocks of this half: low 4 bits from ql, high 2 from qh.
      const __m256i lo[4] = {_mm256_and_si256(l0, low4), _mm256_and_si256(l1, low4),
                             _mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(l1, 4), low4)};
      for (int k = 0; k < 4; ++k) {
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(h, 2 * k), two);
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo[k], _mm256_slli_epi16(hi, 4)), bias);  // [-32, 31]
        const BlockQ8Act& xa = x[i * (kQKK / kQK) + half * 4 + k];
        const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xa.qs));
        // lanes 0-3: elements 0..15 (scale sc[2k]); lanes 4-7: elements 16..31 (sc[2k + 1]).
        const __m256i s32 = AddDotU8S8(_mm256_setzero_si256(), _mm256_sign_epi8(q, q), _mm256_sign_epi8(y, q));
        const float dd = d * xa.d;
        const __m256 scale = _mm256_setr_m128(_mm_set1_ps(dd * static_cast<float>(sc[2 * k])),
                                              _mm_set1_ps(dd * static_cast<float>(sc[2 * k + 1])));
        if (k % 2 == 0) {
          acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), scale, acc0);
        } else {
          acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), scale, acc1);
        }
      }
    }
  }
  return HorizontalSum(_mm256_add_ps(acc0, acc1));
}

float DotF32(const float* a, const float* b, int64_t n) {
  float out;
  DotRows<1>(a, b, 0, n, &out);
  return out;
}

void DotF32x4(const float* w, const float* x, int64_t ldx, int64_t n, float* out) {
  DotRows<4>(w, x, ldx, n, out);
}

void DequantF16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
  for (; i < n; ++i) dst[i] = Half(s[i]);
}

void DequantBF16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
  }
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(s[i]) << 16;
    std::memcpy(dst + i, &bits, 4);
  }
}

void DequantQ8_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const __m256 d = _mm256_set1_ps(Half(b[i].d));
    for (int g = 0; g < 4; ++g) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[i].qs + 8 * g));
      _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
  }
}

void DequantQ4_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m256i eight = _mm256_set1_epi32(8);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const __m256 d = _mm256_set1_ps(Half(b[i].d));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_and_si128(q, mask), hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[g]), eight);
      _mm256_storeu_ps(dst + 8 * g, _mm256_mul_ps(_mm256_cvtepi32_ps(v), d));
    }
  }
}

void DequantQ4_1(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  const __m128i mask = _mm_set1_epi8(0x0f);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const __m256 d = _mm256_set1_ps(Half(b[i].d)), m = _mm256_set1_ps(Half(b[i].m));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_and_si128(q, mask), hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int g = 0; g < 4; ++g) {
      // mul then add, as the oracle does: no fused multiply-add.
      _mm256_storeu_ps(dst + 8 * g, _mm256_add_ps(_mm256_mul_ps(U8x8ToFloat(parts[g]), d), m));
    }
  }
}

void DequantQ4_K(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  const __m128i mask = _mm_set1_epi8(0x0f);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Half(b[i].d), dmin = Half(b[i].dmin);
    const uint8_t* q = b[i].qs;
    const uint8_t* s = b[i].scales;
    for (int j = 0; j < 4; ++j) {  // 64 elements: 32 low nibbles, then 32 high nibbles
      uint8_t sc[2], mn[2];
      Q4KScaleMinPair(s, j, sc, mn);
      const __m256 d1 = _mm256_set1_ps(d * sc[0]), m1 = _mm256_set1_ps(dmin * mn[0]);
      const __m256 d2 = _mm256_set1_ps(d * sc[1]), m2 = _mm256_set1_ps(dmin * mn[1]);
      for (int half = 0; half < 2; ++half) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * half));
        const __m128i lo = _mm_and_si128(v, mask), hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
        float* out = dst + 16 * half;
        _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(U8x8ToFloat(lo), d1), m1));
        _mm256_storeu_ps(out + 8, _mm256_sub_ps(_mm256_mul_ps(U8x8ToFloat(_mm_srli_si128(lo, 8)), d1), m1));
        _mm256_storeu_ps(out + 32, _mm256_sub_ps(_mm256_mul_ps(U8x8ToFloat(hi), d2), m2));
        _mm256_storeu_ps(out + 40, _mm256_sub_ps(_mm256_mul_ps(U8x8ToFloat(_mm_srli_si128(hi, 8)), d2), m2));
      }
      dst += 64;
      q += 32;
    }
  }
}

void DequantQ6_K(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  const __m256i low4 = _mm256_set1_epi32(0x0f), two = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Half(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; l += 8) {
        const int is = l / 16;
        const __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ql + l)));
        const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ql + l + 32)));
        const __m256i h = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qh + l)));
        const __m256i q1 = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(a, low4), _mm256_slli_epi32(_mm256_and_si256(h, two), 4)), bias);
        const __m256i q2 = _mm256_sub_epi32(_mm256_or_si256(_mm256_and_si256(c, low4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), two), 4)), bias);
        const __m256i q3 = _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(a, 4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), two), 4)), bias);
        const __m256i q4 = _mm256_sub_epi32(_mm256_or_si256(_mm256_srli_epi32(c, 4), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 6), two), 4)), bias);
        // (d * scale) * q, in the oracle's order.
        _mm256_storeu_ps(dst + l, _mm256_mul_ps(_mm256_set1_ps(d * sc[is]), _mm256_cvtepi32_ps(q1)));
        _mm256_storeu_ps(dst + l + 32, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 2]), _mm256_cvtepi32_ps(q2)));
        _mm256_storeu_ps(dst + l + 64, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 4]), _mm256_cvtepi32_ps(q3)));
        _mm256_storeu_ps(dst + l + 96, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 6]), _mm256_cvtepi32_ps(q4)));
      }
      dst += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

const KernelTraits* GetTraits(TensorType type) {
  if (const KernelTraits* t = GetFrugalTraits(type)) return t;
  static const KernelTraits kF16{DequantF16};
  static const KernelTraits kBF16{DequantBF16};
  static const KernelTraits kQ4_0{DequantQ4_0, DotQ8Q4_0};
  static const KernelTraits kQ4_1{DequantQ4_1, DotQ8Q4_1};
  static const KernelTraits kQ8_0{DequantQ8_0, DotQ8Q8_0};
  static const KernelTraits kQ4_K{DequantQ4_K, DotQ8Q4_K};
  static const KernelTraits kQ6_K{DequantQ6_K, DotQ8Q6_K};
  switch (type) {
    case TensorType::kF32: return GetScalarKernelTraits(type);  // nothing to convert
    // No SIMD kernels yet: the scalar dequantizers, multiversioned, are compiled for AVX2 too.
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ5_K: return GetScalarKernelTraits(type);
    case TensorType::kF16: return &kF16;
    case TensorType::kBF16: return &kBF16;
    case TensorType::kQ4_0: return &kQ4_0;
    case TensorType::kQ4_1: return &kQ4_1;
    case TensorType::kQ8_0: return &kQ8_0;
    case TensorType::kQ4_K: return &kQ4_K;
    case TensorType::kQ6_K: return &kQ6_K;
    default: return nullptr;
  }
}

const F32Kernels& GetF32Kernels() {
  static const F32Kernels k{DotF32, DotF32x4};
  return k;
}

}  // namespace frugal::FRUGAL_X86_NS
#endif  // __x86_64__
