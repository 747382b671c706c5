// Compute kernels the models run on.
//
// One traits table per (tensor type, CPU level) (see ggml's type_traits): the reference
// kernels in kernels/ref are the oracle that every SIMD kernel in kernels/x86 is tested
// against (tests/unit/kernels_simd_test.cc). All
// functions are thread-safe; the ones that take a ThreadPool split work by output rows, so each
// output element is computed by exactly the same arithmetic whatever the thread count: results
// are bit-identical across thread counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/thread_pool.h"
#include "formats/gguf.h"
#include "formats/tensor_types.h"
#include "kernels/cpu.h"

// Reference kernels are compiled for several ISA levels and picked at load time by CPUID (GCC
// ifunc), so the plain C++ path is usable on any x86-64; no -ffast-math and no FP contraction
// (strict C++20 mode), so every level computes bit-identical results.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define FRUGAL_MULTIVERSION \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FRUGAL_MULTIVERSION
#endif

namespace frugal {

// The most activation rows of any kernel call (KernelTraits::pair_rows): a buffer of
// kMaxPairRows * 2 * kTileRows floats takes any call's results.
constexpr int kMaxPairRows = 16;

struct KernelTraits {
  // One-row types (GGUF's): dequantizes n consecutive elements (n a multiple of the block
  // size) to float. Null for the tiled types.
  void (*dequantize_row)(const void* src, float* dst, int64_t n) = nullptr;
  // Optional: dot product of a stored row with INT8-quantized activations (n / 32 blocks).
  // Null when the type has no integer path.
  float (*dot_q8)(const void* row, const BlockQ8Act* x, int64_t n) = nullptr;
  // Tiled types (Frugal's, kTileRows rows per tile): dequantizes a tile of kTileRows rows of
  // n elements to dst[r * n + i], and the dot products of its rows with one activation row.
  void (*dequantize_tile)(const void* tile, float* dst, int64_t n) = nullptr;
  void (*dot_q8_tile)(const void* tile, const BlockQ8Act* x, int64_t n, float* out) = nullptr;
  // Optional: the same for m activation rows at once, 1 <= m <= tiles_rows (row i at x + i * ldx
  // blocks, its results at out + kTileRows * i), equal bit for bit to m dot_q8_tile calls; the
  // weights are loaded and unpacked once for all m.
  void (*dot_q8_tiles)(const void* tile, const BlockQ8Act* x, int64_t ldx, int m, int64_t n,
                       float* out) = nullptr;
  // Optional (AVX-512 levels): dot_q8_tiles for two adjacent tiles at once, the second at
  // tile + tile_bytes, in 512-bit vectors; row r < 16 of the pair (the second tile's rows from
  // 8) and activation row i at out[2 * kTileRows * i + r]. Equal bit for bit to dot_q8_tiles on
  // each tile. Prefetches the next pair (tile + 2 * tile_bytes) as it goes; it never reads it.
  void (*dot_q8_tile_pair)(const void* tile, size_t tile_bytes, const BlockQ8Act* x, int64_t ldx,
                           int m, int64_t n, float* out) = nullptr;
  // The most activation rows dot_q8_tile_pair takes in one call (1 <= m <= pair_rows, at most
  // kMaxPairRows): 4, or more where unpacking the weights costs more than 4 rows' multiply-adds:
  // 8 for the re-laid Q5_0/Q5_1 tiles, 16 for the K-quant ones (the 32 vector registers of
  // AVX-512 hold their 16 rows' accumulators).
  int pair_rows = 4;
  // The most activation rows dot_q8_tiles takes in one call (1 <= m <= tiles_rows): 4, or 8 for
  // the re-laid GGUF tiles, whose unpacking AVX2's batches then share among 8 rows (their sums
  // spill from AVX2's 16 registers, but the unpacking costs more: kernels_bench BM_DotQ8Relaid,
  // AVX2, 8 rows against 4: Q4_K +6 %, Q5_K +15 %, Q6_K +17 %, Q5_0/Q5_1 +20-25 %).
  int tiles_rows = 4;

  int tile_rows() const { return dequantize_tile != nullptr ? kTileRows : 1; }
};

// How MatMul treats activations: kF32 keeps them in float (exact up to float rounding);
// kInt8 quantizes each activation row to INT8 per 32-block (as llama.cpp does) for weight types
// with an integer dot product, and uses float for the others.
enum class ActivationPrecision { kF32, kInt8 };

// Quantizes n floats (n a multiple of 32) to INT8 blocks: d = max|x| / 127, q = round(x / d).
// The same result at every CPU level.
void QuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n);

// Float dot products of one level. dot4 computes four dots of `w` against rows x, x + ldx, ...
// with exactly the arithmetic of dot for each row.
struct F32Kernels {
  float (*dot)(const float* a, const float* b, int64_t n);
  void (*dot4)(const float* w, const float* x, int64_t ldx, int64_t n, float* out);
};

// The traits of the active CPU level; null for a type without kernels.
const KernelTraits* GetKernelTraits(TensorType type);
// The traits of one level (tests); null when the type or the level has none.
const KernelTraits* GetKernelTraits(TensorType type, CpuLevel level);
const F32Kernels& GetF32Kernels(CpuLevel level);

