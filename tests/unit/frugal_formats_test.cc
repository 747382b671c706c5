// Frugal's own weight formats (docs/formats.md): layout sizes, what the bytes mean, RTN
// quantization error, the SIMD kernels against the scalar oracle at every CPU level and at
// awkward sizes, and the format-version check of the GGUF reader. Error budgets:
//  - dequantization: bit-identical to the oracle at every level, and equal to the formula of
//    docs/formats.md computed here from the integers and scales that were packed;
//  - RTN: every weight within half a quantization step (d / 2) of its original;
//  - INT8-activation dots: oracle within the activation-rounding bound of the exact dot of the
//    dequantized weights; SIMD within 1e-5 x (sum|w x| + rounding) of the oracle.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "common/fp16.h"
#include "common/sha256.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "testing/gguf_builder.h"

namespace frugal {
namespace {

const TensorType kFrugalTypes[] = {
    TensorType::kI8_C,    TensorType::kI8_G32,  TensorType::kI8_G64,   TensorType::kI8_G128,
    TensorType::kI4S_G32, TensorType::kI4S_G64, TensorType::kI4S_G128, TensorType::kI4A_G32,
    TensorType::kI4A_G64, TensorType::kI4A_G128};

int64_t Group(TensorType type) {
  const int g = GetTypeInfo(type)->group_size;
  return g == 0 ? kQK : g;  // per channel: any multiple of 32 inputs
}

bool IsAsym(TensorType t) {
  return t == TensorType::kI4A_G32 || t == TensorType::kI4A_G64 || t == TensorType::kI4A_G128;
}
bool IsI4Sym(TensorType t) {
  return t == TensorType::kI4S_G32 || t == TensorType::kI4S_G64 || t == TensorType::kI4S_G128;
}

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d, m;
  std::vector<uint8_t> bytes;
};

// Random integers and scales, packed.
Quantized RandomPacked(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const int64_t groups = GroupsPerRow(type, cols);
  Quantized p;
  p.q.resize(static_cast<size_t>(rows * cols));
  const bool int4 = GetTypeInfo(type)->bits == 4;
  std::uniform_int_distribution<int> level(int4 ? 0 : -127, int4 ? 15 : 127);
  for (auto& v : p.q) v = static_cast<int8_t>(level(rng));
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  p.d.resize(static_cast<size_t>(rows * groups));
  for (auto& v : p.d) v = RoundScale(type, scale(rng));
  if (IsAsym(type)) {
    p.m.resize(p.d.size());
    for (auto& v : p.m) v = RoundScale(type, -scale(rng) * 8);
  }
  p.bytes.resize(static_cast<size_t>(rows) * *RowBytes(type, cols));
  EXPECT_TRUE(PackRows(type, rows, cols, p.q.data(), p.d.data(), p.m.empty() ? nullptr : p.m.data(),
                       p.bytes.data())
                  .ok());
  return p;
}

// The value docs/formats.md gives weight (r, c).
float Expected(TensorType type, const Quantized& p, int64_t cols, int64_t r, int64_t c) {
  const int64_t groups = GroupsPerRow(type, cols);
  const size_t s = static_cast<size_t>(r * groups + c / (cols / groups));
  const int q = p.q[static_cast<size_t>(r * cols + c)];
  if (IsAsym(type)) return static_cast<float>(q) * p.d[s] + p.m[s];
  if (IsI4Sym(type)) return static_cast<float>(q - 8) * p.d[s];
  return static_cast<float>(q) * p.d[s];
}

TEST(FrugalFormatsTest, SizesAndBitsPerWeight) {
  // Bytes per row of 4096 inputs, and so bits per weight, as docs/formats.md states them.
  EXPECT_EQ(*RowBytes(TensorType::kI8_C, 4096), 4096u + 4u);
  EXPECT_EQ(*RowBytes(TensorType::kI8_G32, 4096), 4096u + 2u * 128);
  EXPECT_EQ(*RowBytes(TensorType::kI8_G128, 4096), 4096u + 2u * 32);
  EXPECT_EQ(*RowBytes(TensorType::kI4S_G32, 4096), 2048u + 2u * 128);  // 4.5 bits
  EXPECT_EQ(*RowBytes(TensorType::kI4S_G128, 4096), 2048u + 2u * 32);  // 4.125 bits
  EXPECT_EQ(*RowBytes(TensorType::kI4A_G64, 4096), 2048u + 4u * 64);   // 4.5 bits
  EXPECT_EQ(*RowBytes(TensorType::kI4A_G128, 4096), 2048u + 4u * 32);  // 4.25 bits
  EXPECT_FALSE(RowBytes(TensorType::kI4S_G128, 576).ok());             // 576 = 4.5 groups of 128
  EXPECT_TRUE(RowBytes(TensorType::kI4S_G64, 576).ok());
  for (TensorType t : kFrugalTypes) {
    EXPECT_TRUE(IsFrugalType(t));
    EXPECT_EQ(GetTypeInfo(t)->tile_rows, kTileRows) << TypeName(t);
  }
  EXPECT_FALSE(IsFrugalType(TensorType::kQ4_0));
}

TEST(FrugalFormatsTest, DequantizeIsTheDocumentedFormulaAtEveryLevel) {
  std::mt19937 rng(1);
  for (TensorType type : kFrugalTypes) {
    for (int64_t blocks : {1, 3, 7}) {
      const int64_t cols = blocks * Group(type), rows = 16;
      const Quantized p = RandomPacked(type, rows, cols, rng);
      for (CpuLevel level : SupportedCpuLevels()) {
        const KernelTraits* k = GetKernelTraits(type, level);
        ASSERT_NE(k, nullptr) << TypeName(type) << " " << CpuLevelName(level);
        ASSERT_NE(k->dequantize_tile, nullptr);
        EXPECT_EQ(k->dequantize_row, nullptr);
        std::vector<float> out(static_cast<size_t>(kTileRows * cols));
        const size_t tile_bytes = *RowBytes(type, cols) * kTileRows;
        for (int64_t t = 0; t < rows / kTileRows; ++t) {
          k->dequantize_tile(p.bytes.data() + static_cast<size_t>(t) * tile_bytes, out.data(),
                             cols);
          for (int r = 0; r < kTileRows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              ASSERT_EQ(out[static_cast<size_t>(r * cols + c)],
                        Expected(type, p, cols, t * kTileRows + r, c))
                  << TypeName(type) << " " << CpuLevelName(level) << " row " << t * kTileRows + r
                  << " col " << c;
            }
          }
        }
      }
    }
  }
}

