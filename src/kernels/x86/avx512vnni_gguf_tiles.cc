// gguf_tiles.inc compiled for AVX-512 VNNI (see x86_variant.h): VPDPBUSD.
#define FRUGAL_X86_AVX512 1
#define FRUGAL_X86_VNNI 1
#include "kernels/x86/gguf_tiles.inc"
