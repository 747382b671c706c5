#include "quant/gptq.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "quant/dense.h"

namespace frugal {
namespace {

// fn(begin, end) over rows, on the pool when there is one.
void ForRows(ThreadPool* pool, int64_t rows, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr && pool->size() > 1 && rows > 1) {
    pool->ParallelFor(rows, fn, 8);
  } else {
    fn(0, rows);
  }
}

}  // namespace

StatusOr<std::shared_ptr<const GptqFactor>> FactorHessian(const float* h, int64_t cols,
                                                          const GptqOptions& options,
                                                          ThreadPool* pool) {
  if (cols <= 0) return InvalidArgument("GPTQ: bad Hessian shape");
  const auto at = [](int64_t i) { return static_cast<size_t>(i); };
  auto fac = std::make_shared<GptqFactor>();
  fac->cols = cols;
  // Column order: by decreasing H diagonal with act-order.
  std::vector<int64_t>& perm = fac->perm;
  perm.resize(at(cols));
  std::iota(perm.begin(), perm.end(), 0);
  if (options.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h[a * cols + a] > h[b * cols + b]; });
  }
  fac->pos.resize(at(cols));
  for (int64_t j = 0; j < cols; ++j) fac->pos[at(perm[at(j)])] = j;
  fac->imp.resize(at(cols));
  for (int64_t c = 0; c < cols; ++c) fac->imp[at(c)] = std::max(0.0f, h[c * cols + c]);

  double mean_diag = 0;
  for (int64_t a = 0; a < cols; ++a) mean_diag += h[a * cols + a];
  mean_diag /= static_cast<double>(cols);
  if (!(mean_diag > 0)) mean_diag = 1;

  // U: upper Cholesky factor of the permuted, damped H's inverse (column-major, dense.h). Raise
  // the damping until H is positive definite. One cols x cols buffer: it is filled from h again
  // on each attempt.
  std::vector<float>& u = fac->u;
  u.resize(at(cols * cols));
  double damp = options.damp;
  for (int attempt = 0;; ++attempt) {
    const auto add = static_cast<float>(damp * mean_diag);
    ForRows(pool, cols, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) {
        const float* hrow = h + perm[at(a)] * cols;
        float* urow = u.data() + a * cols;
        for (int64_t b = 0; b < cols; ++b) urow[b] = hrow[perm[at(b)]];
        // An input that never fired carries no information: its weights cannot matter on the
        // calibration data; keep H invertible and let RTN decide them.
        if (urow[a] <= 0) urow[a] = static_cast<float>(mean_diag);
        urow[a] += add;
      }
    });
    if (dense::UpperFactorOfInverse(u.data(), cols)) break;
    if (attempt == 8)
      return Internal("GPTQ: the Hessian stays singular even with damping " + std::to_string(damp));
    damp = damp > 0 ? damp * 10 : 1e-4;
  }
  fac->damp_used = damp;
  return std::shared_ptr<const GptqFactor>(std::move(fac));
}

StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const float* h, const GptqOptions& options, ThreadPool* pool) {
  FRUGAL_ASSIGN_OR_RETURN(const std::shared_ptr<const GptqFactor> fac,
                          FactorHessian(h, cols, options, pool));
  return QuantizeGptq(f, w, rows, cols, *fac, options, pool);
}

