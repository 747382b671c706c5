// --target vllm's parts: the integer-zero fit (QuantFormat::integer_zero), UnpackRows as the
// inverse of PackRows, GPTQ's v1 packing (PackGptq) against hand-packed words and against
// Frugal's values, and the safetensors writer read back by Frugal's reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/fp16.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "kernels/quantize.h"
#include "quant/gptq_export.h"
#include "quant/quant_format.h"

namespace frugal {
namespace {

float WeightedError(const QuantFormat& f, const GroupParams& p, const std::vector<float>& w,
                    const std::vector<float>& a) {
  float e = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const float d = DequantizeValue(f, p, QuantizeValue(f, p, w[i])) - w[i];
    e += a[i] * d * d;
  }
  return e;
}

// Groups of every shape the fit meets: centred, one-sided (above or below zero), skewed,
// constant, with outliers, tiny and large.
std::vector<std::vector<float>> TestGroups(int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> groups;
  for (int k = 0; k < 200; ++k) {
    std::vector<float> g(static_cast<size_t>(n));
    const float scale = std::pow(10.0f, static_cast<float>(k % 7) - 4.0f);
    for (float& x : g) x = scale * normal(rng);
    if (k % 5 == 1) {
      for (float& x : g) x = std::fabs(x) + scale;  // all above zero
    } else if (k % 5 == 2) {
      for (float& x : g) x = -std::fabs(x) - 0.5f * scale;  // all below
    } else if (k % 5 == 3) {
      g[static_cast<size_t>(k % n)] = 12 * scale;  // an outlier
    }
    groups.push_back(g);
  }
  groups.push_back(std::vector<float>(static_cast<size_t>(n), 0.3f));
  groups.push_back(std::vector<float>(static_cast<size_t>(n), -2.0f));
  groups.push_back(std::vector<float>(static_cast<size_t>(n), 0.0f));
  return groups;
}

TEST(IntegerZeroFit, ZeroIsAnIntegerInRangeAndTheOffsetIsExact) {
  for (const TensorType type : {TensorType::kI4A_G32, TensorType::kI4A_G128}) {
    QuantFormat f = *QuantFormat::Of(type, 256);
    f.integer_zero = true;
    for (const ScaleFit fit : {ScaleFit::kMinMax, ScaleFit::kSearch}) {
      for (const std::vector<float>& w : TestGroups(f.group)) {
        const GroupParams p = FitGroup(f, w.data(), f.group, fit);
        EXPECT_EQ(p.d, RoundScale(type, p.d));  // the stored fp16 scale ...
        EXPECT_EQ(p.m, RoundScale(type, p.m));  // ... and offset: nothing rounds in the file
        const std::optional<int> z = IntegerZeroOf(p);
        ASSERT_TRUE(z.has_value()) << p.d << " " << p.m;
        EXPECT_GE(*z, 1);
        EXPECT_LE(*z, 15);
        const float zf = static_cast<float>(*z);
        EXPECT_EQ(p.m, -zf * p.d);
        for (int q = 0; q <= 15; ++q) {  // q * d + m == (q - z) * d, exactly in float
          EXPECT_EQ(DequantizeValue(f, p, static_cast<int8_t>(q)),
                    (static_cast<float>(q) - zf) * p.d);
        }
      }
    }
  }
}

TEST(IntegerZeroFit, SearchIsNeverWorseThanMinMaxOnTheStoredGrid) {
  QuantFormat f = *QuantFormat::Of(TensorType::kI4A_G64, 64);
  f.integer_zero = true;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 4.0f);
  int better = 0;
  for (const std::vector<float>& w : TestGroups(f.group)) {
    std::vector<float> a(w.size());
    for (float& x : a) x = u(rng);
    const GroupParams mm = FitGroup(f, w.data(), f.group, ScaleFit::kMinMax, a.data());
    const GroupParams se = FitGroup(f, w.data(), f.group, ScaleFit::kSearch, a.data());
    const float e_mm = WeightedError(f, mm, w, a), e_se = WeightedError(f, se, w, a);
    EXPECT_LE(e_se, e_mm);
    better += e_se < 0.99f * e_mm;
  }
  EXPECT_GT(better, 100);  // and it does search: most groups gain
}

