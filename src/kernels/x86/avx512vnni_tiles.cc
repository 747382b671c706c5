// tile_kernels.inc compiled for AVX-512 VNNI (see x86_variant.h): Frugal's tiled formats
// with VPDPBUSD, and the 512-bit two-tile kernels of avx512_pairs.h.
#define FRUGAL_X86_AVX512 1
#define FRUGAL_X86_VNNI 1
#include "kernels/x86/tile_kernels.inc"
