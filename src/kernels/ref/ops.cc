// MatMul (dispatching to the active level's kernels) and the scalar element-wise ops.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "common/fp16.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"

namespace frugal {

FRUGAL_MULTIVERSION float RefDotF32(const float* a, const float* b, int64_t n) {
  // Independent partial sums let the compiler vectorise without -ffast-math; the summation
  // order is fixed, so the result does not depend on threading.
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void GetRow(const TensorView& w, int64_t row, float* dst) {
  const KernelTraits* traits = GetKernelTraits(w.type);
  FRUGAL_CHECK(traits != nullptr);
  const int64_t k = w.ne[0];
  const size_t row_bytes = w.nbytes / static_cast<size_t>(w.rows());
  if (traits->dequantize_tile != nullptr) {
    thread_local std::vector<float> tile;
    tile.resize(static_cast<size_t>(kTileRows * k));
    const int64_t t = row / kTileRows;
    traits->dequantize_tile(w.data + row_bytes * static_cast<size_t>(t * kTileRows), tile.data(),
                            k);
    std::copy_n(tile.data() + (row % kTileRows) * k, k, dst);
    return;
  }
  traits->dequantize_row(w.data + row_bytes * static_cast<size_t>(row), dst, k);
}

void DequantizeTensor(const TensorView& w, float* dst) {
  const KernelTraits* traits = GetKernelTraits(w.type);
  FRUGAL_CHECK(traits != nullptr);
  const int64_t k = w.ne[0];
  if (traits->dequantize_tile == nullptr) {
    traits->dequantize_row(w.data, dst, w.elements());
    return;
  }
  const size_t tile_bytes = w.nbytes / static_cast<size_t>(w.rows() / kTileRows);
  for (int64_t t = 0; t < w.rows() / kTileRows; ++t) {
    traits->dequantize_tile(w.data + tile_bytes * static_cast<size_t>(t), dst + t * kTileRows * k,
                            k);
  }
}

namespace {

constexpr int64_t kUnitRows = kTileRows;  // rows per unit of work (a tile for tiled types)

// One matrix of a MatMulMulti call, resolved.
struct Job {
  const TensorView* w;
  float* y;
  const KernelTraits* traits;
  int64_t rows;
  size_t row_bytes;
  bool int8;
  int64_t first_unit;  // units before this job
};

// Rows [r0, r1) of one job (r0 a multiple of kUnitRows) for every activation row. Each output
// element is computed by the same arithmetic whatever the range, batch or thread count.
void RunRows(const Job& j, int64_t r0, int64_t r1, const float* x, const BlockQ8Act* xq,
             int64_t batch, int64_t k) {
  static const F32Kernels& f32 = GetF32Kernels(ActiveCpuLevel());
  const KernelTraits& t = *j.traits;
  const TensorView& w = *j.w;
  const int64_t rows = j.rows, blocks = k / kQK;
  float* y = j.y;
  if (j.int8 && t.dot_q8_tile != nullptr) {
    float out[kMaxPairRows * 2 * kTileRows];
    const size_t tile_bytes = j.row_bytes * static_cast<size_t>(kTileRows);
    if (batch == 1) {  // decode: one stream through the weights
      for (int64_t r = r0; r < r1; r += kTileRows) {
        t.dot_q8_tile(w.data + j.row_bytes * static_cast<size_t>(r), xq, k, out);
        std::copy_n(out, kTileRows, y + r);
      }
      return;
    }
    // Batches (prefill, batched decode): the rows in blocks whose weights stay in L2 while every
    // activation row, tiles_rows (4 or 8) at a time, passes over them; one block after the other.
    // (Tile by tile, a long batch's activations would stream from memory once per tile: 11 MB per
    // tile for 128 tokens of a 8960-wide FFN.) Two tiles per call where the level has 512-bit
    // kernels: arithmetic-bound, they run at up to twice the rate, and take up to pair_rows
    // activation rows at once; the same results as one by one, so the blocking and pairing,
    // which follow the thread split, change nothing.
    constexpr size_t kBlockBytes = size_t{256} << 10;
    // Where tiles go in pairs, an even number per block (rounded up: a few more KB of L2): an
    // odd one runs at the one-tile rate, a fifth of Qwen2.5-1.5B's Q5_K FFN down-projection
    // (5 tiles of 48 KB per block). Interleaved A/B, Zen 5: Q5_K_M prefill +0.6..4.3 %.
    int64_t block_tiles = std::max<int64_t>(2, static_cast<int64_t>(kBlockBytes / tile_bytes));
    if (t.dot_q8_tile_pair != nullptr) block_tiles += block_tiles % 2;
    const int step = t.dot_q8_tile_pair != nullptr ? t.pair_rows : t.tiles_rows;
    for (int64_t rb = r0; rb < r1; rb += block_tiles * kTileRows) {
      const int64_t re = std::min(r1, rb + block_tiles * kTileRows);
      for (int64_t b = 0; b < batch; b += step) {
        const int m = static_cast<int>(std::min<int64_t>(step, batch - b));
        const BlockQ8Act* xb = xq + b * blocks;
        int64_t r = rb;
        if (t.dot_q8_tile_pair != nullptr) {
          for (; r + 2 * kTileRows <= re; r += 2 * kTileRows) {
            t.dot_q8_tile_pair(w.data + j.row_bytes * static_cast<size_t>(r), tile_bytes, xb,
                               blocks, m, k, out);
            for (int i = 0; i < m; ++i)
              std::copy_n(out + i * 2 * kTileRows, 2 * kTileRows, y + (b + i) * rows + r);
          }
        }
        for (; r < re; r += kTileRows) {  // a block's odd last tile: tiles_rows rows at a time
          const uint8_t* tile = w.data + j.row_bytes * static_cast<size_t>(r);
          for (int i0 = 0; i0 < m; i0 += t.tiles_rows) {
            const int mm = std::min(t.tiles_rows, m - i0);
            if (t.dot_q8_tiles != nullptr) {
              t.dot_q8_tiles(tile, xb + i0 * blocks, blocks, mm, k, out);
            } else {
              for (int i = 0; i < mm; ++i)
                t.dot_q8_tile(tile, xb + (i0 + i) * blocks, k, out + i * kTileRows);
            }
            for (int i = 0; i < mm; ++i)
              std::copy_n(out + i * kTileRows, kTileRows, y + (b + i0 + i) * rows + r);
          }
        }
      }
    }
    return;
  }
  if (j.int8) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = w.data + j.row_bytes * static_cast<size_t>(r);
      for (int64_t b = 0; b < batch; ++b) y[b * rows + r] = t.dot_q8(row, xq + b * blocks, k);
    }
    return;
  }
  thread_local std::vector<float> buf;
  for (int64_t u0 = r0; u0 < r1; u0 += kUnitRows) {
    const int64_t u1 = std::min(r1, u0 + kUnitRows);
    const float* wrows;
    if (w.type == TensorType::kF32) {
      wrows = reinterpret_cast<const float*>(w.data + j.row_bytes * static_cast<size_t>(u0));
    } else {
      buf.resize(static_cast<size_t>(kTileRows * k));
      if (t.dequantize_tile != nullptr) {
        t.dequantize_tile(w.data + j.row_bytes * static_cast<size_t>(u0), buf.data(), k);
      } else {
        for (int64_t r = u0; r < u1; ++r) {
          t.dequantize_row(w.data + j.row_bytes * static_cast<size_t>(r), buf.data() + (r - u0) * k,
                           k);
        }
      }
      wrows = buf.data();
    }
    // Activation rows four at a time against all the unit's weight rows: both stay in L1, where
    // a loop over the whole batch per weight row would stream the batch from L2/L3 eight times.
    float out4[4];
    int64_t b = 0;
    for (; b + 4 <= batch; b += 4) {
      for (int64_t r = u0; r < u1; ++r) {
        f32.dot4(wrows + (r - u0) * k, x + b * k, k, k, out4);
        for (int i = 0; i < 4; ++i) y[(b + i) * rows + r] = out4[i];
      }
    }
    for (; b < batch; ++b) {
      for (int64_t r = u0; r < u1; ++r)
        y[b * rows + r] = f32.dot(wrows + (r - u0) * k, x + b * k, k);
    }
  }
}

}  // namespace

