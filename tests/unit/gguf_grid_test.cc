// The GGUF grids frugal quantize fits itself (src/quant/gguf_grid.h): packed blocks read back by
// the GGUF reference dequantizer give exactly QuantizedMatrix::Dequantize's floats, the stored
// scales are in range, and GPTQ on these grids lowers the output error of their RTN.
#include "quant/gguf_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/fp16.h"
#include "kernels/kernels.h"
#include "quant/gptq.h"
#include "quant/recipe.h"

namespace frugal {
namespace {

constexpr TensorType kGrids[] = {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                                 TensorType::kQ5_0, TensorType::kQ5_1};

// Gaussian weights with a few outliers and an all-zero row (degenerate scales).
std::vector<float> Weights(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, 0.02f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = nd(rng);
  for (int64_t i = 0; i < rows * cols; i += 97) w[static_cast<size_t>(i)] *= 8;     // outliers
  std::fill_n(w.begin() + cols, cols, 0.0f);                                        // row 1 zero
  for (int64_t c = 0; c < cols; ++c) w[static_cast<size_t>(2 * cols + c)] = 0.01f;  // row 2 flat
  return w;
}

// The floats the GGUF reference dequantizer reads from the packed bytes.
std::vector<float> ReadBack(const QuantizedMatrix& m) {
  auto bytes = m.Pack();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols));
  DequantizeTensor(TensorView::Matrix(m.format.type, m.cols, m.rows, bytes->data(), bytes->size()),
                   out.data());
  return out;
}

void ExpectBitEqual(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    ASSERT_EQ(x, y) << what << " element " << i << ": " << a[i] << " vs " << b[i];
  }
}

double SquaredError(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
  return e;
}

// X^T X of n inputs whose channels have very different energies and are correlated.
std::vector<float> Hessian(int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  const int64_t n = 1024;
  std::vector<float> x(static_cast<size_t>(n * cols)), h(static_cast<size_t>(cols * cols), 0);
  for (int64_t t = 0; t < n; ++t) {
    float prev = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = 0.6f * prev + nd(rng) * (c % 7 == 0 ? 4.0f : 1.0f);
      x[static_cast<size_t>(t * cols + c)] = v;
      prev = v;
    }
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t a = 0; a < cols; ++a)
      for (int64_t b = 0; b < cols; ++b)
        h[static_cast<size_t>(a * cols + b)] +=
            x[static_cast<size_t>(t * cols + a)] * x[static_cast<size_t>(t * cols + b)];
  return h;
}

TEST(GgufGrid, PackedBlocksReadBackAsTheQuantizedValuesBitForBit) {
  const int64_t rows = 5, cols = 512;
  const std::vector<float> w = Weights(rows, cols, 7);
  for (TensorType t : kGrids) {
    auto f = QuantFormat::Of(t, cols);
    ASSERT_TRUE(f.ok()) << f.status().message();
    for (ScaleFit fit : {ScaleFit::kMinMax, ScaleFit::kSearch}) {
      const QuantizedMatrix m = QuantizeRtn(*f, w.data(), rows, cols, fit);
      ExpectBitEqual(ReadBack(m), m.Dequantize(), TypeName(t).c_str());
    }
  }
}

TEST(GgufGrid, StoredScalesAreInRangeAndGiveTheEffectiveParameters) {
  const int64_t rows = 4, cols = 256;
  const std::vector<float> w = Weights(rows, cols, 11);
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    const QuantFormat f = *QuantFormat::Of(t, cols);
    const QuantizedMatrix m = QuantizeRtn(f, w.data(), rows, cols);
    ASSERT_EQ(m.supers.size(), static_cast<size_t>(rows));
    // Stored integers: [0, 15] / [0, 31] for Q4_K / Q5_K, [-32, 31] for Q6_K.
    const int lo = t == TensorType::kQ6_K ? -32 : 0, hi = t == TensorType::kQ4_K ? 15 : 31;
    for (int64_t r = 0; r < rows; ++r) {
      const SuperParams& sp = m.supers[static_cast<size_t>(r)];
      const float d = Fp16ToFp32(sp.d), dmin = Fp16ToFp32(sp.dmin);
      for (int64_t j = 0; j < f.super / f.group; ++j) {
        const GroupParams& p = m.params[static_cast<size_t>(r * (cols / f.group) + j)];
        if (t == TensorType::kQ6_K) {
          EXPECT_EQ(p.d, d * static_cast<float>(sp.sc[j]));
        } else {
          EXPECT_GE(sp.sc[j], 0);
          EXPECT_LE(sp.sc[j], 63);
          EXPECT_LE(sp.mn[j], 63);
          EXPECT_EQ(p.d, d * static_cast<float>(sp.sc[j]));
          EXPECT_EQ(p.m, -(dmin * static_cast<float>(sp.mn[j])));
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        const int q = m.q[static_cast<size_t>(r * cols + c)];
        EXPECT_GE(q, lo);
        EXPECT_LE(q, hi);
      }
    }
  }
}

