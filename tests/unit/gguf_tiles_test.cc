// GGUF block types re-laid into 8-row tiles at load (kernels/quantize.h: RepackRows): every
// weight kept bit for bit, at every CPU level and at awkward sizes, and the tiled integer
// kernels against the scalar oracle. Error budgets:
//  - dequantization of the tiles: bit-identical to the GGUF reference dequantizer of the
//    original blocks, at every level;
//  - INT8-activation dots: the oracle within the activation-rounding bound of the exact dot of
//    the dequantized weights; every level within 1e-5 x (sum|w x| + rounding) of the oracle;
//    the multi-row kernels equal the one-row kernels bit for bit, and the AVX-512 levels equal
//    AVX2 bit for bit (the same integers, the same float operations), also at the extremes
//    where AVX2's int16 pair sums come closest to saturating.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "common/fp16.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "testing/gguf_builder.h"

namespace frugal {
namespace {

const TensorType kGgufTypes[] = {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ8_0,
                                 TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ4_K,
                                 TensorType::kQ5_K, TensorType::kQ6_K};

// Where a block keeps its fp16 scale (and minimum or its scale: -1 if none).
std::pair<size_t, int> ScaleOffsets(TensorType type) {
  switch (type) {
    case TensorType::kQ4_1:
    case TensorType::kQ5_1:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
      return {0, 2};
    case TensorType::kQ6_K:
      return {offsetof(BlockQ6_K, d), -1};
    default:
      return {0, -1};
  }
}

// rows x cols random blocks with sane fp16 scales; `fill` >= 0 sets every other byte to it.
std::vector<uint8_t> RandomBlocks(TensorType type, int64_t rows, int64_t cols, std::mt19937& rng,
                                  int fill = -1) {
  const TypeInfo* info = GetTypeInfo(type);
  std::vector<uint8_t> bytes(*RowBytes(type, cols) * static_cast<size_t>(rows));
  for (auto& b : bytes) b = static_cast<uint8_t>(fill >= 0 ? fill : static_cast<int>(rng()));
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  const auto [d_at, m_at] = ScaleOffsets(type);
  for (size_t o = 0; o < bytes.size(); o += info->block_bytes) {
    const uint16_t d = Fp32ToFp16(scale(rng));
    std::memcpy(&bytes[o + d_at], &d, 2);
    if (m_at >= 0) {
      // Q4_1 / Q5_1 store a minimum (negative), the K-quants a positive scale of the minimums.
      const bool k = type == TensorType::kQ4_K || type == TensorType::kQ5_K;
      const uint16_t m = Fp32ToFp16(k ? scale(rng) : -8 * scale(rng));
      std::memcpy(&bytes[o + static_cast<size_t>(m_at)], &m, 2);
    }
  }
  return bytes;
}

// Column counts: 1, 3, 7 and 9 blocks (K-quants: super-blocks), and 33 for the 32-blocks.
std::vector<int64_t> AwkwardCols(TensorType type) {
  const int64_t b = GetTypeInfo(type)->block_size;
  std::vector<int64_t> cols = {b, 3 * b, 7 * b, 9 * b};
  if (b == kQK) cols.push_back(33 * b);
  return cols;
}

struct Repacked {
  TensorView view;
  std::vector<uint8_t> bytes;
};
Repacked Repack(const TensorView& t) {
  Repacked r;
  const std::optional<TensorType> type = RepackedType(t);
  EXPECT_TRUE(type.has_value()) << TypeName(t.type);
  r.bytes.resize(RepackedBytes(t));
  RepackRows(t, r.bytes.data());
  r.view = TensorView::Matrix(*type, t.ne[0], t.rows(), r.bytes.data(), r.bytes.size());
  return r;
}

TEST(GgufTilesTest, RepackedTypesAndSizes) {
  std::vector<uint8_t> buf(1 << 16);
  auto type_of = [&](TensorType t, int64_t cols, int64_t rows) {
    return RepackedType(TensorView::Matrix(t, cols, rows, buf.data(), buf.size()));
  };
  EXPECT_EQ(type_of(TensorType::kQ4_K, 256, 8), TensorType::kQ4_K_X8);
  EXPECT_EQ(type_of(TensorType::kQ5_K, 256, 16), TensorType::kQ5_K_X8);
  EXPECT_EQ(type_of(TensorType::kQ6_K, 512, 8), TensorType::kQ6_K_X8);
  EXPECT_EQ(type_of(TensorType::kQ5_0, 32, 8), TensorType::kQ5_0_X8);
  EXPECT_EQ(type_of(TensorType::kQ5_1, 32, 8), TensorType::kQ5_1_X8);
  EXPECT_EQ(type_of(TensorType::kQ4_0, 32, 8), TensorType::kI4S_G32);
  EXPECT_FALSE(type_of(TensorType::kQ4_K, 256, 12).has_value());  // not a multiple of 8 rows
  EXPECT_FALSE(type_of(TensorType::kF16, 256, 8).has_value());
  // Bytes per 8 rows of 256 inputs: the K-quants' 6-bit scales take a byte each (Q4_K 144 ->
  // 148, Q5_K 176 -> 180 per row); Q6_K, Q5_0 and Q5_1 keep their size.
  EXPECT_EQ(*RowBytes(TensorType::kQ4_K_X8, 256), 148u);
  EXPECT_EQ(*RowBytes(TensorType::kQ5_K_X8, 256), 180u);
  EXPECT_EQ(*RowBytes(TensorType::kQ6_K_X8, 256), 210u);
  EXPECT_EQ(*RowBytes(TensorType::kQ5_0_X8, 256), 8 * 22u);
  EXPECT_EQ(*RowBytes(TensorType::kQ5_1_X8, 256), 8 * 24u);
  EXPECT_TRUE(IsInMemoryType(TensorType::kQ6_K_X8));
  EXPECT_FALSE(IsFrugalType(TensorType::kQ6_K_X8));
}

// The tiles dequantize to exactly the floats of the GGUF reference dequantizer, at every level.
TEST(GgufTilesTest, RepackingKeepsEveryWeightBitForBit) {
  std::mt19937 rng(21);
  for (TensorType type : kGgufTypes) {
    for (int64_t cols : AwkwardCols(type)) {
      for (int64_t rows : {8, 24}) {
        const std::vector<uint8_t> bytes = RandomBlocks(type, rows, cols, rng);
        const TensorView t = TensorView::Matrix(type, cols, rows, bytes.data(), bytes.size());
        const Repacked p = Repack(t);
        std::vector<float> want(static_cast<size_t>(rows * cols)), got(want.size());
        GetKernelTraits(type, CpuLevel::kScalar)
            ->dequantize_row(bytes.data(), want.data(), t.elements());
        const size_t tile_bytes = p.bytes.size() / static_cast<size_t>(rows / kTileRows);
        for (CpuLevel level : SupportedCpuLevels()) {
          const KernelTraits* k = GetKernelTraits(p.view.type, level);
          ASSERT_NE(k, nullptr) << CpuLevelName(level) << " " << TypeName(p.view.type);
          for (int64_t tile = 0; tile < rows / kTileRows; ++tile) {
            k->dequantize_tile(p.bytes.data() + tile * tile_bytes,
                               got.data() + tile * kTileRows * cols, cols);
          }
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << CpuLevelName(level) << " " << TypeName(type) << " cols=" << cols;
        }
        // And through the public API: GetRow out of the middle of a tile.
        std::vector<float> row(static_cast<size_t>(cols));
        GetRow(p.view, rows - 3, row.data());
        EXPECT_EQ(0, std::memcmp(row.data(), &want[static_cast<size_t>((rows - 3) * cols)],
                                 row.size() * sizeof(float)));
      }
    }
  }
}

std::vector<BlockQ8Act> QuantizedActivations(int64_t cols, int rows, int64_t ldx,
                                             std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(cols));
  std::vector<BlockQ8Act> xq(static_cast<size_t>(rows * ldx));
  for (int i = 0; i < rows; ++i) {
    for (auto& v : x) v = nd(rng) * static_cast<float>(1 + i);
    QuantizeRowQ8Act(x.data(), &xq[static_cast<size_t>(i * ldx)], cols);
  }
  return xq;
}

TEST(GgufTilesTest, Int8ActivationDotsWithinBudgetAtEveryLevel) {
  std::mt19937 rng(22);
  std::normal_distribution<float> nd;
  for (TensorType type : kGgufTypes) {
    for (int64_t cols : AwkwardCols(type)) {
      const std::vector<uint8_t> bytes = RandomBlocks(type, kTileRows, cols, rng);
      const TensorView t = TensorView::Matrix(type, cols, kTileRows, bytes.data(), bytes.size());
      const Repacked p = Repack(t);
      std::vector<float> x(static_cast<size_t>(cols)), w(static_cast<size_t>(kTileRows * cols));
      for (auto& v : x) v = nd(rng);
      DequantizeTensor(t, w.data());
      std::vector<BlockQ8Act> xq(static_cast<size_t>(cols / kQK));
      QuantizeRowQ8Act(x.data(), xq.data(), cols);
      float ref[kTileRows], got[kTileRows];
      const KernelTraits* oracle = GetKernelTraits(p.view.type, CpuLevel::kScalar);
      oracle->dot_q8_tile(p.bytes.data(), xq.data(), cols, ref);
      for (int r = 0; r < kTileRows; ++r) {
        long double exact = 0, magnitude = 0, rounding = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const long double wi = w[static_cast<size_t>(r * cols + i)];
          exact += wi * x[static_cast<size_t>(i)];
          magnitude += std::fabs(wi * x[static_cast<size_t>(i)]);
          rounding += std::fabs(wi) * xq[static_cast<size_t>(i / kQK)].d / 2;
        }
        ASSERT_LE(std::fabs(ref[r] - exact), rounding + 1e-5L * magnitude)
            << TypeName(p.view.type) << " cols=" << cols;
        for (CpuLevel level : SupportedCpuLevels()) {
          GetKernelTraits(p.view.type, level)->dot_q8_tile(p.bytes.data(), xq.data(), cols, got);
          ASSERT_LE(std::fabs(static_cast<long double>(got[r]) - ref[r]),
                    1e-5L * (magnitude + rounding) + 1e-6L)
              << CpuLevelName(level) << " " << TypeName(p.view.type) << " cols=" << cols << " row "
              << r;
        }
      }
    }
  }
}