void MatMulMulti(std::span<const MatMulOutput> outs, const float* x, int64_t batch,
                 ThreadPool& pool, ActivationPrecision precision) {
  if (outs.empty()) return;
  const int64_t k = outs[0].w->ne[0];
  std::vector<Job> jobs;
  jobs.reserve(outs.size());
  int64_t units = 0;
  bool any_int8 = false;
  for (const MatMulOutput& o : outs) {
    FRUGAL_CHECK(o.w->ne[0] == k);
    const KernelTraits* traits = GetKernelTraits(o.w->type);
    FRUGAL_CHECK(traits != nullptr);
    Job j{o.w,   o.y,  traits, o.w->rows(), o.w->nbytes / static_cast<size_t>(o.w->rows()),
          false, units};
    FRUGAL_CHECK(traits->tile_rows() == 1 || j.rows % kTileRows == 0);
    j.int8 = precision == ActivationPrecision::kInt8 && k % kQK == 0 &&
             (traits->dot_q8 != nullptr || traits->dot_q8_tile != nullptr);
    any_int8 |= j.int8;
    units += (j.rows + kUnitRows - 1) / kUnitRows;
    jobs.push_back(j);
  }
  // Each activation row is quantized on its own, once for all matrices, so a row's result
  // never depends on the batch it came in (nor on the pool thread that quantized it: a prefill's
  // rows are split over the pool, a decode's few stay on this thread).
  thread_local std::vector<BlockQ8Act> xq;
  if (any_int8) {
    const int64_t blocks = k / kQK;
    xq.resize(static_cast<size_t>(batch * blocks));
    BlockQ8Act* q = xq.data();
    pool.ParallelFor(
        batch,
        [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) QuantizeRowQ8Act(x + b * k, q + b * blocks, k);
        },
        /*grain=*/8);
  }
  const BlockQ8Act* xq_data = xq.data();
  pool.ParallelFor(
      units,
      [&](int64_t u0, int64_t u1) {
        // The range's units of each job in one call, so that neighbouring tiles can go together.
        size_t ji = 0;
        for (int64_t u = u0; u < u1;) {
          while (ji + 1 < jobs.size() && jobs[ji + 1].first_unit <= u) ++ji;
          const Job& j = jobs[ji];
          const int64_t job_end = ji + 1 < jobs.size() ? jobs[ji + 1].first_unit : units;
          const int64_t end = std::min(u1, job_end);
          RunRows(j, (u - j.first_unit) * kUnitRows,
                  std::min(j.rows, (end - j.first_unit) * kUnitRows), x, xq_data, batch, k);
          u = end;
        }
      },
      /*grain=*/2);
}

