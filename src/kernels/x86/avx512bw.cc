// avx2.cc compiled again for AVX-512 F/BW/VL (see x86_variant.h): the GGUF kernels as AVX2's.
#define FRUGAL_X86_AVX512 1
#include "kernels/x86/avx2.cc"  // NOLINT(bugprone-suspicious-include): one source, three ISAs