// Y[b][r] = sum_k W[r][k] * X[b][k] for b < batch, r < rows(W); W is a 2-D tensor view
// (ne[0] = k = input features, ne[1] = rows). X is [batch][k], Y is [batch][rows], both
// row-major float. Each weight row is read once per call whatever the batch size.
void MatMul(const TensorView& w, const float* x, int64_t batch, float* y, ThreadPool& pool,
            ActivationPrecision precision = ActivationPrecision::kF32);

// Several matrices with the same input X (e.g. Q, K and V): one pass over the thread pool and
// one quantization of X for all of them; each output exactly as MatMul would compute it.
struct MatMulOutput {
  const TensorView* w;
  float* y;  // [batch][rows(w)]
};
void MatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t batch,
                 ThreadPool& pool, ActivationPrecision precision = ActivationPrecision::kF32);

// Copies row `row` of a 2-D tensor (e.g. a token embedding) to dst as float.
void GetRow(const TensorView& w, int64_t row, float* dst);

// Dequantizes a whole tensor to dst (w.elements() floats).
void DequantizeTensor(const TensorView& w, float* dst);

// Dot product at the active level.
float DotF32(const float* a, const float* b, int64_t n);

// --- element-wise ops, at the active CPU level (GetOpsKernels) ---
void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps);
void LayerNorm(const float* x, const float* weight, const float* bias, float* y, int64_t n,
               float eps);
void SoftmaxInPlace(float* x, int64_t n);
// y = silu(g) * u
void SwiGlu(const float* g, const float* u, float* y, int64_t n);
// Rotary position embedding of n_heads heads of head_dim floats: the first n_rot dims of each
// head rotate in pairs (i, i + n_rot / 2) when neox, else (2i, 2i + 1), by the angle whose
// cos / sin are cos[i] / sin[i]. Exact float formula at every level.
void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot, bool neox,
                const float* cos, const float* sin);
// y += a * x
void Axpy(float a, const float* x, float* y, int64_t n);
// How a KV cache stores keys and values: IEEE half (llama.cpp's default F16: half the bytes per
// position, so twice the cached prefixes fit) or float. Halves are written by Fp32ToFp16Row
// (round to nearest even) and widened exactly when attention reads them.
enum class KvType : uint8_t { kF16, kF32 };
inline constexpr size_t KvTypeBytes(KvType t) { return t == KvType::kF16 ? 2 : 4; }
inline constexpr const char* KvTypeName(KvType t) { return t == KvType::kF16 ? "f16" : "f32"; }

// Keys and values of one attention head over positions, stored in blocks of `block` positions
// (a paged KV cache; a contiguous one is a single block): position p's key is the hd elements at
// k[p / block] + offset + (p % block) * stride, its value likewise in v; an element is a float
// (kF32) or a uint16_t half (kF16).
struct KvBlocks {
  const void* const* k = nullptr;
  const void* const* v = nullptr;
  int64_t offset = 0;  // elements from a block's start to this head's first entry
  int64_t block = 0;   // positions per block
  int64_t stride = 0;  // elements between consecutive positions inside a block
  KvType type = KvType::kF32;
};
// Float <-> IEEE half, n elements, at the active level. Fp32ToFp16Row rounds to nearest even and
// gives the same bits at every level (F16C's VCVTPS2PH; the scalar common/fp16.h matches it,
// subnormals, overflow to inf and NaNs included); Fp16ToFp32Row is exact.
void Fp32ToFp16Row(const float* x, uint16_t* y, int64_t n);
void Fp16ToFp32Row(const uint16_t* x, float* y, int64_t n);
// One attention head for one query: scores[p] = scale * q . k_p for p < n, softmax over them,
// out = sum_p scores[p] v_p. scores holds n floats of scratch (the probabilities on return).
// The result does not depend on the block size when it is a multiple of 4. With half keys and
// values the result equals, bit for bit, that of float ones holding the same (widened) values.
void AttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                   float* scores, float* out);
// AttentionHead for `heads` query heads that share one key/value head (grouped-query attention):
// q and out hold heads x hd floats, head h at h * hd; scores heads x n floats of scratch, head h's
// at h * n. Each head's result equals AttentionHead's bit for bit; the keys and values are read
// once for the group instead of once per head.
void AttentionGroup(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                    float scale, float* scores, float* out);

// The element-wise kernels of one level (tests compare each level with kScalar; error budgets
// in tests/unit/ops_simd_test.cc).
struct OpsKernels {
  void (*quantize_q8)(const float* x, BlockQ8Act* out, int64_t n);
  void (*rms_norm)(const float* x, const float* weight, float* y, int64_t n, float eps);
  void (*softmax)(float* x, int64_t n);
  void (*swiglu)(const float* g, const float* u, float* y, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  void (*attention_head)(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                         float* scores, float* out);
  void (*attention_group)(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                          float scale, float* scores, float* out);
  void (*gelu)(float* x, int64_t n);  // in place
  void (*fp32_to_fp16)(const float* x, uint16_t* y, int64_t n);
  void (*fp16_to_fp32)(const uint16_t* x, float* y, int64_t n);
};
const OpsKernels& GetOpsKernels(CpuLevel level);
// GELU with erf (not the tanh approximation), as BERT uses.
void GeluInPlace(float* x, int64_t n);

}  // namespace frugal