void MatMul(const TensorView& w, const float* x, int64_t batch, float* y, ThreadPool& pool,
            ActivationPrecision precision) {
  const MatMulOutput out{&w, y};
  MatMulMulti(std::span<const MatMulOutput>(&out, 1), x, batch, pool, precision);
}

void RefRmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void LayerNorm(const float* x, const float* weight, const float* bias, float* y, int64_t n,
               float eps) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  double var = 0;
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>((x[i] - mean) * inv) * weight[i] + bias[i];
  }
}

void RefSoftmaxInPlace(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void RefSwiGlu(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void RefGelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * static_cast<float>(M_SQRT1_2)));
  }
}

FRUGAL_MULTIVERSION void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                                    bool neox, const float* cos, const float* sin) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (neox) {
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * cos[i] - x1 * sin[i];
        v[i + half] = x0 * sin[i] + x1 * cos[i];
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos[i] - x1 * sin[i];
        v[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
      }
    }
  }
}

void RefAxpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void RefQuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n);  // ref/dequantize.cc

void RefFp32ToFp16Row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToFp16(x[i]);
}

void RefFp16ToFp32Row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Fp16ToFp32(x[i]);
}

void RefAttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                      float* scores, float* out) {
  const size_t bytes = KvTypeBytes(kv.type);
  auto at = [&](const void* const* blocks, int64_t p) {
    return static_cast<const char*>(blocks[p / kv.block]) +
           static_cast<size_t>(kv.offset + (p % kv.block) * kv.stride) * bytes;
  };
  // Half keys and values are widened (exactly) a row at a time and then go through the float
  // arithmetic, so the result is that of float ones holding the same values.
  std::vector<float> row(kv.type == KvType::kF16 ? static_cast<size_t>(hd) : 0);
  auto floats = [&](const char* e) {
    if (kv.type == KvType::kF32) return reinterpret_cast<const float*>(e);
    RefFp16ToFp32Row(reinterpret_cast<const uint16_t*>(e), row.data(), hd);
    return static_cast<const float*>(row.data());
  };
  for (int64_t p = 0; p < n; ++p) scores[p] = RefDotF32(q, floats(at(kv.k, p)), hd) * scale;
  RefSoftmaxInPlace(scores, n);
  std::fill(out, out + hd, 0.0f);
  for (int64_t p = 0; p < n; ++p) RefAxpy(scores[p], floats(at(kv.v, p)), out, hd);
}

