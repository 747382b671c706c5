// CPU feature levels and run-time kernel dispatch.
//
// The level is detected once by CPUID; the environment variable FRUGAL_CPU
// (scalar|avx2|avx512bw|avx512vnni) can force a lower one (never a higher one: the CPU would
// fault). Kernels of every compiled level stay reachable by explicit level so tests can compare
// each against the scalar oracle.
#pragma once

#include <string>
#include <vector>

namespace frugal {

enum class CpuLevel : int {
  kScalar = 0,  // plain C++ reference kernels (the oracle)
  kAvx2 = 1,    // AVX2 + FMA + F16C
  // + AVX-512 F/BW/VL: the tiled formats' dot products take two tiles (16 rows) per 512-bit
  // vector (kernels/x86/avx512_pairs.h); the other kernels are AVX2's, compiled again.
  kAvx512Bw = 2,
  // + VNNI: the integer multiply-adds are VPDPBUSD, on 256- and 512-bit vectors
  // (kernels/x86/x86_variant.h).
  kAvx512Vnni = 3,
};

const char* CpuLevelName(CpuLevel level);
// What this CPU can run (highest compiled level it supports).
CpuLevel DetectedCpuLevel();
// The level kernels run at: detected, lowered by FRUGAL_CPU. An unknown or too-high FRUGAL_CPU
// value is reported once on stderr and ignored.
CpuLevel ActiveCpuLevel();
// Every level this CPU supports, lowest first (what tests iterate over).
std::vector<CpuLevel> SupportedCpuLevels();

}  // namespace frugal
