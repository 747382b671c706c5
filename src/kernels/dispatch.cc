// CPU level -> one traits table per tensor type (see kernels.h).
#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal {

const KernelTraits* GetScalarKernelTraits(TensorType type);  // kernels/ref/dequantize.cc
float RefDotF32(const float* a, const float* b, int64_t n);   // kernels/ref/ops.cc

namespace {

void RefDotF32x4(const float* w, const float* x, int64_t ldx, int64_t n, float* out) {
  for (int r = 0; r < 4; ++r) out[r] = RefDotF32(w, x + r * ldx, n);
}

const KernelTraits* GetAvx2KernelTraits(TensorType type) {
#if defined(__x86_64__)
  if (IsFrugalType(type)) return avx2::GetAvx2FrugalTraits(type);
  static const KernelTraits kF16{avx2::DequantF16};
  static const KernelTraits kBF16{avx2::DequantBF16};
  static const KernelTraits kQ4_0{avx2::DequantQ4_0, avx2::DotQ8Q4_0};
  static const KernelTraits kQ4_1{avx2::DequantQ4_1, avx2::DotQ8Q4_1};
  static const KernelTraits kQ8_0{avx2::DequantQ8_0, avx2::DotQ8Q8_0};
  static const KernelTraits kQ4_K{avx2::DequantQ4_K, avx2::DotQ8Q4_K};
  static const KernelTraits kQ6_K{avx2::DequantQ6_K, avx2::DotQ8Q6_K};
  switch (type) {
    case TensorType::kF32: return GetScalarKernelTraits(type);  // nothing to convert
    // No AVX2 kernels yet: the scalar dequantizers, multiversioned, are compiled for AVX2 too.
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ5_K: return GetScalarKernelTraits(type);
    case TensorType::kF16: return &kF16;
    case TensorType::kBF16: return &kBF16;
    case TensorType::kQ4_0: return &kQ4_0;
    case TensorType::kQ4_1: return &kQ4_1;
    case TensorType::kQ8_0: return &kQ8_0;
    case TensorType::kQ4_K: return &kQ4_K;
    case TensorType::kQ6_K: return &kQ6_K;
    default: break;
  }
#else
  (void)type;
#endif
  return nullptr;
}

}  // namespace

const KernelTraits* GetKernelTraits(TensorType type, CpuLevel level) {
  if (static_cast<int>(level) > static_cast<int>(DetectedCpuLevel())) return nullptr;
  switch (level) {
    case CpuLevel::kScalar: return GetScalarKernelTraits(type);
    case CpuLevel::kAvx2: return GetAvx2KernelTraits(type);
  }
  return nullptr;
}

const KernelTraits* GetKernelTraits(TensorType type) {
  return GetKernelTraits(type, ActiveCpuLevel());
}

const F32Kernels& GetF32Kernels(CpuLevel level) {
  static const F32Kernels kScalar{RefDotF32, RefDotF32x4};
#if defined(__x86_64__)
  static const F32Kernels kAvx2{avx2::DotF32, avx2::DotF32x4};
  if (level == CpuLevel::kAvx2 && DetectedCpuLevel() >= CpuLevel::kAvx2) return kAvx2;
#endif
  (void)level;
  return kScalar;
}

float DotF32(const float* a, const float* b, int64_t n) {
  static const F32Kernels& active = GetF32Kernels(ActiveCpuLevel());
  return active.dot(a, b, n);
}

}  // namespace frugal
