// AVX2 kernel entry points (see avx2.cc). Call only when DetectedCpuLevel() >= kAvx2.
#pragma once

#include <cstdint>

#include "formats/tensor_types.h"

namespace frugal {
struct KernelTraits;
struct KvBlocks;
void RefAttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                      float* scores, float* out);
}

namespace frugal::avx2 {

// The tiled Frugal formats (avx2_tiles.cc); null for other types.
const KernelTraits* GetAvx2FrugalTraits(TensorType type);

float DotF32(const float* a, const float* b, int64_t n);
float DotQ8Q4_0(const void* row, const BlockQ8Act* x, int64_t n);
float DotQ8Q4_1(const void* row, const BlockQ8Act* x, int64_t n);
float DotQ8Q8_0(const void* row, const BlockQ8Act* x, int64_t n);
float DotQ8Q4_K(const void* row, const BlockQ8Act* x, int64_t n);
float DotQ8Q6_K(const void* row, const BlockQ8Act* x, int64_t n);
void DotF32x4(const float* w, const float* x, int64_t ldx, int64_t n, float* out);
void DequantF16(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantBF16(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantQ8_0(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantQ4_0(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantQ4_1(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantQ4_K(const void* __restrict src, float* __restrict dst, int64_t n);
void DequantQ6_K(const void* __restrict src, float* __restrict dst, int64_t n);

// Element-wise ops (avx2_ops.cc).
void QuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n);
void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps);
void SoftmaxInPlace(float* x, int64_t n);
void SwiGlu(const float* g, const float* u, float* y, int64_t n);
void Gelu(float* x, int64_t n);
void Axpy(float a, const float* x, float* y, int64_t n);
void AttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                   float* scores, float* out);

}  // namespace frugal::avx2