TEST(FrugalFormatsTest, SimdDequantizeBitIdenticalAtAwkwardSizes) {
  std::mt19937 rng(2);
  for (TensorType type : kFrugalTypes) {
    for (int64_t blocks : {1, 7, 31, 33, 127, 129}) {
      const int64_t cols = blocks * Group(type);
      std::vector<uint8_t> tile(*RowBytes(type, cols) * kTileRows);
      for (auto& b : tile) b = static_cast<uint8_t>(rng());
      // Random bytes make random fp16 scales, NaN and Inf included: they must agree too, bit
      // for bit, except NaN payloads (which operand's NaN an addition returns is the compiler's
      // choice of operand order, not the format's).
      std::vector<float> a(static_cast<size_t>(kTileRows * cols)), b(a.size());
      GetKernelTraits(type, CpuLevel::kScalar)->dequantize_tile(tile.data(), b.data(), cols);
      for (CpuLevel level : SupportedCpuLevels()) {
        GetKernelTraits(type, level)->dequantize_tile(tile.data(), a.data(), cols);
        for (size_t i = 0; i < a.size(); ++i) {
          if (std::isnan(a[i]) && std::isnan(b[i])) continue;
          ASSERT_EQ(0, std::memcmp(&a[i], &b[i], 4))
              << TypeName(type) << " " << CpuLevelName(level) << " cols=" << cols << " i=" << i
              << ": " << a[i] << " vs " << b[i];
        }
      }
    }
  }
}