// Saturated weights (every integer at its largest or smallest, scales at their extremes) and
// activations of +-127 whose signs follow nothing: if AVX2's int16 pair sums overflowed, the
// levels would disagree and miss the oracle by far.
TEST(GgufTilesTest, ExtremeValuesAgreeAcrossLevels) {
  std::mt19937 rng(23);
  const TensorType kTiled[] = {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                               TensorType::kQ5_0, TensorType::kQ5_1};
  for (TensorType type : kTiled) {
    const int64_t cols = 3 * GetTypeInfo(type)->block_size;
    for (int fill : {0x00, 0xff, 0x80, 0x7f}) {
      for (bool positive : {true, false}) {
        const std::vector<uint8_t> bytes = RandomBlocks(type, kTileRows, cols, rng, fill);
        const TensorView t = TensorView::Matrix(type, cols, kTileRows, bytes.data(), bytes.size());
        const Repacked p = Repack(t);
        std::vector<BlockQ8Act> xq(static_cast<size_t>(cols / kQK));
        for (BlockQ8Act& b : xq) {
          int sum = 0;
          for (int8_t& q : b.qs) sum += q = static_cast<int8_t>(positive ? 127 : -127);
          b.d = 0.01f;
          b.s = b.d * static_cast<float>(sum);
          b.half_sums[0] = b.half_sums[1] = static_cast<int16_t>(sum / 2);
        }
        std::vector<float> w(static_cast<size_t>(kTileRows * cols));
        DequantizeTensor(t, w.data());
        float ref[kTileRows], avx2[kTileRows], got[kTileRows];
        GetKernelTraits(p.view.type, CpuLevel::kScalar)
            ->dot_q8_tile(p.bytes.data(), xq.data(), cols, ref);
        const std::string what = TypeName(type) + " fill=" + std::to_string(fill);
        for (int r = 0; r < kTileRows; ++r) {
          long double exact = 0, magnitude = 0;
          for (int64_t i = 0; i < cols; ++i) {
            const long double v =
                w[static_cast<size_t>(r * cols + i)] * (positive ? 1.27L : -1.27L);
            exact += v;
            magnitude += std::fabs(v);
          }
          ASSERT_LE(std::fabs(ref[r] - exact), 1e-5L * magnitude + 1e-4L) << what;
        }
        if (DetectedCpuLevel() < CpuLevel::kAvx2) continue;
        GetKernelTraits(p.view.type, CpuLevel::kAvx2)
            ->dot_q8_tile(p.bytes.data(), xq.data(), cols, avx2);
        for (int r = 0; r < kTileRows; ++r)
          ASSERT_NEAR(avx2[r], ref[r], 1e-5 * (std::fabs(ref[r]) + 1)) << what << " row " << r;
        for (CpuLevel level : SupportedCpuLevels()) {
          if (level <= CpuLevel::kAvx2) continue;
          GetKernelTraits(p.view.type, level)->dot_q8_tile(p.bytes.data(), xq.data(), cols, got);
          ASSERT_EQ(0, std::memcmp(avx2, got, sizeof(got))) << CpuLevelName(level) << " " << what;
        }
      }
    }
  }
}

