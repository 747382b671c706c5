// gguf_kernels.inc compiled for AVX-512 F/BW/VL (see x86_variant.h): the GGUF block kernels.
#define FRUGAL_X86_AVX512 1
#include "kernels/x86/gguf_kernels.inc"