TEST(FrugalFormatsTest, RtnIsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 0.05f);
  for (TensorType type : kFrugalTypes) {
    const int64_t rows = 16, cols = 4 * std::max<int64_t>(Group(type), 64);
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (auto& v : w) v = nd(rng);
    w[5] = 0.4f;                                       // an outlier sets one group's scale
    std::fill_n(w.begin() + cols, Group(type), 0.0f);  // an all-zero group
    auto bytes = QuantizeRowsRtn(type, w.data(), rows, cols);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    std::vector<float> back(w.size());
    const TensorView t = TensorView::Matrix(type, cols, rows, bytes->data(), bytes->size());
    DequantizeTensor(t, back.data());
    const int64_t gsize = GetTypeInfo(type)->group_size == 0 ? cols : GetTypeInfo(type)->group_size;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < cols / gsize; ++g) {
        float lo = INFINITY, hi = -INFINITY, amax = 0;
        for (int64_t j = 0; j < gsize; ++j) {
          const float v = w[static_cast<size_t>(r * cols + g * gsize + j)];
          lo = std::min(lo, v), hi = std::max(hi, v), amax = std::max(amax, std::fabs(v));
        }
        const float step =
            IsAsym(type) ? (hi - lo) / 15 : amax / (GetTypeInfo(type)->bits == 4 ? 7.0f : 127.0f);
        for (int64_t j = 0; j < gsize; ++j) {
          const size_t i = static_cast<size_t>(r * cols + g * gsize + j);
          // Half a step, plus the fp16 rounding of the stored scale and offset.
          ASSERT_LE(std::fabs(back[i] - w[i]), step * 0.502f + 1e-3f * amax + 1e-7f)
              << TypeName(type) << " row " << r << " col " << g * gsize + j;
        }
      }
    }
    EXPECT_EQ(back[static_cast<size_t>(cols)], 0.0f) << TypeName(type);
  }
}

// Weights from a fixed integer recurrence (no libm, no <random> distribution), so that the
// pinned bytes below do not depend on the platform: Gaussian-ish values of scale ~0.05, every
// 97th an outlier, one all-zero group.
std::vector<float> PinnedWeights(int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    float v = 0;
    for (int k = 0; k < 4; ++k) {
      s = s * 1664525u + 1013904223u;
      v += static_cast<float>(s >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    w[static_cast<size_t>(i)] = v * (i % 97 == 0 ? 0.4f : 0.05f);
  }
  std::fill_n(w.begin() + 256, 128, 0.0f);
  return w;
}

// RTN's bytes for every Frugal type, pinned: they are what `frugal quantize --method rtn
// --no-scale-search` writes, so any change to the round-to-nearest arithmetic shows here.
TEST(FrugalFormatsTest, RtnBytesArePinned) {
  const int64_t rows = 16, cols = 256;
  const std::vector<float> w = PinnedWeights(rows * cols);
  const std::pair<TensorType, const char*> pinned[] = {
      {TensorType::kI8_C, "c07f2d336eaf37d3407e366a9859bd846cf4146ea8c15ca20c7fec71ff755bc6"},
      {TensorType::kI8_G32, "2a6f4cefb0767ff7f7000f15e17e10efac6fe8cbf6587478c2928a4d1db482a2"},
      {TensorType::kI8_G64, "eacc2c30e519fe1ff6bfae2d3968c24eb1ac70eba2933b136d7b7a9f52c5e886"},
      {TensorType::kI8_G128, "1dad4142375e2d5423c4e310c54f51ff60c13c9dfbef730eac9a312fc9f164e5"},
      {TensorType::kI4S_G32, "f09dbafe3e13217aefbddac04fd0a93a709404e127f923736a045512ec5a867b"},
      {TensorType::kI4S_G64, "c4e105bfc5330752533a08dc164e30d53cf3ae123ed7331a2571699c9d7cccc0"},
      {TensorType::kI4S_G128, "2ab441237a7ca6dd5bc706466cf8f69274f3baa5b32a8cfca3e68d7fe8755e8a"},
      {TensorType::kI4A_G32, "7d737efe24af3a232f0a1a6d455024727f09ec385c7c967bf9154a150c22ce96"},
      {TensorType::kI4A_G64, "13ffedac24cb38696db4dfa6c7bdec3d30f5dd0029d47c0e2bc0191beec6a426"},
      {TensorType::kI4A_G128, "2823c8b667e4186ecc7667081bf34520641a3943378e94867fe2164a0745327f"},
  };
  for (const auto& [type, sha] : pinned) {
    auto bytes = QuantizeRowsRtn(type, w.data(), rows, cols);
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    EXPECT_EQ(
        Sha256Hex(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size())),
        sha)
        << TypeName(type);
  }
}

