// Building blocks of the x86 tile kernels (tile_kernels.inc: Frugal's formats; gguf_tiles.inc:
// the in-memory tiles of GGUF block types), compiled into each x86 variant's namespace
// (x86_variant.h). Everything is in an anonymous namespace: no weak symbols.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/x86/x86_variant.h"

// For the building blocks of the kernels (unpacking, chunk sums): with many kernel instances in
// one translation unit, GCC's unit-growth limit otherwise leaves some of them out of line, and
// their vectors then go through memory (a Q5_K pair kernel ran at 2/3 of its rate so). Only
// when optimizing: inlined at -O0 (the ASan build), their scoped arrays get exception cleanups,
// which bring a weak DW.ref.__gxx_personality_v0 into the ISA objects (x86_variant.h).
#if defined(__OPTIMIZE__)
#define FRUGAL_KERNEL_INLINE inline __attribute__((always_inline))
#define FRUGAL_LAMBDA_INLINE __attribute__((always_inline))
#else
#define FRUGAL_KERNEL_INLINE inline
#define FRUGAL_LAMBDA_INLINE
#endif

namespace frugal::FRUGAL_X86_NS {
namespace {

inline __m256 LoadHalf8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// 4 activations (bytes) broadcast to every 32-bit lane.
inline __m256i Broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return _mm256_set1_epi32(v);
}

// How far ahead one activation row (decode) asks for its weights: a tile is one contiguous
// stream, and 4 KiB is about the bytes that a core's stream keeps in flight at DRAM latency.
constexpr size_t kDecodePrefetchBytes = 4096;

// Several activation rows: asks for the same block of the next tile (tile_bytes on) while this
// one is computed; they spend long enough on a tile that its weights would otherwise arrive late
// (docs/benchmarks.md). One row: asks for the bytes kDecodePrefetchBytes ahead of the block. The
// hardware prefetcher alone left the K-quant tiles at half the memory rate (Qwen2.5-1.5B Q6_K
// decode 18-21 tok/s, 37 with this, Zen 5; Frugal's own formats neither gain nor lose). A
// prefetch never faults, so the ones past a matrix's end are harmless.
template <int R, class Block>
inline void PrefetchNextTile(const Block* blk, size_t tile_bytes) {
  const auto* p = reinterpret_cast<const char*>(blk) + (R > 1 ? tile_bytes : kDecodePrefetchBytes);
  for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

// One step of unsigned weights (at most 63) against broadcast activations. With AVX2 the int16
// pair sums are added in int16 (the caller keeps them in range: four 4-bit or 5-bit steps, two
// 6-bit ones) and widened by WidenI4; VNNI adds each step to int32 directly. The same integers
// either way.
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

// Keeps v whole in a register here. Where a kernel sums several products per activation row
// (Q6_K's halves), GCC's reassociation otherwise delays each row's additions until all rows'
// products are made, and with 8 rows in AVX2's 16 registers spills them (Q6_K, 8 rows: 143
// stack accesses per chunk loop, 111 with this on the half sums; 8 rows +8 %, 4 rows +6 %).
template <class T>
FRUGAL_KERNEL_INLINE void KeepWhole(T& v) {
  asm("" : "+v"(v));
}

// f(std::integral_constant<int, m>) for m in 1..kMax (a larger m runs kMax), so that each row
// count gets its own kernel; kMax is KernelTraits::tiles_rows for the one-tile kernels,
// pair_rows for the pair kernels (WithRows: 4).
template <int kMax, int kR = 1, class F>
inline void WithRowsUpTo(int m, F&& f) {
  if constexpr (kR == kMax) {
    f(std::integral_constant<int, kR>());
  } else if (m <= kR) {
    f(std::integral_constant<int, kR>());
  } else {
    WithRowsUpTo<kMax, kR + 1>(m, f);
  }
}
template <class F>
inline void WithRows(int m, F&& f) {
  WithRowsUpTo<4>(m, f);
}

}  // namespace
}  // namespace frugal::FRUGAL_X86_NS
