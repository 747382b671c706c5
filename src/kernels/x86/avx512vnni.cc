// gguf_kernels.inc compiled for AVX-512 VNNI (see x86_variant.h): GGUF dot products with VPDPBUSD.
#define FRUGAL_X86_AVX512 1
#define FRUGAL_X86_VNNI 1
#include "kernels/x86/gguf_kernels.inc"
