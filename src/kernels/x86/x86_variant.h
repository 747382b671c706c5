// Which x86 variant a kernel translation unit builds. gguf_kernels.inc (the GGUF block types),
// tile_kernels.inc (Frugal's tiled formats) and gguf_tiles.inc (the in-memory tiles of GGUF
// types) are each compiled three times (CMakeLists.txt):
//  - through avx2.cc / avx2_tiles.cc: namespace frugal::avx2, -mavx2 -mfma -mf16c;
//  - through avx512bw.cc / avx512bw_tiles.cc with FRUGAL_X86_AVX512 defined: namespace
//    frugal::avx512bw, AVX-512 F/BW/VL flags. The tiled formats gain the 512-bit two-tile
//    kernels of avx512_pairs.h; everything else is the AVX2 source;
//  - through avx512vnni.cc / avx512vnni_tiles.cc with FRUGAL_X86_AVX512 and FRUGAL_X86_VNNI
//    defined: namespace frugal::avx512vnni, + VNNI. The u8 x s8 multiply-add with a 4-way sum is
//    one VPDPBUSD instead of VPMADDUBSW + VPMADDWD + VPADDD.
// Every caller keeps its pair sums within int16 where VPMADDUBSW would saturate, or corrects an
// unsigned offset exactly in int32, so every variant computes the same integers, and with the
// same float operations per output, results are bit for bit the same at every x86 level.
//
// The x86 kernel files must not define weak symbols (an inline or template function that is
// not inlined, shared with other translation units): the linker keeps one copy, maybe the
// AVX-512 one, for every caller, and a CPU without AVX-512 would fault. scripts/test.sh checks
// the objects with nm.
#pragma once

#include <immintrin.h>

#if defined(FRUGAL_X86_VNNI) && !defined(FRUGAL_X86_AVX512)
#error "FRUGAL_X86_VNNI needs FRUGAL_X86_AVX512"
#endif

#if defined(FRUGAL_X86_VNNI)
#define FRUGAL_X86_NS avx512vnni
#elif defined(FRUGAL_X86_AVX512)
#define FRUGAL_X86_NS avx512bw
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
