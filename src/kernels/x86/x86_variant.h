// Which x86 variant a kernel translation unit builds. avx2.cc and avx2_tiles.cc are compiled
// twice: as they are (namespace frugal::avx2, -mavx2 -mfma -mf16c) and through avx512vnni.cc /
// avx512vnni_tiles.cc with FRUGAL_X86_VNNI defined (namespace frugal::avx512vnni, AVX-512 VNNI
// flags; CMakeLists.txt). The one difference in the source is AddDotU8S8: one VPDPBUSD instead
// of VPMADDUBSW + VPMADDWD + VPADDD. Every caller keeps its pair sums within int16 (where
// VPMADDUBSW would saturate), so both variants compute the same integers and results are bit
// for bit the same at both levels.
//
// The x86 kernel files must not define weak symbols (an inline or template function that is
// not inlined, shared with other translation units): the linker keeps one copy, maybe the
// AVX-512 one, for every caller, and a CPU without AVX-512 would fault. scripts/test.sh checks
// the objects with nm.
#pragma once

#include <immintrin.h>

#if defined(FRUGAL_X86_VNNI)
#define FRUGAL_X86_NS avx512vnni
#else
#define FRUGAL_X86_NS avx2
#endif

namespace frugal::FRUGAL_X86_NS {

// acc + the sums of 4 consecutive u8 x s8 products, per 32-bit lane.
static inline __m256i AddDotU8S8(__m256i acc, __m256i u, __m256i s) {
#if defined(FRUGAL_X86_VNNI)
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

}  // namespace frugal::FRUGAL_X86_NS
