// The quantizer's OpenBLAS algebra (quant/dense.h) against plain loops, and GPTQ's determinism:
// the same output twice at one thread count, and within float tolerance across counts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/thread_pool.h"
#include "quant/dense.h"
#include "quant/gptq.h"
#include "quant/quant_format.h"

namespace frugal {
namespace {

std::vector<float> Gaussian(int64_t n, unsigned seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

// x^T x in double, [n][n].
std::vector<double> GramRef(const std::vector<float>& x, int64_t rows, int64_t n) {
  std::vector<double> h(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = 0; b < n; ++b)
        h[static_cast<size_t>(a * n + b)] +=
            static_cast<double>(x[static_cast<size_t>(i * n + a)]) *
            x[static_cast<size_t>(i * n + b)];
    }
  }
  return h;
}

// Awkward sizes: below, at and above OpenBLAS's blocking.
TEST(Dense, GramIsXtXAfterMirroring) {
  for (int64_t n : {1, 7, 33, 129}) {
    const int64_t rows = 50;
    const std::vector<float> x = Gaussian(rows * n, static_cast<unsigned>(n));
    std::vector<float> h(static_cast<size_t>(n * n), 0.0f);
    dense::AddGramLower(x.data(), 20, n, h.data());  // two calls sum
    dense::AddGramLower(x.data() + 20 * n, rows - 20, n, h.data());
    dense::CopyLowerToUpper(h.data(), n);
    const std::vector<double> ref = GramRef(x, rows, n);
    for (size_t i = 0; i < h.size(); ++i) ASSERT_NEAR(h[i], ref[i], 1e-3) << n << " " << i;
  }
}

TEST(Dense, UpperFactorOfInverse) {
  for (int64_t n : {1, 2, 7, 33, 130}) {
    const int64_t rows = 2 * n + 8;
    const std::vector<float> x = Gaussian(rows * n, 100 + static_cast<unsigned>(n));
    const std::vector<double> m = GramRef(x, rows, n);
    std::vector<float> a(m.begin(), m.end());
    ASSERT_TRUE(dense::UpperFactorOfInverse(a.data(), n));
    // U upper with a positive diagonal, and M U^T U = I.
    auto u = [&](int64_t i, int64_t j) {
      return static_cast<double>(a[static_cast<size_t>(i + j * n)]);
    };
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_GT(u(i, i), 0);
      for (int64_t j = 0; j < i; ++j) ASSERT_EQ(u(i, j), 0) << i << " " << j;
    }
    std::vector<double> inv(static_cast<size_t>(n * n), 0.0);  // U^T U
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k <= std::min(i, j); ++k) s += u(k, i) * u(k, j);
        inv[static_cast<size_t>(i * n + j)] = s;
      }
    }
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k)
          s += m[static_cast<size_t>(i * n + k)] * inv[static_cast<size_t>(k * n + j)];
        worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
    EXPECT_LT(worst, 1e-3) << n;
  }
}

TEST(Dense, NotPositiveDefiniteIsRefused) {
  std::vector<float> a = {1, 2, 2, 1};  // eigenvalues 3 and -1
  EXPECT_FALSE(dense::UpperFactorOfInverse(a.data(), 2));
}

TEST(Dense, GemmMatchesLoops) {
  const int64_t m = 19, n = 37, k = 23;
  const std::vector<float> a = Gaussian(m * k, 1), b = Gaussian(n * k, 2), c0 = Gaussian(m * n, 3);
  std::vector<float> nt = c0, nn = c0;
  dense::GemmNT(m, n, k, -1.0f, a.data(), k, b.data(), k, 1.0f, nt.data(), n);  // b as [n][k]
  dense::GemmNN(m, n, k, 2.0f, a.data(), k, b.data(), n, 0.5f, nn.data(), n);   // b as [k][n]
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double snt = 0, snn = 0;
      for (int64_t t = 0; t < k; ++t) {
        snt += static_cast<double>(a[static_cast<size_t>(i * k + t)]) *
               b[static_cast<size_t>(j * k + t)];
        snn += static_cast<double>(a[static_cast<size_t>(i * k + t)]) *
               b[static_cast<size_t>(t * n + j)];
      }
      const size_t at = static_cast<size_t>(i * n + j);
      EXPECT_NEAR(nt[at], c0[at] - snt, 1e-4);
      EXPECT_NEAR(nn[at], 0.5 * c0[at] + 2 * snn, 1e-4);
    }
  }
}

