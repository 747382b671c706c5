// tile_kernels.inc compiled for AVX2 + FMA + F16C (see x86_variant.h): Frugal's tiled formats.
#include "kernels/x86/tile_kernels.inc"