StatusOr<GptqResult> QuantizeGptq(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                                  const GptqFactor& fac, const GptqOptions& options,
                                  ThreadPool* pool) {
  if (rows <= 0 || cols <= 0 || cols % f.span() != 0 || fac.cols != cols)
    return InvalidArgument("GPTQ: bad matrix shape");
  const int64_t groups = f.groups(cols), span = f.span(), spans = cols / span;
  const auto at = [](int64_t i) { return static_cast<size_t>(i); };
  const std::vector<int64_t>&perm = fac.perm, &pos = fac.pos;
  const std::vector<float>& u = fac.u;
  GptqResult result;
  result.damp_used = fac.damp_used;
  const auto U = [&](int64_t i, int64_t j) { return u[at(i + j * cols)]; };

  // Weights in permuted column order, row-major: within a block every row is independent.
  std::vector<float> W(at(rows * cols));
  ForRows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t j = 0; j < cols; ++j) W[at(r * cols + j)] = w[r * cols + perm[at(j)]];
    }
  });

  QuantizedMatrix& out = result.matrix;
  out.format = f;
  out.rows = rows;
  out.cols = cols;
  out.q.resize(at(rows * cols));
  out.params.resize(at(rows * groups));
  if (f.super > 0) out.supers.resize(at(rows * spans));
  // The span (group, or K-quant super-block) whose scales are chosen when column j is reached:
  // its first column in quantization order; -1 for none.
  std::vector<int64_t> fit_at(at(cols), -1);
  {
    std::vector<char> fitted(at(spans), 0);
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t s = perm[at(j)] / span;
      if (!fitted[at(s)]) fit_at[at(j)] = s;
      fitted[at(s)] = 1;
    }
  }

  const int64_t block = std::max<int64_t>(1, options.block);
  std::vector<float> err(at(rows * block)), ub(at(block * block));
  for (int64_t i1 = 0; i1 < cols; i1 += block) {
    const int64_t i2 = std::min(cols, i1 + block), bn = i2 - i1;
    for (int64_t jj = 0; jj < bn; ++jj) {
      for (int64_t kk = 0; kk < bn; ++kk) ub[at(jj * bn + kk)] = U(i1 + jj, i1 + kk);
    }
    // Column by column within the block, each row on its own: a column's error reaches the
    // rest of the block's columns of the same row.
    ForRows(pool, rows, [&](int64_t r0, int64_t r1) {
      std::vector<float> gw(at(span));
      for (int64_t r = r0; r < r1; ++r) {
        float* wr = W.data() + r * cols;
        for (int64_t jj = 0; jj < bn; ++jj) {
          const int64_t j = i1 + jj, col = perm[at(j)];
          if (const int64_t s = fit_at[at(j)]; s >= 0) {
            // This group's (or K-quant super-block's) scales, from its weights as they are now
            // (earlier columns' errors already folded in).
            for (int64_t k = 0; k < span; ++k) gw[at(k)] = wr[pos[at(s * span + k)]];
            FitSpan(f, gw.data(), options.fit, fac.imp.data() + s * span,
                    &out.params[at(r * groups + s * span / f.group)],
                    f.super > 0 ? &out.supers[at(r * spans + s)] : nullptr);
          }
          const GroupParams& p = out.params[at(r * groups + col / f.group)];
          const float wv = wr[j];
          const int8_t q = QuantizeValue(f, p, wv);
          out.q[at(r * cols + col)] = q;
          const float e = (wv - DequantizeValue(f, p, q)) / ub[at(jj * bn + jj)];
          err[at(r * bn + jj)] = e;
          const float* urow = ub.data() + jj * bn;
          for (int64_t kk = jj + 1; kk < bn; ++kk) wr[i1 + kk] -= e * urow[kk];
        }
      }
    });
    // ... and the block's error over every later column, in one product:
    // W[:, i2:] -= Err * U[i1:i2, i2:], U[i1:i2, i2:] read as the transpose of u's row-major view.
    if (i2 < cols) {
      dense::GemmNT(rows, cols - i2, bn, -1.0f, err.data(), bn, u.data() + i2 * cols + i1, cols,
                    1.0f, W.data() + i2, cols);
    }
  }
  return result;
}

OutputError MeasureOutputError(const float* w, const float* wq, int64_t rows, int64_t cols,
                               const float* h) {
  // sum over rows of d H d^T, with d = wq - w and with d = w.
  std::vector<float> d(static_cast<size_t>(rows * cols)), dh(d.size());
  auto quadratic = [&](const float* m) {
    dense::GemmNN(rows, cols, cols, 1.0f, m, cols, h, cols, 0.0f, dh.data(), cols);
    double s = 0;
    for (size_t i = 0; i < dh.size(); ++i) s += static_cast<double>(dh[i]) * m[i];
    return s;
  };
  for (size_t i = 0; i < d.size(); ++i) d[i] = wq[i] - w[i];
  OutputError e;
  e.error = quadratic(d.data());
  e.energy = quadratic(w);
  return e;
}

}  // namespace frugal