TEST(IntegerZeroFit, FrugalTargetKeepsItsFloatOffsets) {
  // Without the flag the fit is the one Frugal's own files have always had: min-max is
  // MinMaxParams, whose offset is the group's minimum (no zero point).
  const QuantFormat f = *QuantFormat::Of(TensorType::kI4A_G32, 32);
  std::vector<float> w(32);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.37f + 0.011f * static_cast<float>(i * i % 7);
  const GroupParams p = FitGroup(f, w.data(), 32, ScaleFit::kMinMax);
  const GroupParams want = MinMaxParams(TensorType::kI4A_G32, w.data(), 32);
  EXPECT_EQ(p.d, want.d);
  EXPECT_EQ(p.m, want.m);
  EXPECT_FALSE(IntegerZeroOf(p).has_value());
}

TEST(UnpackRows, InvertsPackRows) {
  std::mt19937 rng(11);
  for (const TensorType type :
       {TensorType::kI8_C, TensorType::kI8_G64, TensorType::kI4S_G32, TensorType::kI4A_G128}) {
    const int64_t rows = 16, cols = 256, groups = GroupsPerRow(type, cols);
    const IntKind kind = IntKindOf(type);
    std::vector<int8_t> q(static_cast<size_t>(rows * cols));
    std::uniform_int_distribution<int> level(kind == IntKind::kInt8 ? -127 : 0,
                                             kind == IntKind::kInt8 ? 127 : 15);
    for (int8_t& x : q) x = static_cast<int8_t>(level(rng));
    std::vector<float> scale(static_cast<size_t>(rows * groups)), offset;
    std::normal_distribution<float> normal;
    for (float& s : scale) s = RoundScale(type, std::fabs(normal(rng)) + 0.01f);
    if (kind == IntKind::kInt4Asym) {
      offset.resize(scale.size());
      for (float& m : offset) m = RoundScale(type, normal(rng));
    }
    std::vector<uint8_t> packed(static_cast<size_t>(rows) * *RowBytes(type, cols));
    ASSERT_TRUE(PackRows(type, rows, cols, q.data(), scale.data(),
                         offset.empty() ? nullptr : offset.data(), packed.data())
                    .ok());
    std::vector<int8_t> q2(q.size());
    std::vector<float> scale2(scale.size()), offset2(offset.size());
    ASSERT_TRUE(UnpackRows(type, rows, cols, packed.data(), q2.data(), scale2.data(),
                           offset2.empty() ? nullptr : offset2.data())
                    .ok());
    EXPECT_EQ(q2, q) << TypeName(type);
    EXPECT_EQ(scale2, scale) << TypeName(type);
    EXPECT_EQ(offset2, offset) << TypeName(type);
  }
}

// The published v1 reading, written out: weight i of output o and its group's zero.
float GptqValue(const GptqLinear& g, int64_t o, int64_t i) {
  const int bits = g.scheme.bits, pack = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const auto word = static_cast<uint32_t>(g.qweight[static_cast<size_t>((i / pack) * g.out + o)]);
  const uint32_t q = (word >> (bits * (i % pack))) & mask;
  const int64_t grp = g.g_idx[static_cast<size_t>(i)];
  const auto zw =
      static_cast<uint32_t>(g.qzeros[static_cast<size_t>(grp * (g.out / pack) + o / pack)]);
  const uint32_t z = ((zw >> (bits * (o % pack))) & mask) + 1;
  const float s = Fp16ToFp32(g.scales[static_cast<size_t>(grp * g.out + o)]);
  return s * (static_cast<float>(q) - static_cast<float>(z));
}

TEST(PackGptq, HandPackedWords) {
  // 8 outputs x 32 inputs, INT4 asymmetric g32: output o has zero o + 1 and inputs q = i % 16.
  const int64_t rows = 8, cols = 32;
  std::vector<int8_t> q(static_cast<size_t>(rows * cols));
  std::vector<float> d(rows), m(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      q[static_cast<size_t>(r * cols + c)] = static_cast<int8_t>(c % 16);
    d[static_cast<size_t>(r)] = 0.5f;
    m[static_cast<size_t>(r)] = -0.5f * static_cast<float>(r + 1);
  }
  const GptqLinear g = *PackGptq(TensorType::kI4A_G32, rows, cols, q.data(), d.data(), m.data());
  EXPECT_EQ(g.scheme.Name(), "gptq int4 g32 asym");
  ASSERT_EQ(g.qweight.size(), 4u * 8u);  // [32 / 8][8]
  // Inputs 0..7 of every output: nibbles 0..7, the first lowest.
  EXPECT_EQ(static_cast<uint32_t>(g.qweight[0]), 0x76543210u);
  EXPECT_EQ(static_cast<uint32_t>(g.qweight[1 * 8 + 5]), 0xfedcba98u);  // inputs 8..15
  ASSERT_EQ(g.qzeros.size(), 1u);  // [1][8 / 8]: zero - 1 = o for output o
  EXPECT_EQ(static_cast<uint32_t>(g.qzeros[0]), 0x76543210u);
  EXPECT_EQ(g.scales[3], Fp32ToFp16(0.5f));
  EXPECT_EQ(g.g_idx, std::vector<int32_t>(32, 0));
  EXPECT_EQ(GptqValue(g, 2, 5), (5.0f - 3.0f) * 0.5f);
}

