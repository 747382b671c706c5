// MatMul (dispatching to the active level's kernels) and the scalar element-wise ops.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "kernels/kernels.h"

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
    traits->dequantize_tile(w.data + row_bytes * static_cast<size_t>(t * kTileRows), tile.data(), k);
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
    traits->dequantize_tile(w.data + tile_bytes * static_cast<size_t>(t), dst + t * kTileRows * k, k);
  }
}

namespace {

// Y = W X for a tiled type: the same as below, 8 rows at a time.
void MatMulTiled(const TensorView& w, const KernelTraits& traits, const float* x, int64_t batch,
                 float* y, ThreadPool& pool, ActivationPrecision precision) {
  const int64_t k = w.ne[0];
  const int64_t rows = w.rows();
  const int64_t tiles = rows / kTileRows;
  const size_t tile_bytes = w.nbytes / static_cast<size_t>(tiles);
  if (precision == ActivationPrecision::kInt8 && traits.dot_q8_tile != nullptr) {
    const int64_t blocks = k / kQK;
    thread_local std::vector<BlockQ8Act> xq;
    xq.resize(static_cast<size_t>(batch * blocks));
    for (int64_t b = 0; b < batch; ++b) QuantizeRowQ8Act(x + b * k, &xq[static_cast<size_t>(b * blocks)], k);
    const BlockQ8Act* xq_data = xq.data();
    pool.ParallelFor(tiles, [&](int64_t t0, int64_t t1) {
      float out[kTileRows];
      for (int64_t t = t0; t < t1; ++t) {
        const uint8_t* tile = w.data + tile_bytes * static_cast<size_t>(t);
        for (int64_t b = 0; b < batch; ++b) {
          traits.dot_q8_tile(tile, xq_data + b * blocks, k, out);
          std::copy_n(out, kTileRows, y + b * rows + t * kTileRows);
        }
      }
    }, /*grain=*/2);
    return;
  }
  static const F32Kernels& f32 = GetF32Kernels(ActiveCpuLevel());
  pool.ParallelFor(tiles, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> buf;
    buf.resize(static_cast<size_t>(kTileRows * k));
    float out4[4];
    for (int64_t t = t0; t < t1; ++t) {
      traits.dequantize_tile(w.data + tile_bytes * static_cast<size_t>(t), buf.data(), k);
      for (int j = 0; j < kTileRows; ++j) {
        const float* wr = buf.data() + j * k;
        const int64_t r = t * kTileRows + j;
        int64_t b = 0;
        for (; b + 4 <= batch; b += 4) {
          f32.dot4(wr, x + b * k, k, k, out4);
          for (int i = 0; i < 4; ++i) y[(b + i) * rows + r] = out4[i];
        }
        for (; b < batch; ++b) y[b * rows + r] = f32.dot(wr, x + b * k, k);
      }
    }
  }, /*grain=*/2);
}

}  // namespace

void MatMul(const TensorView& w, const float* x, int64_t batch, float* y, ThreadPool& pool,
            ActivationPrecision precision) {
  const int64_t k = w.ne[0];
  const int64_t rows = w.rows();
  const KernelTraits* traits = GetKernelTraits(w.type);
  FRUGAL_CHECK(traits != nullptr);
  if (traits->dequantize_tile != nullptr) {
    MatMulTiled(w, *traits, x, batch, y, pool, precision);
    return;
  }
  const size_t row_bytes = w.nbytes / static_cast<size_t>(rows);
  if (precision == ActivationPrecision::kInt8 && traits->dot_q8 != nullptr && k % kQK == 0) {
    // Each activation row is quantized on its own, so a row's result never depends on the
    // batch it came in.
    const int64_t blocks = k / kQK;
    thread_local std::vector<BlockQ8Act> xq;
    xq.resize(static_cast<size_t>(batch * blocks));
    for (int64_t b = 0; b < batch; ++b) QuantizeRowQ8Act(x + b * k, &xq[static_cast<size_t>(b * blocks)], k);
    const BlockQ8Act* xq_data = xq.data();
    pool.ParallelFor(rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + row_bytes * static_cast<size_t>(r);
        for (int64_t b = 0; b < batch; ++b) y[b * rows + r] = traits->dot_q8(row, xq_data + b * blocks, k);
      }
    }, /*grain=*/16);
    return;
  }
  static const F32Kernels& f32 = GetF32Kernels(ActiveCpuLevel());
  const bool is_f32 = w.type == TensorType::kF32;
  pool.ParallelFor(
      rows,
      [&](int64_t r0, int64_t r1) {
        thread_local std::vector<float> buf;
        if (!is_f32) buf.resize(static_cast<size_t>(k));
        float out4[4];
        for (int64_t r = r0; r < r1; ++r) {
          const float* wr;
          if (is_f32) {
            wr = reinterpret_cast<const float*>(w.data + row_bytes * static_cast<size_t>(r));
          } else {
            traits->dequantize_row(w.data + row_bytes * static_cast<size_t>(r), buf.data(), k);
            wr = buf.data();
          }
          // The dequantized row is reused from L1 for every activation row.
          int64_t b = 0;
          for (; b + 4 <= batch; b += 4) {
            f32.dot4(wr, x + b * k, k, k, out4);
            for (int j = 0; j < 4; ++j) y[(b + j) * rows + r] = out4[j];
          }
          for (; b < batch; ++b) y[b * rows + r] = f32.dot(wr, x + b * k, k);
        }
      },
      /*grain=*/16);
}

void RmsNorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
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

void SoftmaxInPlace(float* x, int64_t n) {
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

void SwiGlu(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void GeluInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * static_cast<float>(M_SQRT1_2)));
  }
}

}  // namespace frugal
