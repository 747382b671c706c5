// gguf_tiles.inc compiled for AVX2 + FMA + F16C (see x86_variant.h): the in-memory tiles of
// GGUF block types.
#include "kernels/x86/gguf_tiles.inc"
