// 512-bit dot products of Frugal's tiled formats, two tiles (16 rows) at a time, for the AVX-512
// levels (x86_variant.h). Included by tile_kernels.inc inside its anonymous namespace, after the
// 256-bit kernels, when FRUGAL_X86_AVX512 is defined; not a header of its own.
//
// A 512-bit register holds one 32-byte step of each of two adjacent tiles: lanes 0-7 the first
// tile's 8 rows, lanes 8-15 the second's. Both halves meet the same 4 activations, so an
// activation broadcast is one load to all 16 lanes, and every instruction does the work of two
// 256-bit ones. Each lane takes the same operations as its lane in the 256-bit kernel:
//  - the integer sum of a chunk is the same integer (any order of exact int32 adds);
//  - the float scaling and accumulation are the same operations in the same order;
// so a pair equals two dot_q8_tiles calls bit for bit (FrugalFormatsTest.TilePairsEqual...).
//
// INT8 weights have no 512-bit VPSIGNB to move their sign onto the activations:
//  - with VNNI the activations are made unsigned, x + 128, and 128 * sum(w) (one VPDPBUSD per
//    step for all activation rows) is taken off again, exactly in int32;
//  - without VNNI (VPMADDUBSW would saturate on 255 * 127 pairs) |w| meets x negated where
//    w < 0, a masked subtract: the 256-bit kernel's integers.
#if !defined(FRUGAL_X86_AVX512)
#error "avx512_pairs.h is for the AVX-512 variants of tile_kernels.inc"
#endif

// GCC 12 warns that the pass-through register of the unmasked 512-bit intrinsics
// (_mm512_undefined_*) may be used uninitialized: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

constexpr int kPairRows = 2 * kTileRows;

// One 32-byte step of each tile: the first in the low half.
inline __m512i LoadStepPair(const void* a, const void* b) {
  const __m256i lo = _mm256_loadu_si256(static_cast<const __m256i*>(a));
  return _mm512_inserti64x4(_mm512_zextsi256_si512(lo),
                            _mm256_loadu_si256(static_cast<const __m256i*>(b)), 1);
}
inline __m512 LoadHalfPair(const uint16_t* a, const uint16_t* b) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(
      _mm256_castsi128_si256(lo), _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1));
}
inline __m512 LoadFloatPair(const float* a, const float* b) {
  return _mm512_castsi512_ps(LoadStepPair(a, b));
}

inline __m512i Broadcast4x16(const void* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return _mm512_set1_epi32(v);
}

inline __m512i AddDotU8S8x16(__m512i acc, __m512i u, __m512i s) {
#if defined(FRUGAL_X86_VNNI)
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}

using ChunkI8 = const int8_t (*)[kTileRows][kStepBytes];
using ChunkI4 = const uint8_t (*)[kTileRows][kStepBytes];

// Integer sums of the 16 rows of an INT8 chunk pair (a, b) with R activation blocks.
template <int R>
inline void PairChunkSumsI8(ChunkI8 a, ChunkI8 b, const int8_t* const* xq, __m512i* sum) {
  constexpr int kSteps = kQK / kStepBytes;
  __m512i even[R], odd[R];  // two chains per row, as ChunkSumsI8
  for (int i = 0; i < R; ++i) even[i] = odd[i] = _mm512_setzero_si512();
#if defined(FRUGAL_X86_VNNI)
  alignas(32) uint8_t xu[R][kQK];  // x + 128
  for (int i = 0; i < R; ++i) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i]));
    _mm256_store_si256(reinterpret_cast<__m256i*>(xu[i]),
                       _mm256_xor_si256(v, _mm256_set1_epi8(-128)));
  }
  const __m512i k128 = _mm512_set1_epi8(-128);  // 128 as unsigned bytes
  __m512i off_even = _mm512_setzero_si512(), off_odd = _mm512_setzero_si512();  // 128 * sum(w)
  for (int k = 0; k < kSteps; ++k) {
    const __m512i w = LoadStepPair(a[k], b[k]);
    if (k % 2 == 0) {
      off_even = _mm512_dpbusd_epi32(off_even, k128, w);
    } else {
      off_odd = _mm512_dpbusd_epi32(off_odd, k128, w);
    }
    for (int i = 0; i < R; ++i) {
      const __m512i x = Broadcast4x16(xu[i] + kStepBytes * k);
      if (k % 2 == 0) {
        even[i] = _mm512_dpbusd_epi32(even[i], x, w);
      } else {
        odd[i] = _mm512_dpbusd_epi32(odd[i], x, w);
      }
    }
  }
  const __m512i off = _mm512_add_epi32(off_even, off_odd);
  for (int i = 0; i < R; ++i) sum[i] = _mm512_sub_epi32(_mm512_add_epi32(even[i], odd[i]), off);