TEST(FrugalFormatsTest, PackRowsRefusesBadInput) {
  std::vector<int8_t> q(8 * 32, 0);
  std::vector<float> d(8, 1.0f);
  std::vector<uint8_t> out(8 * *RowBytes(TensorType::kI4S_G32, 32));
  EXPECT_TRUE(PackRows(TensorType::kI4S_G32, 8, 32, q.data(), d.data(), nullptr, out.data()).ok());
  EXPECT_FALSE(PackRows(TensorType::kI4S_G32, 4, 32, q.data(), d.data(), nullptr, out.data()).ok());
  EXPECT_FALSE(PackRows(TensorType::kI4A_G32, 8, 32, q.data(), d.data(), nullptr, out.data()).ok());
  EXPECT_FALSE(PackRows(TensorType::kQ4_0, 8, 32, q.data(), d.data(), nullptr, out.data()).ok());
  q[3] = 16;
  EXPECT_FALSE(PackRows(TensorType::kI4S_G32, 8, 32, q.data(), d.data(), nullptr, out.data()).ok());
  q[3] = -128;
  std::vector<uint8_t> out8(8 * *RowBytes(TensorType::kI8_G32, 32));
  EXPECT_FALSE(PackRows(TensorType::kI8_G32, 8, 32, q.data(), d.data(), nullptr, out8.data()).ok());
  std::vector<float> w(8 * 48, 1.0f);
  EXPECT_FALSE(QuantizeRowsRtn(TensorType::kI4S_G32, w.data(), 8, 48).ok());
}

TEST(FrugalFormatsTest, Int8ActivationDotsWithinBudgetAtEveryLevel) {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  for (TensorType type : kFrugalTypes) {
    for (int64_t blocks : {1, 7, 31, 33, 127, 129}) {
      const int64_t cols = blocks * Group(type);
      if (cols > 129 * 64) continue;
      const Quantized p = RandomPacked(type, kTileRows, cols, rng);
      std::vector<float> x(static_cast<size_t>(cols)), w(static_cast<size_t>(kTileRows * cols));
      for (auto& v : x) v = nd(rng);
      GetKernelTraits(type, CpuLevel::kScalar)->dequantize_tile(p.bytes.data(), w.data(), cols);
      std::vector<BlockQ8Act> xq(static_cast<size_t>(cols / kQK));
      QuantizeRowQ8Act(x.data(), xq.data(), cols);
      float ref[kTileRows], simd[kTileRows];
      GetKernelTraits(type, CpuLevel::kScalar)->dot_q8_tile(p.bytes.data(), xq.data(), cols, ref);
      for (int r = 0; r < kTileRows; ++r) {
        long double exact = 0, magnitude = 0, rounding = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const long double wi = w[static_cast<size_t>(r * cols + i)];
          exact += wi * x[static_cast<size_t>(i)];
          magnitude += std::fabs(wi * x[static_cast<size_t>(i)]);
          rounding += std::fabs(wi) * xq[static_cast<size_t>(i / kQK)].d / 2;
        }
        ASSERT_LE(std::fabs(ref[r] - exact), rounding + 1e-5L * magnitude)
            << TypeName(type) << " cols=" << cols;
        for (CpuLevel level : SupportedCpuLevels()) {
          GetKernelTraits(type, level)->dot_q8_tile(p.bytes.data(), xq.data(), cols, simd);
          ASSERT_LE(std::fabs(static_cast<long double>(simd[r]) - ref[r]),
                    1e-5L * (magnitude + rounding) + 1e-6L)
              << CpuLevelName(level) << " " << TypeName(type) << " cols=" << cols << " row " << r;
        }
      }
    }
  }
}

