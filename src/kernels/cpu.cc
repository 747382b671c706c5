#include "kernels/cpu.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace frugal {

const char* CpuLevelName(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar:
      return "scalar";
    case CpuLevel::kAvx2:
      return "avx2";
    case CpuLevel::kAvx512Bw:
      return "avx512bw";
    case CpuLevel::kAvx512Vnni:
      return "avx512vnni";
  }
  return "?";
}

namespace {

#if defined(__x86_64__)
// AVX2 + FMA + F16C, and the OS saves the YMM registers (XCR0 bits 1 and 2). Read with CPUID
// directly: compilers disagree on which names __builtin_cpu_supports accepts.
bool HasAvx2FmaF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool fma = (ecx >> 12) & 1, osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1,
             f16c = (ecx >> 29) & 1;
  if (!(fma && osxsave && avx && f16c)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6) != 0x6) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ebx >> 5) & 1;  // AVX2
}

// AVX-512 F, BW and VL, and the OS saves the opmask and ZMM registers (XCR0 bits 5-7); with
// `vnni`, VNNI too.
bool HasAvx512(bool vnni) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool f = (ebx >> 16) & 1, bw = (ebx >> 30) & 1, vl = (ebx >> 31) & 1,
             has_vnni = (ecx >> 11) & 1;
  if (!(f && bw && vl) || (vnni && !has_vnni)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & 0xe0) == 0xe0;
}
#endif

}  // namespace

CpuLevel DetectedCpuLevel() {
  static const CpuLevel level = [] {
#if defined(__x86_64__)
    if (HasAvx2FmaF16c()) {
      if (HasAvx512(/*vnni=*/true)) return CpuLevel::kAvx512Vnni;
      return HasAvx512(/*vnni=*/false) ? CpuLevel::kAvx512Bw : CpuLevel::kAvx2;
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
    for (CpuLevel l :
         {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512Bw, CpuLevel::kAvx512Vnni}) {
      if (std::strcmp(env, CpuLevelName(l)) == 0) {
        if (static_cast<int>(l) > static_cast<int>(detected)) {
          std::fprintf(stderr,
                       "frugal: warning: FRUGAL_CPU=%s is not supported by this CPU; using %s\n",
                       env, CpuLevelName(detected));
          return detected;
        }
        return l;
      }
    }
    std::fprintf(
        stderr,
        "frugal: warning: unknown FRUGAL_CPU=%s (scalar|avx2|avx512bw|avx512vnni); using %s\n", env,
        CpuLevelName(detected));
    return detected;
  }();
  return level;
}

std::vector<CpuLevel> SupportedCpuLevels() {
  std::vector<CpuLevel> out;
  for (int l = 0; l <= static_cast<int>(DetectedCpuLevel()); ++l)
    out.push_back(static_cast<CpuLevel>(l));
  return out;
}

}  // namespace frugal
