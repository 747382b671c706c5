#include "kernels/cpu.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace frugal {

const char* CpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar: return "scalar";
    case CpuLevel::kAvx2: return "avx2";
  }
  return "?";
}

CpuLevel DetectedCpuLevel() {
  static const CpuLevel level = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")) {
      return CpuLevel::kAvx2;
    }
#endif
    return CpuLevel::kScalar;
  }();
  return level;
}

CpuLevel ActiveCpuLevel() {
  static const CpuLevel level = [] {
    const CpuLevel detected = DetectedCpuLevel();
    const char* env = std::getenv("FRUGAL_CPU");
    if (env == nullptr || *env == '\0') return detected;
    for (CpuLevel l : {CpuLevel::kScalar, CpuLevel::kAvx2}) {
      if (std::strcmp(env, CpuLevelName(l)) == 0) {
        if (static_cast<int>(l) > static_cast<int>(detected)) {
          std::fprintf(stderr, "frugal: warning: FRUGAL_CPU=%s is not supported by this CPU; using %s\n",
                       env, CpuLevelName(detected));
          return detected;
        }
        return l;
      }
    }
    std::fprintf(stderr, "frugal: warning: unknown FRUGAL_CPU=%s (scalar|avx2); using %s\n", env,
                 CpuLevelName(detected));
    return detected;
  }();
  return level;
}

std::vector<CpuLevel> SupportedCpuLevels() {
  std::vector<CpuLevel> out;
  for (int l = 0; l <= static_cast<int>(DetectedCpuLevel()); ++l) out.push_back(static_cast<CpuLevel>(l));
  return out;
}

}  // namespace frugal