// Four activation rows of `cols` Gaussian values, row i scaled by scale[i], quantized at xq + i *
// ldx (the blocks between rows are padding).
std::vector<BlockQ8Act> QuantizedRows(int64_t cols, int64_t ldx, const std::array<float, 4>& scale,
                                      std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<BlockQ8Act> xq(static_cast<size_t>(4 * ldx));
  for (int i = 0; i < 4; ++i) {
    for (auto& v : x) v = nd(rng) * scale[static_cast<size_t>(i)];
    QuantizeRowQ8Act(x.data(), &xq[static_cast<size_t>(i * ldx)], cols);
  }
  return xq;
}

// pairs.dot_q8_tile_pair on two adjacent tiles equals tiles.dot_q8_tiles on each, bit for bit,
// for 1..4 activation rows (row i at xq + i * ldx).
void ExpectPairEqualsTiles(const KernelTraits& pairs, const KernelTraits& tiles,
                           const uint8_t* bytes, size_t tile_bytes, const BlockQ8Act* xq,
                           int64_t ldx, int64_t cols, const std::string& what) {
  for (int m = 1; m <= 4; ++m) {
    float pair[4 * 2 * kTileRows], one[4 * kTileRows];
    pairs.dot_q8_tile_pair(bytes, tile_bytes, xq, ldx, m, cols, pair);
    for (int tile = 0; tile < 2; ++tile) {
      tiles.dot_q8_tiles(bytes + tile * tile_bytes, xq, ldx, m, cols, one);
      for (int i = 0; i < m; ++i) {
        ASSERT_EQ(0, std::memcmp(one + i * kTileRows, pair + i * 2 * kTileRows + tile * kTileRows,
                                 kTileRows * sizeof(float)))
            << what << " m=" << m << " tile " << tile << " row " << i;
      }
    }
  }
}

// The AVX-512 levels sum the same integers as AVX2 and scale them with the same float operations
// (kernels/x86/x86_variant.h), so their dot products, the 512-bit two-tile kernels among them,
// equal AVX2's bit for bit: at random values, and at the extremes where AVX2's int16 pair sums
// come closest to saturating and VNNI's unsigned offset is largest (the largest |q| everywhere,
// activations of +-127 with the weights' sign, so no product cancels another).
TEST(FrugalFormatsTest, Avx512LevelsEqualAvx2BitForBit) {
  if (DetectedCpuLevel() < CpuLevel::kAvx512Bw) GTEST_SKIP() << "this CPU has no AVX-512";
  std::mt19937 rng(8);
  std::normal_distribution<float> nd;
  constexpr int kRows = 2 * kTileRows;  // a tile pair
  int pairs_checked = 0;
  for (TensorType type : kFrugalTypes) {
    const int64_t cols = 7 * Group(type);
    const bool int4 = GetTypeInfo(type)->bits == 4;
    for (bool extreme : {false, true}) {
      Quantized p = RandomPacked(type, kRows, cols, rng);
      std::vector<BlockQ8Act> xq(static_cast<size_t>(4 * cols / kQK));
      if (extreme) {
        for (size_t i = 0; i < p.q.size(); ++i)
          p.q[i] = static_cast<int8_t>(
              int4 ? 15 : (i % static_cast<size_t>(cols) % 3 == 0 ? -127 : 127));
        ASSERT_TRUE(PackRows(type, kRows, cols, p.q.data(), p.d.data(),
                             p.m.empty() ? nullptr : p.m.data(), p.bytes.data())
                        .ok());
        for (size_t b = 0; b < xq.size(); ++b) {  // every row's weights share row 0's signs
          xq[b].d = 0.01f;
          int sum = 0;
          for (int j = 0; j < kQK; ++j) {
            const int8_t w0 = p.q[static_cast<size_t>(b % static_cast<size_t>(cols / kQK)) * kQK +
                                  static_cast<size_t>(j)];
            xq[b].qs[j] = static_cast<int8_t>(w0 < 0 ? -127 : 127);
            sum += xq[b].qs[j];
          }
          xq[b].s = xq[b].d * static_cast<float>(sum);
        }
      } else {
        std::vector<float> x(static_cast<size_t>(cols));
        for (int i = 0; i < 4; ++i) {
          for (auto& v : x) v = nd(rng);
          QuantizeRowQ8Act(x.data(), &xq[static_cast<size_t>(i * cols / kQK)], cols);
        }
      }
      const size_t tile_bytes = p.bytes.size() / 2;
      const KernelTraits* avx2 = GetKernelTraits(type, CpuLevel::kAvx2);
      for (CpuLevel level : {CpuLevel::kAvx512Bw, CpuLevel::kAvx512Vnni}) {
        if (level > DetectedCpuLevel()) continue;
        const KernelTraits* t = GetKernelTraits(type, level);
        const std::string what = std::string(CpuLevelName(level)) + " " + TypeName(type) +
                                 " extreme=" + (extreme ? "1" : "0");
        for (int tile = 0; tile < 2; ++tile) {
          const uint8_t* tp = p.bytes.data() + tile * tile_bytes;
          float a[4 * kTileRows], v[4 * kTileRows];
          avx2->dot_q8_tile(tp, xq.data(), cols, a);
          t->dot_q8_tile(tp, xq.data(), cols, v);
          ASSERT_EQ(0, std::memcmp(a, v, kTileRows * sizeof(float))) << what;
          for (int m = 2; m <= 4; ++m) {
            avx2->dot_q8_tiles(tp, xq.data(), cols / kQK, m, cols, a);
            t->dot_q8_tiles(tp, xq.data(), cols / kQK, m, cols, v);
            ASSERT_EQ(0, std::memcmp(a, v, static_cast<size_t>(m) * kTileRows * sizeof(float)))
                << what << " m=" << m;
          }
        }
        ASSERT_NE(t->dot_q8_tile_pair, nullptr) << what;
        ExpectPairEqualsTiles(*t, *avx2, p.bytes.data(), tile_bytes, xq.data(), cols / kQK, cols,
                              what);
        if (::testing::Test::HasFatalFailure()) return;
        ++pairs_checked;
      }
    }
  }
  EXPECT_GT(pairs_checked, 0);
}

