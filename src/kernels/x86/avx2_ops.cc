// AVX2 + FMA versions of the element-wise ops and of the activation quantizer. Compiled with
// -mavx2 -mfma -mf16c and reached only through dispatch (kernels/ref/ops.cc).
//
// Exactness against the scalar reference (tests/unit/ops_simd_test.cc):
//  - QuantizeRowQ8Act, Axpy: bit-identical (same operations, no FMA);
//  - RmsNorm: the same float formula with the sum of squares in double in another order;
//  - Softmax, SwiGlu: exp by a degree-5 polynomial after range reduction (the Cephes expf
//    scheme), within a few float ulps;
//  - Gelu: erf by a rational approximation, within 1e-6 |x| of the exact GELU;
//  - Fp32ToFp16Row, Fp16ToFp32Row: bit-identical (F16C; common/fp16.h matches it).
#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal::avx2 {
namespace {

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline double HorizontalSum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

// e^x for 8 floats: x = n ln2 + r, |r| <= ln2 / 2, e^r by a polynomial, times 2^n. x is
// clamped to [-87.33, 88.0] so that 2^n stays a normal float (n in [-126, 127]).
inline __m256 Exp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3365f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2, with ln2 split into a short high part and a correction.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

}  // namespace

void QuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    __m256 v[4];
    for (int p = 0; p < 4; ++p) v[p] = _mm256_loadu_ps(x + 8 * p);
    const __m256 m =
        _mm256_max_ps(_mm256_max_ps(Abs(v[0]), Abs(v[1])), _mm256_max_ps(Abs(v[2]), Abs(v[3])));
    const float amax = HorizontalMax(m);
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int p = 0; p < 4; ++p) {
      // x * id rounded to nearest even, as std::nearbyint in the default rounding mode.
      q[p] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[p], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    // The sums of inputs 0..15 and 16..31: h = [s0, s1, s0, s1].
    const __m256i h0 = _mm256_add_epi32(q[0], q[1]), h1 = _mm256_add_epi32(q[2], q[3]);
    __m128i h =
        _mm_hadd_epi32(_mm_add_epi32(_mm256_castsi256_si128(h0), _mm256_extracti128_si256(h0, 1)),
                       _mm_add_epi32(_mm256_castsi256_si128(h1), _mm256_extracti128_si256(h1, 1)));
    h = _mm_hadd_epi32(h, h);
    const int32_t half0 = _mm_cvtsi128_si32(h), half1 = _mm_extract_epi32(h, 1);
    // int32 -> int8 with saturating packs, then undo the lane interleave of the 256-bit packs.
    const __m256i a = _mm256_packs_epi32(q[0], q[1]);  // [q0 lo, q1 lo | q0 hi, q1 hi] as int16
    const __m256i b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i bytes = _mm256_packs_epi16(a, b);  // int8, lanes interleaved by 4-byte groups
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i].qs),
                        _mm256_permutevar8x32_epi32(bytes, order));
    out[i].d = d;
    out[i].s = d * static_cast<float>(half0 + half1);
    out[i].half_sums[0] = static_cast<int16_t>(half0);
    out[i].half_sums[1] = static_cast<int16_t>(half1);
  }
}

void Axpy(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(
        y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                  hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s0 = _mm256_fmadd_pd(lo, lo, s0);
    s1 = _mm256_fmadd_pd(hi, hi, s1);
  }
  double ss = HorizontalSum(_mm256_add_pd(s0, s1));
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  const __m256 vs = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
                                          _mm256_loadu_ps(weight + i)));
  }
  for (; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void SoftmaxInPlace(float* x, int64_t n) {
  __m256 vm = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
  float mx = HorizontalMax(vm);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    _mm256_storeu_ps(x + i, e);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double sum = HorizontalSum(_mm256_add_pd(s0, s1));
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  const __m256 vinv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
  for (; i < n; ++i) x[i] *= inv;
}

void SwiGlu(const float* g, const float* u, float* y, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vg = _mm256_loadu_ps(g + i);
    const __m256 silu = _mm256_div_ps(vg, _mm256_add_ps(one, Exp(_mm256_sub_ps(zero, vg))));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// GELU(x) = x/2 (1 + erf(x / sqrt 2)), with erfc(z) for z = |x| / sqrt 2 by Abramowitz &
// Stegun 7.1.26 (|error| <= 1.5e-7): erfc(z) = t P(t) e^(-z^2), t = 1 / (1 + p z). Then
// 1 + erf = 2 - erfc for x >= 0 and erfc otherwise, so the negative tail keeps its precision.
void Gelu(float* x, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 z = _mm256_mul_ps(Abs(v), _mm256_set1_ps(0.70710678118654752f));
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), z, one));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    const __m256 erfc = _mm256_mul_ps(_mm256_mul_ps(p, t),
                                      Exp(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), z), z)));
    const __m256 nonneg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
    const __m256 s = _mm256_blendv_ps(erfc, _mm256_sub_ps(two, erfc), nonneg);
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), s));
  }
  for (; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * static_cast<float>(M_SQRT1_2)));
}

void Fp32ToFp16Row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) {
    y[i] = static_cast<uint16_t>(
        _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT), 0));
  }
}

void Fp16ToFp32Row(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(x[i]))));
}