// Whether a re-laid type's one-tile kernels take 8 activation rows per call (tiles_rows): the
// K-quant and Q5_0/Q5_1 tiles; Frugal's formats, which Q4_0/Q4_1/Q8_0 become, take 4.
bool EightRowTiles(TensorType relaid) {
  return relaid == TensorType::kQ4_K_X8 || relaid == TensorType::kQ5_K_X8 ||
         relaid == TensorType::kQ6_K_X8 || relaid == TensorType::kQ5_0_X8 ||
         relaid == TensorType::kQ5_1_X8;
}

// The rows a re-laid type's tile-pair kernel takes per call (pair_rows): 16 for the K-quant
// tiles, 8 for Q5_0/Q5_1, 4 for Frugal's formats.
int PairRows(TensorType relaid) {
  if (relaid == TensorType::kQ4_K_X8 || relaid == TensorType::kQ5_K_X8 ||
      relaid == TensorType::kQ6_K_X8)
    return 16;
  return EightRowTiles(relaid) ? 8 : 4;
}

// Several activation rows per unpacking (1..tiles_rows) equal one-row calls bit for bit (a
// sequence's logits do not depend on its batch), and the AVX-512 levels equal AVX2 bit for bit.
TEST(GgufTilesTest, MultiRowKernelsEqualOneRowAndLevelsAgree) {
  std::mt19937 rng(24);
  int checked = 0;
  for (TensorType type : kGgufTypes) {
    for (int64_t cols : AwkwardCols(type)) {
      const std::vector<uint8_t> bytes = RandomBlocks(type, kTileRows, cols, rng);
      const Repacked p =
          Repack(TensorView::Matrix(type, cols, kTileRows, bytes.data(), bytes.size()));
      const int64_t ldx = cols / kQK + 3;  // padding between activation rows
      const std::vector<BlockQ8Act> xq = QuantizedActivations(cols, 8, ldx, rng);
      float first[8 * kTileRows] = {};
      bool have_first = false;
      for (CpuLevel level : SupportedCpuLevels()) {
        const KernelTraits* k = GetKernelTraits(p.view.type, level);
        if (k->dot_q8_tiles == nullptr) continue;
        EXPECT_EQ(k->tiles_rows, EightRowTiles(p.view.type) ? 8 : 4) << TypeName(p.view.type);
        for (int m = 1; m <= k->tiles_rows; ++m) {
          float many[8 * kTileRows], one[kTileRows];
          k->dot_q8_tiles(p.bytes.data(), xq.data(), ldx, m, cols, many);
          for (int i = 0; i < m; ++i) {
            k->dot_q8_tile(p.bytes.data(), &xq[static_cast<size_t>(i * ldx)], cols, one);
            ASSERT_EQ(0, std::memcmp(one, many + i * kTileRows, sizeof(one)))
                << CpuLevelName(level) << " " << TypeName(p.view.type) << " cols=" << cols
                << " m=" << m << " row " << i;
          }
          const size_t bytes_m = static_cast<size_t>(m) * sizeof(one);
          if (m == k->tiles_rows && !have_first) {
            std::memcpy(first, many, bytes_m);
            have_first = true;
          } else if (m == k->tiles_rows) {  // x86 levels: the same integers and float operations
            ASSERT_EQ(0, std::memcmp(first, many, bytes_m))
                << CpuLevelName(level) << " " << TypeName(p.view.type) << " cols=" << cols;
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

// The AVX-512 two-tile kernels equal the one-tile kernels of their level bit for bit (MatMul
// pairs tiles as the thread split falls), at awkward sizes and 1..pair_rows activation rows (16
// for the K-quant tiles, whose 9..15 run as 8 and the rest, 8 for Q5_0/Q5_1, 4 for Frugal's
// formats that Q4_0/Q4_1/Q8_0 become; the one-tile kernels take tiles_rows at a time).
TEST(GgufTilesTest, TilePairsEqualTileDotsBitForBit) {
  if (DetectedCpuLevel() < CpuLevel::kAvx512Bw) GTEST_SKIP() << "this CPU has no AVX-512";
  std::mt19937 rng(26);
  for (TensorType type : kGgufTypes) {
    for (int64_t cols : AwkwardCols(type)) {
      const std::vector<uint8_t> bytes = RandomBlocks(type, 2 * kTileRows, cols, rng);
      const Repacked p =
          Repack(TensorView::Matrix(type, cols, 2 * kTileRows, bytes.data(), bytes.size()));
      const size_t tile_bytes = p.bytes.size() / 2;
      const int64_t ldx = cols / kQK + 5;
      const std::vector<BlockQ8Act> xq = QuantizedActivations(cols, kMaxPairRows, ldx, rng);
      for (CpuLevel level : {CpuLevel::kAvx512Bw, CpuLevel::kAvx512Vnni}) {
        if (level > DetectedCpuLevel()) continue;
        const KernelTraits* k = GetKernelTraits(p.view.type, level);
        ASSERT_NE(k->dot_q8_tile_pair, nullptr) << TypeName(p.view.type);
        ASSERT_EQ(k->pair_rows, PairRows(p.view.type)) << TypeName(p.view.type);
        ASSERT_LE(k->pair_rows, kMaxPairRows);
        for (int m = 1; m <= k->pair_rows; ++m) {
          float pair[kMaxPairRows * 2 * kTileRows], one[kMaxPairRows * kTileRows];
          k->dot_q8_tile_pair(p.bytes.data(), tile_bytes, xq.data(), ldx, m, cols, pair);
          for (int tile = 0; tile < 2; ++tile) {
            for (int i0 = 0; i0 < m; i0 += k->tiles_rows) {
              k->dot_q8_tiles(p.bytes.data() + tile * tile_bytes, xq.data() + i0 * ldx, ldx,
                              std::min(k->tiles_rows, m - i0), cols, one + i0 * kTileRows);
            }
            for (int i = 0; i < m; ++i) {
              ASSERT_EQ(
                  0, std::memcmp(one + i * kTileRows, pair + i * 2 * kTileRows + tile * kTileRows,
                                 kTileRows * sizeof(float)))
                  << CpuLevelName(level) << " " << TypeName(p.view.type) << " cols=" << cols
                  << " m=" << m << " tile " << tile << " row " << i;
            }
          }
        }
      }
    }
  }
}

// Through MatMul: with float activations the re-laid matrix gives exactly the original's
// products (the same floats, the same dot); with INT8 activations they agree to summation
// order; a row's result does not depend on the batch (9: 8 rows and 1; 35: 16, 16 and 3 where
// the tile-pair kernels take 16).
TEST(GgufTilesTest, MatMulOfRepackedEqualsOriginal) {
  std::mt19937 rng(25);
  std::normal_distribution<float> nd;
  ThreadPool pool(2), serial(1);
  for (TensorType type : kGgufTypes) {
    for (const int64_t batch : {9, 35}) {
      const int64_t cols = 2 * std::max<int64_t>(GetTypeInfo(type)->block_size, 64), rows = 40;
      const std::vector<uint8_t> bytes = RandomBlocks(type, rows, cols, rng);
      const TensorView t = TensorView::Matrix(type, cols, rows, bytes.data(), bytes.size());
      const Repacked p = Repack(t);
      std::vector<float> x(static_cast<size_t>(batch * cols));
      for (auto& v : x) v = nd(rng);
      std::vector<float> ya(static_cast<size_t>(batch * rows)), yb(ya.size()),
          one(static_cast<size_t>(rows));
      MatMul(t, x.data(), batch, ya.data(), pool, ActivationPrecision::kF32);
      MatMul(p.view, x.data(), batch, yb.data(), pool, ActivationPrecision::kF32);
      EXPECT_EQ(ya, yb) << TypeName(type);
      // INT8 activations: within the activation rounding of the float products (Q5_0 / Q5_1
      // files had no integer path before: their originals take float activations).
      MatMul(p.view, x.data(), batch, yb.data(), pool, ActivationPrecision::kInt8);
      std::vector<float> w(static_cast<size_t>(rows * cols));
      DequantizeTensor(t, w.data());
      std::vector<BlockQ8Act> xq(static_cast<size_t>(cols / kQK));
      for (int64_t b = 0; b < batch; ++b) {
        QuantizeRowQ8Act(&x[static_cast<size_t>(b * cols)], xq.data(), cols);
        for (int64_t r = 0; r < rows; ++r) {
          double rounding = 0, magnitude = 0;
          for (int64_t i = 0; i < cols; ++i) {
            const double wi = w[static_cast<size_t>(r * cols + i)];
            rounding += std::fabs(wi) * xq[static_cast<size_t>(i / kQK)].d / 2;
            magnitude += std::fabs(wi * x[static_cast<size_t>(b * cols + i)]);
          }
          const size_t o = static_cast<size_t>(b * rows + r);
          ASSERT_LE(std::fabs(yb[o] - ya[o]), rounding + 1e-5 * magnitude) << TypeName(type);
        }
      }
      // One row at a time (decode's kernel), on one thread (all 5 tiles in one range) and on two.
      for (ThreadPool* on : {&pool, &serial}) {
        for (int64_t b = 0; b < batch; ++b) {
          MatMul(p.view, x.data() + b * cols, 1, one.data(), *on, ActivationPrecision::kInt8);
          ASSERT_EQ(0, std::memcmp(one.data(), &yb[static_cast<size_t>(b * rows)], one.size() * 4))
              << TypeName(type) << " batch row " << b << " threads " << on->size();
        }
      }
    }
  }
}

// Frugal's I8_G32 / I4S_G32 / I4A_G32 written back as GGUF blocks (frugal quantize --target
// llama.cpp) are the very bytes they were re-laid from.
TEST(GgufTilesTest, UnpackToGgufInvertsRepacking) {
  std::mt19937 rng(27);
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1}) {
    for (int64_t cols : AwkwardCols(type)) {
      const std::vector<uint8_t> bytes = RandomBlocks(type, 24, cols, rng);
      const Repacked p = Repack(TensorView::Matrix(type, cols, 24, bytes.data(), bytes.size()));
      ASSERT_EQ(GgufEquivalent(p.view.type), type);
      std::vector<uint8_t> back(p.bytes.size());
      UnpackToGguf(p.view, back.data());
      EXPECT_EQ(back, bytes) << TypeName(type) << " cols=" << cols;
    }
  }
  EXPECT_FALSE(GgufEquivalent(TensorType::kI4S_G128).has_value());
  EXPECT_FALSE(GgufEquivalent(TensorType::kI8_C).has_value());
}

TEST(GgufTilesTest, FilesCannotCarryInMemoryTypes) {
  testing::GgufBuilder b;
  b.Tensor("w", {256, 8}, TensorType::kQ4_K_X8, std::vector<uint8_t>(8 * 148));
  const std::vector<uint8_t> bytes = b.Build();
  auto parsed = GgufFile::Parse(MappedFile::FromBuffer(bytes.data(), bytes.size(), "t.gguf"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("cannot read"), std::string::npos)
      << parsed.status().message();
}

}  // namespace
}  // namespace frugal