// The two-tile kernels equal the one-tile kernels of their own level bit for bit, at awkward
// sizes and every row count, so MatMul's results do not depend on how its rows were paired
// (which follows the thread split).
TEST(FrugalFormatsTest, TilePairsEqualTileDotsBitForBit) {
  std::mt19937 rng(12);
  int checked = 0;
  for (TensorType type : kFrugalTypes) {
    for (int64_t blocks : {1, 7, 31, 33, 129}) {
      const int64_t cols = blocks * Group(type);
      if (cols > 129 * 64) continue;
      const Quantized p = RandomPacked(type, 2 * kTileRows, cols, rng);
      const size_t tile_bytes = p.bytes.size() / 2;
      const int64_t ldx = cols / kQK + 5;
      const std::vector<BlockQ8Act> xq = QuantizedRows(cols, ldx, {1, 3, 5, 7}, rng);
      for (CpuLevel level : SupportedCpuLevels()) {
        const KernelTraits* t = GetKernelTraits(type, level);
        if (t->dot_q8_tile_pair == nullptr) continue;
        ExpectPairEqualsTiles(*t, *t, p.bytes.data(), tile_bytes, xq.data(), ldx, cols,
                              std::string(CpuLevelName(level)) + " " + TypeName(type) +
                                  " cols=" + std::to_string(cols));
        if (::testing::Test::HasFatalFailure()) return;
        ++checked;
      }
    }
  }
  if (DetectedCpuLevel() >= CpuLevel::kAvx512Bw) {
    EXPECT_GT(checked, 0);
  }
}