#else
  const __m512i zero = _mm512_setzero_si512();
  for (int k = 0; k < kSteps; ++k) {
    const __m512i w = LoadStepPair(a[k], b[k]);
    const __m512i aw = _mm512_abs_epi8(w);
    const __mmask64 neg = _mm512_movepi8_mask(w);
    for (int i = 0; i < R; ++i) {
      const __m512i x = Broadcast4x16(xq[i] + kStepBytes * k);
      const __m512i sx = _mm512_mask_sub_epi8(x, neg, zero, x);  // x with w's sign
      if (k % 2 == 0) {
        even[i] = AddDotU8S8x16(even[i], aw, sx);
      } else {
        odd[i] = AddDotU8S8x16(odd[i], aw, sx);
      }
    }
  }
  for (int i = 0; i < R; ++i) sum[i] = _mm512_add_epi32(even[i], odd[i]);
#endif
}

// INT4: as ChunkSumsI4 (int16 sums of all four steps without VNNI, widened once).
inline __m512i AddStepI4x16(__m512i acc, __m512i u, __m512i s) {
#if defined(FRUGAL_X86_VNNI)
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi16(acc, _mm512_maddubs_epi16(u, s));
#endif
}
inline __m512i WidenI4x16(__m512i acc) {
#if defined(FRUGAL_X86_VNNI)
  return acc;
#else
  return _mm512_madd_epi16(acc, _mm512_set1_epi16(1));
#endif
}

template <int R>
inline void PairChunkSumsI4(ChunkI4 a, ChunkI4 b, const int8_t* const* xq, __m512i* sum) {
  constexpr int kSteps = kQK / 2 / kStepBytes;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  if constexpr (R == 1) {  // decode: step by step as the weights stream in, two chains
    __m512i acc_lo = _mm512_setzero_si512(), acc_hi = _mm512_setzero_si512();
    for (int k = 0; k < kSteps; ++k) {
      const __m512i v = LoadStepPair(a[k], b[k]);
      const __m512i lo = _mm512_and_si512(v, mask),
                    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
      acc_lo = AddStepI4x16(acc_lo, lo, Broadcast4x16(xq[0] + kStepBytes * k));
      acc_hi = AddStepI4x16(acc_hi, hi, Broadcast4x16(xq[0] + 16 + kStepBytes * k));
    }
    sum[0] = _mm512_add_epi32(WidenI4x16(acc_lo), WidenI4x16(acc_hi));
    return;
  }
  __m512i lo[kSteps], hi[kSteps];
  for (int k = 0; k < kSteps; ++k) {
    const __m512i v = LoadStepPair(a[k], b[k]);
    lo[k] = _mm512_and_si512(v, mask);
    hi[k] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
  }
  for (int i = 0; i < R; ++i) {
    __m512i acc = _mm512_setzero_si512();
    for (int k = 0; k < kSteps; ++k) {
      acc = AddStepI4x16(acc, lo[k], Broadcast4x16(xq[i] + kStepBytes * k));
      acc = AddStepI4x16(acc, hi[k], Broadcast4x16(xq[i] + 16 + kStepBytes * k));
    }
    sum[i] = WidenI4x16(acc);
  }
}

template <class Block>
inline const Block* SecondTile(const void* tile, size_t tile_bytes) {
  return reinterpret_cast<const Block*>(static_cast<const uint8_t*>(tile) + tile_bytes);
}

// Asks for the same block of the next pair (2 * tile_bytes on) while this one is computed: a
// batch spends long enough on each pair that the weights would otherwise arrive late, and
// prefetches spread over the pair keep the memory system busy without a burst. A prefetch never
// faults, so the one past a matrix's last pair is harmless.
template <class Block>
inline void PrefetchNextPair(const Block* a, const Block* b, size_t tile_bytes) {
  const auto* pa = reinterpret_cast<const char*>(a) + 2 * tile_bytes;
  const auto* pb = reinterpret_cast<const char*>(b) + 2 * tile_bytes;
  for (size_t o = 0; o < sizeof(Block); o += 64) {
    _mm_prefetch(pa + o, _MM_HINT_T0);
    _mm_prefetch(pb + o, _MM_HINT_T0);
  }
}

// The pair versions of DotTileI8, DotTileI8C and DotTileI4: out[i * 16 + r].
template <int G, int R>
void DotPairI8(const void* tile, size_t tile_bytes, const BlockQ8Act* x, int64_t ldx, int64_t n,
               float* out) {
  const auto* ba = static_cast<const BlockI8<G>*>(tile);
  const auto* bb = SecondTile<BlockI8<G>>(tile, tile_bytes);
  __m512 acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t g = 0; g < n / G; ++g) {
    PrefetchNextPair(ba + g, bb + g, tile_bytes);
    const __m512 d = LoadHalfPair(ba[g].d, bb[g].d);
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act* xb[R];
      const int8_t* xq[R];
      for (int i = 0; i < R; ++i) xb[i] = x + i * ldx + g * (G / kQK) + c, xq[i] = xb[i]->qs;
      __m512i sum[R];
      PairChunkSumsI8<R>(ba[g].qs[c], bb[g].qs[c], xq, sum);
      for (int i = 0; i < R; ++i) {
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i]),
                                 _mm512_mul_ps(d, _mm512_set1_ps(xb[i]->d)), acc[i]);
      }
    }
  }
  for (int i = 0; i < R; ++i) _mm512_storeu_ps(out + i * kPairRows, acc[i]);
}

