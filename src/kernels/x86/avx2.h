// x86 kernel entry points. Call only when DetectedCpuLevel() is at least the namespace's level.
#pragma once

#include <cstdint>

#include "formats/tensor_types.h"

namespace frugal {
struct KernelTraits;
struct F32Kernels;
struct KvBlocks;
void RefAttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                      float* scores, float* out);
}  // namespace frugal

// gguf_kernels.inc and tile_kernels.inc are compiled once per namespace below (x86_variant.h); each
// namespace has the same entry points.
namespace frugal::avx2 {
// The traits of every type with AVX2 kernels; null for others.
const KernelTraits* GetTraits(TensorType type);
// The tiled Frugal formats (tile_kernels.inc); null for other types.
const KernelTraits* GetFrugalTraits(TensorType type);
// The in-memory tiles of GGUF types (gguf_tiles.inc); null for other types.
const KernelTraits* GetGgufTileTraits(TensorType type);
const F32Kernels& GetF32Kernels();
}  // namespace frugal::avx2

namespace frugal::avx512bw {  // avx512bw.cc, avx512bw_tiles.cc
const KernelTraits* GetTraits(TensorType type);
const KernelTraits* GetFrugalTraits(TensorType type);
// The in-memory tiles of GGUF types (gguf_tiles.inc); null for other types.
const KernelTraits* GetGgufTileTraits(TensorType type);
const F32Kernels& GetF32Kernels();
}  // namespace frugal::avx512bw

namespace frugal::avx512vnni {  // avx512vnni.cc, avx512vnni_tiles.cc
const KernelTraits* GetTraits(TensorType type);
const KernelTraits* GetFrugalTraits(TensorType type);
// The in-memory tiles of GGUF types (gguf_tiles.inc); null for other types.
const KernelTraits* GetGgufTileTraits(TensorType type);
const F32Kernels& GetF32Kernels();
}  // namespace frugal::avx512vnni

namespace frugal::avx2 {

// Element-wise ops (avx2_ops.cc; the AVX-512 levels use them too).
void QuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n);
void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps);
void SoftmaxInPlace(float* x, int64_t n);
void SwiGlu(const float* g, const float* u, float* y, int64_t n);
void Gelu(float* x, int64_t n);
void Axpy(float a, const float* x, float* y, int64_t n);
void AttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                   float* scores, float* out);
void AttentionGroup(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                    float scale, float* scores, float* out);
// F16C's VCVTPS2PH (round to nearest even) and VCVTPH2PS.
void Fp32ToFp16Row(const float* x, uint16_t* y, int64_t n);
void Fp16ToFp32Row(const uint16_t* x, float* y, int64_t n);

}  // namespace frugal::avx2
