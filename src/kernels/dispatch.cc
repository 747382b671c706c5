// CPU level -> one traits table per tensor type (see kernels.h).
#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal {

const KernelTraits* GetScalarKernelTraits(TensorType type);  // kernels/ref/dequantize.cc
float RefDotF32(const float* a, const float* b, int64_t n);  // kernels/ref/ops.cc

namespace {

void RefDotF32x4(const float* w, const float* x, int64_t ldx, int64_t n, float* out) {
  for (int r = 0; r < 4; ++r) out[r] = RefDotF32(w, x + r * ldx, n);
}

}  // namespace

const KernelTraits* GetKernelTraits(TensorType type, CpuLevel level) {
  if (static_cast<int>(level) > static_cast<int>(DetectedCpuLevel())) return nullptr;
  switch (level) {
    case CpuLevel::kScalar:
      return GetScalarKernelTraits(type);
#if defined(__x86_64__)
    case CpuLevel::kAvx2:
      return avx2::GetTraits(type);
    case CpuLevel::kAvx512Bw:
      return avx512bw::GetTraits(type);
    case CpuLevel::kAvx512Vnni:
      return avx512vnni::GetTraits(type);
#else
    default:
      break;
#endif
  }
  return nullptr;
}

const KernelTraits* GetKernelTraits(TensorType type) {
  return GetKernelTraits(type, ActiveCpuLevel());
}

const F32Kernels& GetF32Kernels(CpuLevel level) {
  static const F32Kernels kScalar{RefDotF32, RefDotF32x4};
  if (static_cast<int>(level) > static_cast<int>(DetectedCpuLevel())) return kScalar;
#if defined(__x86_64__)
  if (level == CpuLevel::kAvx2) return avx2::GetF32Kernels();
  if (level == CpuLevel::kAvx512Bw) return avx512bw::GetF32Kernels();
  if (level == CpuLevel::kAvx512Vnni) return avx512vnni::GetF32Kernels();
#endif
  return kScalar;
}

float DotF32(const float* a, const float* b, int64_t n) {
  static const F32Kernels& active = GetF32Kernels(ActiveCpuLevel());
  return active.dot(a, b, n);
}

}  // namespace frugal
