#include "quant/awq.h"

#include <algorithm>
#include <cmath>

#include "quant/dense.h"

namespace frugal {

double ScaledQuantError(const AwqMatrix& m, int64_t cols, const float* s, const float* x, int64_t n,
                        ThreadPool& pool, ScaleFit fit) {
  // E = deq(Q(W diag(s))) diag(1/s) - W, then ||E x^T||^2 (one sgemm).
  std::vector<float> scaled(static_cast<size_t>(m.rows * cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      scaled[i] = s != nullptr ? m.w[i] * s[c] : m.w[i];
    }
  }
  const QuantizedMatrix q = QuantizeRtn(m.format, scaled.data(), m.rows, cols, fit, nullptr, &pool);
  std::vector<float> e = q.Dequantize();
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      e[i] = (s != nullptr ? e[i] / s[c] : e[i]) - m.w[i];
    }
  }
  return dense::OutputEnergy(e.data(), m.rows, cols, x, n);
}

AwqResult SearchAwqScale(std::span<const AwqMatrix> mats, int64_t cols, const float* x, int64_t n,
                         const std::vector<double>& mean_abs, const AwqOptions& options,
                         ThreadPool& pool) {
  AwqResult best;
  best.scale.assign(static_cast<size_t>(cols), 1.0f);
  auto total_error = [&](const float* s) {
    double e = 0;
    for (const AwqMatrix& m : mats) e += ScaledQuantError(m, cols, s, x, n, pool, options.fit);
    return e;
  };
  best.error = best.error_unscaled = total_error(nullptr);
  std::vector<float> s(static_cast<size_t>(cols));
  const int grid = std::max(1, options.grid);
  for (int step = 1; step < grid; ++step) {
    const double alpha = static_cast<double>(step) / grid;
    double lo = INFINITY, hi = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = std::pow(std::max(mean_abs[static_cast<size_t>(c)], 1e-4), alpha);
      s[static_cast<size_t>(c)] = static_cast<float>(v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    // Normalise so the scales straddle 1 (the geometric middle of their range).
    const double norm = std::sqrt(lo * hi);
    for (float& v : s) v = static_cast<float>(v / norm);
    const double e = total_error(s.data());
    if (e < best.error) {
      best.error = e;
      best.alpha = alpha;
      best.scale = s;
    }
  }
  return best;
}

}  // namespace frugal
