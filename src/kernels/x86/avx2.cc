// gguf_kernels.inc compiled for AVX2 + FMA + F16C (see x86_variant.h): the GGUF block kernels.
#include "kernels/x86/gguf_kernels.inc"