template <int R>
void DotPairI8C(const void* tile, size_t tile_bytes, const BlockQ8Act* x, int64_t ldx, int64_t n,
                float* out) {
  const auto* ha = static_cast<const TileI8CHeader*>(tile);
  const auto* hb = SecondTile<TileI8CHeader>(tile, tile_bytes);
  const auto* ba = reinterpret_cast<const BlockI8C*>(ha + 1);
  const auto* bb = reinterpret_cast<const BlockI8C*>(hb + 1);
  __m512 acc0[R], acc1[R];  // even, odd chunks, as DotTileI8C
  for (int i = 0; i < R; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  const int64_t nb = n / kQK;
  auto chunk = [&](int64_t k, __m512* acc) {
    PrefetchNextPair(ba + k, bb + k, tile_bytes);
    const int8_t* xq[R];
    for (int i = 0; i < R; ++i) xq[i] = x[i * ldx + k].qs;
    __m512i sum[R];
    PairChunkSumsI8<R>(ba[k].qs, bb[k].qs, xq, sum);
    for (int i = 0; i < R; ++i)
      acc[i] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i]), _mm512_set1_ps(x[i * ldx + k].d), acc[i]);
  };
  int64_t k = 0;
  for (; k + 2 <= nb; k += 2) {
    chunk(k, acc0);
    chunk(k + 1, acc1);
  }
  if (k < nb) chunk(k, acc0);
  const __m512 d = LoadFloatPair(ha->d, hb->d);
  for (int i = 0; i < R; ++i)
    _mm512_storeu_ps(out + i * kPairRows, _mm512_mul_ps(_mm512_add_ps(acc0[i], acc1[i]), d));
}

template <int G, bool kAsym, int R>
void DotPairI4(const void* tile, size_t tile_bytes, const BlockQ8Act* x, int64_t ldx, int64_t n,
               float* out) {
  using Block = std::conditional_t<kAsym, BlockI4A<G>, BlockI4S<G>>;
  const auto* ba = static_cast<const Block*>(tile);
  const auto* bb = SecondTile<Block>(tile, tile_bytes);
  __m512 acc[R], corr[R];
  for (int i = 0; i < R; ++i) acc[i] = corr[i] = _mm512_setzero_ps();
  for (int64_t g = 0; g < n / G; ++g) {
    PrefetchNextPair(ba + g, bb + g, tile_bytes);
    const __m512 d = LoadHalfPair(ba[g].d, bb[g].d);
    float xs[R] = {};
    for (int c = 0; c < G / kQK; ++c) {
      const BlockQ8Act* xb[R];
      const int8_t* xq[R];
      for (int i = 0; i < R; ++i) xb[i] = x + i * ldx + g * (G / kQK) + c, xq[i] = xb[i]->qs;
      __m512i sum[R];
      PairChunkSumsI4<R>(ba[g].qs[c], bb[g].qs[c], xq, sum);
      for (int i = 0; i < R; ++i) {
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[i]),
                                 _mm512_mul_ps(d, _mm512_set1_ps(xb[i]->d)), acc[i]);
        xs[i] += xb[i]->s;
      }
    }
    for (int i = 0; i < R; ++i) {
      if constexpr (kAsym) {
        corr[i] = _mm512_fmadd_ps(LoadHalfPair(ba[g].m, bb[g].m), _mm512_set1_ps(xs[i]), corr[i]);
      } else {
        corr[i] = _mm512_fmadd_ps(d, _mm512_set1_ps(xs[i]), corr[i]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    if constexpr (kAsym) {
      _mm512_storeu_ps(out + i * kPairRows, _mm512_add_ps(acc[i], corr[i]));
    } else {
      _mm512_storeu_ps(out + i * kPairRows,
                       _mm512_fnmadd_ps(_mm512_set1_ps(8.0f), corr[i], acc[i]));  // q - 8
    }
  }
}

// KernelTraits::dot_q8_tile_pair of each type (WithRows: one kernel per row count).
template <int G>
void DotPairsI8(const void* t, size_t tb, const BlockQ8Act* x, int64_t ldx, int m, int64_t n,
                float* out) {
  WithRows(m, [&](auto r) { DotPairI8<G, decltype(r)::value>(t, tb, x, ldx, n, out); });
}
void DotPairsI8C(const void* t, size_t tb, const BlockQ8Act* x, int64_t ldx, int m, int64_t n,
                 float* out) {
  WithRows(m, [&](auto r) { DotPairI8C<decltype(r)::value>(t, tb, x, ldx, n, out); });
}
template <int G, bool kAsym>
void DotPairsI4(const void* t, size_t tb, const BlockQ8Act* x, int64_t ldx, int m, int64_t n,
                float* out) {
  WithRows(m, [&](auto r) { DotPairI4<G, kAsym, decltype(r)::value>(t, tb, x, ldx, n, out); });
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