// The multi-row kernels (several activation rows per weight unpacking) equal one-row calls bit
// for bit, so a sequence's logits never depend on the batch it was decoded in.
TEST(FrugalFormatsTest, MultiRowDotsEqualOneRowDotsBitForBit) {
  std::mt19937 rng(6);
  int checked = 0;
  for (TensorType type : kFrugalTypes) {
    for (int64_t blocks : {1, 7, 33, 129}) {
      const int64_t cols = blocks * Group(type);
      if (cols > 129 * 64) continue;
      const Quantized p = RandomPacked(type, kTileRows, cols, rng);
      const int64_t ldx = cols / kQK + 3;  // activation rows with padding between them
      const std::vector<BlockQ8Act> xq = QuantizedRows(cols, ldx, {1, 2, 3, 4}, rng);
      for (CpuLevel level : SupportedCpuLevels()) {
        const KernelTraits* t = GetKernelTraits(type, level);
        if (t->dot_q8_tiles == nullptr) continue;
        for (int m = 1; m <= 4; ++m) {
          float many[4 * kTileRows], one[kTileRows];
          t->dot_q8_tiles(p.bytes.data(), xq.data(), ldx, m, cols, many);
          for (int i = 0; i < m; ++i) {
            t->dot_q8_tile(p.bytes.data(), &xq[static_cast<size_t>(i * ldx)], cols, one);
            ASSERT_EQ(0, std::memcmp(one, many + i * kTileRows, sizeof(one)))
                << CpuLevelName(level) << " " << TypeName(type) << " cols=" << cols << " m=" << m
                << " row " << i;
          }
        }
        ++checked;
      }
    }
  }
  if (DetectedCpuLevel() >= CpuLevel::kAvx2) {
    EXPECT_GT(checked, 0);
  }
}

// MatMul over tiles: a row's output does not depend on the batch or on the other rows, and with
// float activations it is exactly the float dot of the dequantized row.
TEST(FrugalFormatsTest, MatMulMatchesDequantizedRowsAndIsBatchInvariant) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  ThreadPool pool(2);
  for (TensorType type :
       {TensorType::kI4S_G64, TensorType::kI4A_G32, TensorType::kI8_C, TensorType::kI8_G128}) {
    const int64_t cols = 2 * std::max<int64_t>(Group(type), 64), rows = 40, batch = 9;
    const Quantized p = RandomPacked(type, rows, cols, rng);
    const TensorView t = TensorView::Matrix(type, cols, rows, p.bytes.data(), p.bytes.size());
    std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(batch * cols));
    DequantizeTensor(t, w.data());
    for (auto& v : x) v = nd(rng);
    for (ActivationPrecision precision : {ActivationPrecision::kF32, ActivationPrecision::kInt8}) {
      std::vector<float> all(static_cast<size_t>(batch * rows)), one(static_cast<size_t>(rows));
      MatMul(t, x.data(), batch, all.data(), pool, precision);
      for (int64_t b = 0; b < batch; ++b) {
        MatMul(t, x.data() + b * cols, 1, one.data(), pool, precision);
        for (int64_t r = 0; r < rows; ++r) {
          const float got = all[static_cast<size_t>(b * rows + r)];
          ASSERT_EQ(one[static_cast<size_t>(r)], got) << TypeName(type) << " batch row " << b;
          if (precision == ActivationPrecision::kF32) {
            ASSERT_EQ(got, DotF32(&w[static_cast<size_t>(r * cols)],
                                  &x[static_cast<size_t>(b * cols)], cols));
          }
        }
      }
    }
    // GetRow (embedding lookup) out of the middle of a tile.
    std::vector<float> row(static_cast<size_t>(cols));
    GetRow(t, 13, row.data());
    EXPECT_EQ(0, std::memcmp(row.data(), &w[static_cast<size_t>(13 * cols)], row.size() * 4));
  }
}

StatusOr<std::unique_ptr<GgufFile>> ParseWithVersion(int version, bool frugal_tensor) {
  testing::GgufBuilder b;
  if (version >= 0) b.KvU32(kFrugalFormatVersionKey, static_cast<uint32_t>(version));
  std::vector<float> w(8 * 32, 0.25f);
  if (frugal_tensor) {
    auto bytes = QuantizeRowsRtn(TensorType::kI4S_G32, w.data(), 8, 32);
    b.Tensor("w", {32, 8}, TensorType::kI4S_G32, *bytes);
  } else {
    b.Tensor("w", {32, 8}, TensorType::kF32, testing::FloatBytes(w));
  }
  static std::vector<std::vector<uint8_t>> keep;  // the parsed file points into the buffer
  keep.push_back(b.Build());
  return GgufFile::Parse(MappedFile::FromBuffer(keep.back().data(), keep.back().size(), "t.gguf"));
}