namespace {

// Eight keys or values as floats: loaded, or loaded as halves and widened (exactly), so the
// arithmetic after the load is the same for both element types.
inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 Load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// out[0 .. 8C) = sum over positions p in [pa, pb) of w[p] * v_p[e .. e + 8C), in order of p, in
// registers; with `resume`, added to out's values (the sum of the positions before pa) as if the
// loop had not stopped: a sum split into spans equals the whole one bit for bit.
template <int C, typename T>
inline void WeightedSumSpan(const float* w, const KvBlocks& kv, int64_t e, int64_t pa, int64_t pb,
                            bool resume, float* out) {
  __m256 acc[C];
  for (int c = 0; c < C; ++c) acc[c] = resume ? _mm256_loadu_ps(out + 8 * c) : _mm256_setzero_ps();
  for (int64_t p = pa; p < pb;) {
    const int64_t in = p % kv.block;
    const int64_t m = std::min(kv.block - in, pb - p);
    const T* vb = static_cast<const T*>(kv.v[p / kv.block]) + kv.offset + e + in * kv.stride;
    for (int64_t j = 0; j < m; ++j) {
      const __m256 wp = _mm256_set1_ps(w[p + j]);
      const T* vp = vb + j * kv.stride;
      for (int c = 0; c < C; ++c) acc[c] = _mm256_fmadd_ps(wp, Load8(vp + 8 * c), acc[c]);
    }
    p += m;
  }
  for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

// scale * q . k_p for the m positions of one block starting at kb.
template <typename T>
inline void BlockScores(const float* q, const T* kb, int64_t stride, int64_t m, int64_t hd,
                        float scale, float* scores) {
  // Four positions at a time: four dot products reduced together.
  int64_t p = 0;
  for (; p + 4 <= m; p += 4) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const T* kp = kb + p * stride;
    for (int64_t e = 0; e < hd; e += 8) {
      const __m256 qe = _mm256_loadu_ps(q + e);
      a0 = _mm256_fmadd_ps(qe, Load8(kp + e), a0);
      a1 = _mm256_fmadd_ps(qe, Load8(kp + stride + e), a1);
      a2 = _mm256_fmadd_ps(qe, Load8(kp + 2 * stride + e), a2);
      a3 = _mm256_fmadd_ps(qe, Load8(kp + 3 * stride + e), a3);
    }
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    _mm_storeu_ps(scores + p, _mm_mul_ps(s4, _mm_set1_ps(scale)));
  }
  for (; p < m; ++p) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t e = 0; e < hd; e += 8)
      a = _mm256_fmadd_ps(_mm256_loadu_ps(q + e), Load8(kb + p * stride + e), a);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    scores[p] = _mm_cvtss_f32(s) * scale;
  }
}

// Positions whose keys (or values) one pass over the heads reads: 32 positions of a 128-float head
// are 16 KB, so the second and later heads of a group find them in L1 where each head alone would
// stream them again from L2 or L3 (a multiple of 4, so that BlockScores' groups of four stay
// where one head's pass over the whole block puts them).
constexpr int64_t kSpan = 32;

// AttentionGroup for keys and values of element type T (float or half).
template <typename T>
void AttentionGroupOf(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                      float scale, float* scores, float* out) {
  for (int64_t p0 = 0; p0 < n; p0 += kv.block) {
    const T* kb = static_cast<const T*>(kv.k[p0 / kv.block]) + kv.offset;
    const int64_t m = std::min(kv.block, n - p0);
    for (int64_t s = 0; s < m; s += kSpan) {
      for (int64_t h = 0; h < heads; ++h) {
        BlockScores(q + h * hd, kb + s * kv.stride, kv.stride, std::min(kSpan, m - s), hd, scale,
                    scores + h * n + p0 + s);
      }
    }
  }
  for (int64_t h = 0; h < heads; ++h) SoftmaxInPlace(scores + h * n, n);
  for (int64_t pa = 0; pa < n; pa += kSpan) {
    const int64_t pb = std::min(n, pa + kSpan);
    for (int64_t h = 0; h < heads; ++h) {
      int64_t e = 0;
      for (; e + 64 <= hd; e += 64)
        WeightedSumSpan<8, T>(scores + h * n, kv, e, pa, pb, pa > 0, out + h * hd + e);
      for (; e < hd; e += 8)
        WeightedSumSpan<1, T>(scores + h * n, kv, e, pa, pb, pa > 0, out + h * hd + e);
    }
  }
}

}  // namespace

void AttentionGroup(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                    float scale, float* scores, float* out) {
  if (hd % 8 != 0) {
    for (int64_t h = 0; h < heads; ++h)
      RefAttentionHead(q + h * hd, kv, n, hd, scale, scores + h * n, out + h * hd);
    return;
  }
  if (kv.type == KvType::kF16) {
    AttentionGroupOf<uint16_t>(q, heads, kv, n, hd, scale, scores, out);
  } else {
    AttentionGroupOf<float>(q, heads, kv, n, hd, scale, scores, out);
  }
}

void AttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                   float* scores, float* out) {
  avx2::AttentionGroup(q, 1, kv, n, hd, scale, scores, out);
}

}  // namespace frugal::avx2
#endif  // __x86_64__
