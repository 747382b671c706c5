// CPU feature levels and run-time kernel dispatch.
//
// The level is detected once by CPUID; the environment variable FRUGAL_CPU (scalar|avx2|...)
// can force a lower one (never a higher one: the CPU would fault). Kernels of every compiled
// level stay reachable by explicit level so tests can compare each against the scalar oracle.
#pragma once

#include <string>
#include <vector>

namespace frugal {

enum class CpuLevel : int {
  kScalar = 0,  // plain C++ reference kernels (the oracle)
  kAvx2 = 1,    // AVX2 + FMA + F16C
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