// A small random layer: 64 x 512 weights, a Hessian from 1024 correlated inputs.
struct Layer {
  static constexpr int64_t rows = 64, cols = 512;
  std::vector<float> w, h;
  Layer() : w(Gaussian(rows * cols, 7, 0.02f)), h(static_cast<size_t>(cols * cols), 0.0f) {
    std::vector<float> x = Gaussian(1024 * cols, 8);
    for (int64_t i = 0; i < 1024; ++i) {  // neighbouring inputs correlated
      for (int64_t c = 1; c < cols; ++c)
        x[static_cast<size_t>(i * cols + c)] += 0.8f * x[static_cast<size_t>(i * cols + c - 1)];
    }
    dense::AddGramLower(x.data(), 1024, cols, h.data());
    dense::CopyLowerToUpper(h.data(), cols);
  }
};

QuantizedMatrix RunGptq(const Layer& l, int threads) {
  dense::SetThreads(threads);
  ThreadPool pool(threads);
  GptqOptions o;
  o.fit = ScaleFit::kSearch;
  o.block = 128;  // several lazy blocks
  auto g = QuantizeGptq(*QuantFormat::Of(TensorType::kI4A_G128, l.cols), l.w.data(), l.rows, l.cols,
                        l.h.data(), o, &pool);
  EXPECT_TRUE(g.ok());
  return g.ok() ? std::move(g->matrix) : QuantizedMatrix{};
}

TEST(Dense, GptqIsDeterministicPerThreadCountAndCloseAcrossCounts) {
  const Layer l;
  const QuantizedMatrix one_a = RunGptq(l, 1), one_b = RunGptq(l, 1);
  const QuantizedMatrix two_a = RunGptq(l, 2), two_b = RunGptq(l, 2);
  // (a) identical output twice at the same count.
  EXPECT_EQ(one_a.q, one_b.q);
  EXPECT_EQ(two_a.q, two_b.q);
  EXPECT_EQ(one_a.Dequantize(), one_b.Dequantize());
  EXPECT_EQ(two_a.Dequantize(), two_b.Dequantize());
  // (b) close across counts: float rounding may move a value across a rounding boundary, which
  // changes an integer by one; the output errors agree closely.
  ASSERT_EQ(one_a.q.size(), two_a.q.size());
  int64_t differ = 0;
  for (size_t i = 0; i < one_a.q.size(); ++i) {
    ASSERT_LE(std::abs(one_a.q[i] - two_a.q[i]), 1) << i;
    differ += one_a.q[i] != two_a.q[i];
  }
  EXPECT_LT(differ, static_cast<int64_t>(one_a.q.size()) / 100);
  const OutputError e1 =
      MeasureOutputError(l.w.data(), one_a.Dequantize().data(), l.rows, l.cols, l.h.data());
  const OutputError e2 =
      MeasureOutputError(l.w.data(), two_a.Dequantize().data(), l.rows, l.cols, l.h.data());
  EXPECT_NEAR(e1.relative(), e2.relative(), 0.01 * e1.relative());
  // And GPTQ still does its job here: under RTN's output error.
  const OutputError rtn =
      MeasureOutputError(l.w.data(),
                         QuantizeRtn(*QuantFormat::Of(TensorType::kI4A_G128, l.cols), l.w.data(),
                                     l.rows, l.cols, ScaleFit::kSearch)
                             .Dequantize()
                             .data(),
                         l.rows, l.cols, l.h.data());
  EXPECT_LT(e1.error, 0.8 * rtn.error);
  dense::SetThreads(ThreadPool::DefaultThreads());
}

}  // namespace
}  // namespace frugal
