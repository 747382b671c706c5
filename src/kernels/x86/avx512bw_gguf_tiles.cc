// gguf_tiles.inc compiled for AVX-512 BW (see x86_variant.h).
#define FRUGAL_X86_AVX512 1
#include "kernels/x86/gguf_tiles.inc"