TEST(PackGptq, EveryKindKeepsFrugalsValues) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (const TensorType type :
       {TensorType::kI8_G32, TensorType::kI8_G128, TensorType::kI4S_G64, TensorType::kI4A_G128}) {
    const int64_t rows = 24, cols = 256;
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& x : w) x = normal(rng);
    QuantFormat f = *QuantFormat::Of(type, cols);
    f.integer_zero = true;
    const QuantizedMatrix qm = QuantizeRtn(f, w.data(), rows, cols, ScaleFit::kSearch);
    std::vector<float> d(qm.params.size()), m(qm.params.size());
    for (size_t i = 0; i < qm.params.size(); ++i) d[i] = qm.params[i].d, m[i] = qm.params[i].m;
    const bool asym = f.kind == IntKind::kInt4Asym;
    const GptqLinear g =
        *PackGptq(type, rows, cols, qm.q.data(), d.data(), asym ? m.data() : nullptr);
    EXPECT_EQ(g.scheme.sym, !asym);
    EXPECT_EQ(g.scheme.bits, f.kind == IntKind::kInt8 ? 8 : 4);
    const std::vector<float> want = qm.Dequantize();
    for (int64_t o = 0; o < rows; ++o) {
      for (int64_t i = 0; i < cols; ++i) {
        ASSERT_EQ(GptqValue(g, o, i), want[static_cast<size_t>(o * cols + i)])
            << TypeName(type) << " " << o << " " << i;
      }
    }
  }
}

TEST(PackGptq, RefusesWhatGptqCannotHold) {
  std::vector<int8_t> q(8 * 32, 3);
  std::vector<float> d(8, 0.25f), m(8, -0.3f);  // a float offset: no integer zero point
  EXPECT_FALSE(PackGptq(TensorType::kI4A_G32, 8, 32, q.data(), d.data(), m.data()).ok());
  EXPECT_FALSE(PackGptq(TensorType::kI8_C, 8, 32, q.data(), d.data(), nullptr).ok());
  EXPECT_FALSE(GptqSchemeOf(TensorType::kF16).ok());
}

TEST(SafetensorsWriter, ReadBackByTheReader) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("frugal_st_" + std::to_string(::getpid())))
          .string();
  SafetensorsWriter w;
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<uint8_t> ab(a.size() * 4), half(3 * 2, 0x3c), ints(5 * 4, 1);
  std::memcpy(ab.data(), a.data(), ab.size());
  ASSERT_TRUE(w.Add("h", "F16", {3}, half).ok());  // 6 bytes first: reordered by element size
  ASSERT_TRUE(w.Add("a", "F32", {2, 3}, ab).ok());
  ASSERT_TRUE(w.Add("i", "I32", {5}, ints).ok());
  EXPECT_FALSE(w.Add("bad", "F32", {2}, half).ok());  // wrong size
  EXPECT_FALSE(w.Add("a", "F32", {2, 3}, ab).ok());   // twice
  ASSERT_TRUE(w.Write(path).ok());
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const TensorView* t = (*f)->FindTensor("a");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne[0], 3);
  EXPECT_EQ(t->ne[1], 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 4, 0u);
  EXPECT_EQ(std::memcmp(t->data, a.data(), ab.size()), 0);
  ASSERT_NE((*f)->FindTensor("h"), nullptr);
  EXPECT_EQ(Fp16ToFp32(*reinterpret_cast<const uint16_t*>((*f)->FindTensor("h")->data)),
            Fp16ToFp32(0x3c3c));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace frugal