TEST(FrugalFormatsTest, GgufRefusesAMismatchedFormatVersion) {
  auto ok = ParseWithVersion(static_cast<int>(kFrugalFormatVersion), true);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)->FindTensor("w")->type, TensorType::kI4S_G32);
  EXPECT_EQ((*ok)->FindTensor("w")->nbytes, 8 * *RowBytes(TensorType::kI4S_G32, 32));

  auto missing = ParseWithVersion(-1, true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(kFrugalFormatVersionKey), std::string::npos);

  auto newer = ParseWithVersion(static_cast<int>(kFrugalFormatVersion) + 1, true);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("version 2"), std::string::npos)
      << newer.status().message();
  EXPECT_FALSE(ParseWithVersion(static_cast<int>(kFrugalFormatVersion) + 1, false).ok());
  EXPECT_TRUE(ParseWithVersion(-1, false).ok());  // plain GGUF files need no version

  testing::GgufBuilder b;  // 4 rows cannot make a tile of 8
  b.KvU32(kFrugalFormatVersionKey, kFrugalFormatVersion);
  b.Tensor("w", {32, 4}, TensorType::kI4S_G32, std::vector<uint8_t>(72));
  const auto bytes = b.Build();
  auto partial = GgufFile::Parse(MappedFile::FromBuffer(bytes.data(), bytes.size(), "t.gguf"));
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("tiles of 8"), std::string::npos)
      << partial.status().message();
}

}  // namespace
}  // namespace frugal

namespace frugal {
namespace {

// MatMulMulti gives each matrix exactly what MatMul gives it, for tiled and one-row types,
// row counts that are not a multiple of 8, both activation precisions and any batch.
TEST(MatMulMultiTest, EqualsSeparateMatMuls) {
  std::mt19937 rng(8);
  std::normal_distribution<float> nd(0, 0.1f);
  ThreadPool pool(2);
  const int64_t k = 128, batch = 5;
  struct M {
    TensorType type;
    int64_t rows;
    std::vector<uint8_t> bytes;
    TensorView view;
  };
  std::vector<M> ms;
  for (auto [type, rows] : {std::pair{TensorType::kI4S_G64, int64_t{24}},
                            {TensorType::kQ8_0, 13},
                            {TensorType::kF32, 7},
                            {TensorType::kI8_C, 16}}) {
    std::vector<float> w(static_cast<size_t>(rows * k));
    for (auto& v : w) v = nd(rng);
    M m{type, rows, {}, {}};
    if (IsFrugalType(type)) {
      m.bytes = *QuantizeRowsRtn(type, w.data(), rows, k);
    } else if (type == TensorType::kF32) {
      m.bytes.resize(w.size() * 4);
      std::memcpy(m.bytes.data(), w.data(), m.bytes.size());
    } else {  // Q8_0 from RTN-like blocks
      m.bytes.resize(*RowBytes(type, k) * static_cast<size_t>(rows));
      auto* b = reinterpret_cast<BlockQ8_0*>(m.bytes.data());
      for (size_t i = 0; i < w.size() / kQK; ++i) {
        b[i].d = Fp32ToFp16(0.01f);
        for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(rng() % 255 - 127);
      }
    }
    ms.push_back(std::move(m));
  }
  for (M& m : ms) m.view = TensorView::Matrix(m.type, k, m.rows, m.bytes.data(), m.bytes.size());
  std::vector<float> x(static_cast<size_t>(batch * k));
  for (auto& v : x) v = nd(rng);
  for (ActivationPrecision p : {ActivationPrecision::kF32, ActivationPrecision::kInt8}) {
    std::vector<std::vector<float>> multi(ms.size()), single(ms.size());
    std::vector<MatMulOutput> outs;
    for (size_t i = 0; i < ms.size(); ++i) {
      multi[i].assign(static_cast<size_t>(batch * ms[i].rows), NAN);
      single[i].assign(multi[i].size(), NAN);
      outs.push_back({&ms[i].view, multi[i].data()});
      MatMul(ms[i].view, x.data(), batch, single[i].data(), pool, p);
    }
    MatMulMulti(outs, x.data(), batch, pool, p);
    for (size_t i = 0; i < ms.size(); ++i) EXPECT_EQ(multi[i], single[i]) << TypeName(ms[i].type);
  }
}

}  // namespace
}  // namespace frugal