TEST(GgufGrid, MoreBitsLessErrorAndTheZeroRowStaysZero) {
  const int64_t rows = 6, cols = 512;
  const std::vector<float> w = Weights(rows, cols, 5);
  double prev = INFINITY;
  for (TensorType t : {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    const QuantizedMatrix m = QuantizeRtn(*QuantFormat::Of(t, cols), w.data(), rows, cols);
    const std::vector<float> v = m.Dequantize();
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(v[static_cast<size_t>(cols + c)], 0.0f);
    const double e = SquaredError(v, w);
    EXPECT_LT(e, 0.5 * prev) << TypeName(t);  // one more bit: about a quarter of the error
    prev = e;
  }
  // Q4_K's 6-bit sub-scales cost little against a free fp16 scale and offset per 32 (I4A_G32).
  const double q4k = SquaredError(
      QuantizeRtn(*QuantFormat::Of(TensorType::kQ4_K, cols), w.data(), rows, cols).Dequantize(), w);
  const double i4a = SquaredError(QuantizeRtn(*QuantFormat::Of(TensorType::kI4A_G32, cols),
                                              w.data(), rows, cols, ScaleFit::kSearch)
                                      .Dequantize(),
                                  w);
  EXPECT_LT(q4k, 1.25 * i4a);
}

TEST(GgufGrid, GptqLowersTheOutputErrorOfRtnOnEveryGrid) {
  const int64_t rows = 16, cols = 512;
  const std::vector<float> w = Weights(rows, cols, 3);
  const std::vector<float> h = Hessian(cols, 9);
  for (TensorType t : kGrids) {
    const QuantFormat f = *QuantFormat::Of(t, cols);
    const OutputError rtn = MeasureOutputError(
        w.data(), QuantizeRtn(f, w.data(), rows, cols, ScaleFit::kSearch).Dequantize().data(), rows,
        cols, h.data());
    for (bool act_order : {true, false}) {
      GptqOptions o;
      o.act_order = act_order;
      o.block = 128;
      o.fit = ScaleFit::kSearch;
      auto g = QuantizeGptq(f, w.data(), rows, cols, h.data(), o);
      ASSERT_TRUE(g.ok()) << g.status().message();
      const OutputError e =
          MeasureOutputError(w.data(), g->matrix.Dequantize().data(), rows, cols, h.data());
      EXPECT_LT(e.error, 0.8 * rtn.error) << TypeName(t) << " act_order " << act_order;
      ExpectBitEqual(ReadBack(g->matrix), g->matrix.Dequantize(), TypeName(t).c_str());
    }
  }
}

TEST(GgufGrid, RowsThatDoNotDivideAreRefused) {
  EXPECT_FALSE(QuantFormat::Of(TensorType::kQ4_K, 576).ok());
  EXPECT_FALSE(QuantFormat::Of(TensorType::kQ5_0, 48).ok());
  EXPECT_TRUE(QuantFormat::Of(TensorType::kQ5_0, 576).ok());
}

TEST(GgufGrid, RecipeTypesAndLlamaQuantizesFallbacks) {
  auto r = ParseRecipe(R"(name: k
rules:
  - {match: "a.weight", type: q4_k}
  - {match: "b.weight", type: q5_k}
  - {match: "c.weight", type: q6_k}
  - {match: "d.weight", type: q5_0}
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto choose = [&](const char* name, int64_t cols, int64_t rows) {
    return ChooseType(*r, name, 2, cols, rows, TensorType::kF32);
  };
  EXPECT_EQ(choose("a.weight", 1536, 576).type, TensorType::kQ4_K);
  EXPECT_TRUE(choose("a.weight", 1536, 576).quantize);
  EXPECT_EQ(choose("a.weight", 576, 1536).type, TensorType::kQ5_0);
  EXPECT_NE(choose("a.weight", 576, 1536).note.find("not a multiple of 256"), std::string::npos);
  EXPECT_EQ(choose("b.weight", 576, 1536).type, TensorType::kQ5_1);
  EXPECT_EQ(choose("c.weight", 512, 3).type, TensorType::kQ6_K);     // no tiles: any row count
  EXPECT_EQ(choose("c.weight", 576, 64).type, TensorType::kI8_G32);  // Q8_0 in llama.cpp's file
  EXPECT_EQ(choose("c.weight", 576, 3).type, TensorType::kF16);
  EXPECT_EQ(choose("d.weight", 48, 8).type, TensorType::kF16);
  EXPECT_FALSE(ParseRecipe("name: x\nrules:\n  - {match: \"*\", type: q3_k}\n").ok());
}

}  // namespace
}  // namespace frugal