void RefAttentionGroup(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                       float scale, float* scores, float* out) {
  for (int64_t h = 0; h < heads; ++h)
    RefAttentionHead(q + h * hd, kv, n, hd, scale, scores + h * n, out + h * hd);
}

const OpsKernels& GetOpsKernels(CpuLevel level) {
  static const OpsKernels kScalar{RefQuantizeRowQ8Act, RefRmsNorm, RefSoftmaxInPlace,
                                  RefSwiGlu,           RefAxpy,    RefAttentionHead,
                                  RefAttentionGroup,   RefGelu,    RefFp32ToFp16Row,
                                  RefFp16ToFp32Row};
#if defined(__x86_64__)
  static const OpsKernels kAvx2{avx2::QuantizeRowQ8Act, avx2::RmsNorm, avx2::SoftmaxInPlace,
                                avx2::SwiGlu,           avx2::Axpy,    avx2::AttentionHead,
                                avx2::AttentionGroup,   avx2::Gelu,    avx2::Fp32ToFp16Row,
                                avx2::Fp16ToFp32Row};
  // The AVX-512 VNNI level differs in its integer dot products only (x86/x86_variant.h).
  if (level >= CpuLevel::kAvx2 && DetectedCpuLevel() >= level) return kAvx2;
#endif
  (void)level;
  return kScalar;
}

namespace {
const OpsKernels& Active() {
  static const OpsKernels& active = GetOpsKernels(ActiveCpuLevel());
  return active;
}
}  // namespace

void QuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n) {
  Active().quantize_q8(x, out, n);
}
void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  Active().rms_norm(x, weight, y, n, eps);
}
void SoftmaxInPlace(float* x, int64_t n) { Active().softmax(x, n); }
void SwiGlu(const float* g, const float* u, float* y, int64_t n) { Active().swiglu(g, u, y, n); }
void GeluInPlace(float* x, int64_t n) { Active().gelu(x, n); }
void Axpy(float a, const float* x, float* y, int64_t n) { Active().axpy(a, x, y, n); }
void Fp32ToFp16Row(const float* x, uint16_t* y, int64_t n) { Active().fp32_to_fp16(x, y, n); }
void Fp16ToFp32Row(const uint16_t* x, float* y, int64_t n) { Active().fp16_to_fp32(x, y, n); }
void AttentionHead(const float* q, const KvBlocks& kv, int64_t n, int64_t hd, float scale,
                   float* scores, float* out) {
  Active().attention_head(q, kv, n, hd, scale, scores, out);
}
void AttentionGroup(const float* q, int64_t heads, const KvBlocks& kv, int64_t n, int64_t hd,
                    float scale, float* scores, float* out) {
  Active().attention_group(q, heads, kv, n, hd, scale, scores, out);
}

}  // namespace frugal
