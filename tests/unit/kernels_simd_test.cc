// Every SIMD kernel against the scalar oracle, at every CPU level this machine supports, at
// awkward sizes. Error budgets:
//  - dequantization: bit-identical to the oracle (the SIMD code does the same operations);
//  - float dot products: |dot - exact| <= 1e-5 x sum|a_i b_i| (exact = long double);
//  - dot4: bit-identical to dot, row by row (batch composition must not change results).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/fp16.h"
#include "kernels/kernels.h"

namespace frugal {
namespace {

constexpr int64_t kAwkward[] = {1, 7, 31, 33, 127, 129, 4095};

std::vector<uint8_t> RandomRow(TensorType type, int64_t n, std::mt19937& rng) {
  const TypeInfo* info = GetTypeInfo(type);
  std::vector<uint8_t> bytes(static_cast<size_t>(n / info->block_size) * info->block_bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.1f), value(-2.0f, 2.0f);
  auto put_half = [&](size_t offset, float v) {
    const uint16_t h = Fp32ToFp16(v);
    std::memcpy(&bytes[offset], &h, 2);
  };
  const size_t bb = info->block_bytes;
  for (size_t blk = 0; blk < bytes.size() / bb; ++blk) {
    const size_t o = blk * bb;
    switch (type) {
      case TensorType::kF32: {
        const float v = value(rng);
        std::memcpy(&bytes[o], &v, 4);
        break;
      }
      case TensorType::kF16:
        put_half(o, value(rng));
        break;
      case TensorType::kBF16: {
        const uint16_t h = Fp32ToBf16(value(rng));
        std::memcpy(&bytes[o], &h, 2);
        break;
      }
      case TensorType::kQ4_0:
      case TensorType::kQ5_0:
      case TensorType::kQ8_0:
        put_half(o, scale(rng));
        break;
      case TensorType::kQ4_1:
      case TensorType::kQ5_1:
        put_half(o, scale(rng));
        put_half(o + 2, -scale(rng));
        break;
      case TensorType::kQ4_K:
      case TensorType::kQ5_K:
        put_half(o, scale(rng));
        put_half(o + 2, scale(rng));
        break;
      case TensorType::kQ6_K:
        put_half(o + offsetof(BlockQ6_K, d), scale(rng));
        break;
      default:
        break;
    }
  }
  return bytes;
}

const TensorType kTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                             TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1,
                             TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ4_K,
                             TensorType::kQ5_K, TensorType::kQ6_K};

TEST(SimdKernelsTest, DequantizeMatchesOracleBitForBit) {
  std::mt19937 rng(7);
  for (CpuLevel level : SupportedCpuLevels()) {
    for (TensorType type : kTypes) {
      const KernelTraits* simd = GetKernelTraits(type, level);
      const KernelTraits* oracle = GetKernelTraits(type, CpuLevel::kScalar);
      ASSERT_NE(simd, nullptr) << CpuLevelName(level) << " " << TypeName(type);
      const int64_t block = GetTypeInfo(type)->block_size;
      for (int64_t blocks : kAwkward) {
        if (block == kQKK && blocks > 129) continue;  // keep K-quant rows at a sane size
        const int64_t n = blocks * block;
        const auto row = RandomRow(type, n, rng);
        std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        simd->dequantize_row(row.data(), a.data(), n);
        oracle->dequantize_row(row.data(), b.data(), n);
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4))
            << CpuLevelName(level) << " " << TypeName(type) << " n=" << n;
      }
    }
  }
}

TEST(SimdKernelsTest, DotWithinBudgetAndDot4IdenticalToDot) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (CpuLevel level : SupportedCpuLevels()) {
    const F32Kernels& k = GetF32Kernels(level);
    for (int64_t n : kAwkward) {
      std::vector<float> w(static_cast<size_t>(n)), x(static_cast<size_t>(4 * n + 3));
      for (auto& v : w) v = nd(rng);
      for (auto& v : x) v = nd(rng);
      const int64_t ldx = n + 1;  // rows not packed: exercises the stride
      float out4[4];
      k.dot4(w.data(), x.data(), ldx, n, out4);
      for (int r = 0; r < 4; ++r) {
        const float* xr = x.data() + r * ldx;
        long double exact = 0, magnitude = 0;
        for (int64_t i = 0; i < n; ++i) {
          exact += static_cast<long double>(w[static_cast<size_t>(i)]) * xr[i];
          magnitude += std::fabs(static_cast<long double>(w[static_cast<size_t>(i)]) * xr[i]);
        }
        const float one = k.dot(w.data(), xr, n);
        EXPECT_EQ(one, out4[r]) << CpuLevelName(level) << " n=" << n << " row " << r;
        EXPECT_LE(std::fabs(static_cast<long double>(one) - exact), 1e-5L * magnitude + 1e-30L)
            << CpuLevelName(level) << " n=" << n;
      }
    }
  }
}

// A row's output must not depend on the batch it was computed in (dot vs dot4 paths, and
// per-row activation quantization).
void ExpectBatchInvariant(TensorType type, int64_t k, int64_t rows, int64_t batch,
                          ActivationPrecision precision, std::mt19937& rng) {
  const auto wbytes = RandomRow(type, k * rows, rng);
  const TensorView t = TensorView::Matrix(type, k, rows, wbytes.data(), wbytes.size());
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(batch * k));
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(2);
  std::vector<float> all(static_cast<size_t>(batch * rows)), one(static_cast<size_t>(rows));
  MatMul(t, x.data(), batch, all.data(), pool, precision);
  for (int64_t b = 0; b < batch; ++b) {
    MatMul(t, x.data() + b * k, 1, one.data(), pool, precision);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(one[static_cast<size_t>(r)], all[static_cast<size_t>(b * rows + r)])
          << TypeName(type) << " batch row " << b << " row " << r;
    }
  }
}

TEST(SimdKernelsTest, MatMulAtEveryBatchSizeMatchesSingleRows) {
  std::mt19937 rng(5);
  ExpectBatchInvariant(TensorType::kQ4_1, 96, 19, 9, ActivationPrecision::kF32, rng);
}

TEST(CpuLevelTest, LevelsAreOrderedAndNamed) {
  const auto levels = SupportedCpuLevels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), CpuLevel::kScalar);
  EXPECT_EQ(levels.back(), DetectedCpuLevel());
  EXPECT_LE(static_cast<int>(ActiveCpuLevel()), static_cast<int>(DetectedCpuLevel()));
  EXPECT_STREQ(CpuLevelName(CpuLevel::kAvx2), "avx2");
  EXPECT_STREQ(CpuLevelName(CpuLevel::kAvx512Bw), "avx512bw");
  EXPECT_STREQ(CpuLevelName(CpuLevel::kAvx512Vnni), "avx512vnni");
}

}  // namespace
}  // namespace frugal

namespace frugal {
namespace {

// INT8 activations: the oracle's integer dot product stays within the error that activation
// rounding can cause (each |x_j - d q_j| <= d/2, so |error| <= sum_blocks d/2 sum_j |w_j|,
// plus float slack); SIMD versions match the oracle to float rounding (1e-5 of sum|w_j x_j|).
TEST(Int8ActivationTest, QuantizeRoundTripsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0, 3);
  std::vector<float> x(96);
  for (auto& v : x) v = nd(rng);
  x[5] = 0;
  std::vector<BlockQ8Act> q(3);
  QuantizeRowQ8Act(x.data(), q.data(), 96);
  for (int b = 0; b < 3; ++b) {
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      EXPECT_LE(std::fabs(x[static_cast<size_t>(b * kQK + j)] -
                          q[static_cast<size_t>(b)].d * q[static_cast<size_t>(b)].qs[j]),
                q[static_cast<size_t>(b)].d / 2 * 1.0001f);
      sum += q[static_cast<size_t>(b)].qs[j];
    }
    EXPECT_FLOAT_EQ(q[static_cast<size_t>(b)].s,
                    q[static_cast<size_t>(b)].d * static_cast<float>(sum));
  }
  std::vector<float> zeros(32, 0.0f);
  QuantizeRowQ8Act(zeros.data(), q.data(), 32);
  EXPECT_EQ(q[0].d, 0.0f);
  EXPECT_EQ(q[0].qs[0], 0);
}

TEST(Int8ActivationTest, IntegerDotsWithinBudgetAtEveryLevel) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ8_0,
                          TensorType::kQ4_K, TensorType::kQ6_K}) {
    const KernelTraits* oracle = GetKernelTraits(type, CpuLevel::kScalar);
    ASSERT_NE(oracle->dot_q8, nullptr) << TypeName(type);
    for (int64_t blocks : kAwkward) {
      const int64_t block = GetTypeInfo(type)->block_size;
      if (block == kQKK && blocks > 129) continue;  // keep K-quant rows at a sane size
      const int64_t n = blocks * block;
      const auto row = RandomRow(type, n, rng);
      std::vector<float> x(static_cast<size_t>(n)), w(static_cast<size_t>(n));
      for (auto& v : x) v = nd(rng);
      oracle->dequantize_row(row.data(), w.data(), n);
      std::vector<BlockQ8Act> xq(static_cast<size_t>(n / kQK));
      QuantizeRowQ8Act(x.data(), xq.data(), n);
      long double exact = 0, magnitude = 0, rounding = 0;
      for (int64_t i = 0; i < n; ++i) {
        exact += static_cast<long double>(w[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
        magnitude += std::fabs(static_cast<long double>(w[static_cast<size_t>(i)]) *
                               x[static_cast<size_t>(i)]);
        rounding += std::fabs(static_cast<long double>(w[static_cast<size_t>(i)])) *
                    xq[static_cast<size_t>(i / kQK)].d / 2;
      }
      const float ref = oracle->dot_q8(row.data(), xq.data(), n);
      EXPECT_LE(std::fabs(ref - exact), rounding + 1e-5L * magnitude)
          << TypeName(type) << " n=" << n;
      for (CpuLevel level : SupportedCpuLevels()) {
        const float simd = GetKernelTraits(type, level)->dot_q8(row.data(), xq.data(), n);
        EXPECT_LE(std::fabs(static_cast<long double>(simd) - ref),
                  1e-5L * (magnitude + rounding) + 1e-6L)
            << CpuLevelName(level) << " " << TypeName(type) << " n=" << n;
        if (level >= CpuLevel::kAvx512Bw) {  // the same integers as AVX2 (x86/x86_variant.h)
          EXPECT_EQ(simd, GetKernelTraits(type, CpuLevel::kAvx2)->dot_q8(row.data(), xq.data(), n))
              << TypeName(type) << " n=" << n;
        }
      }
    }
  }
}

TEST(Int8ActivationTest, MatMulBatchInvariant) {
  std::mt19937 rng(21);
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ8_0}) {
    ExpectBatchInvariant(type, 128, 11, 6, ActivationPrecision::kInt8, rng);
  }
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ6_K}) {
    ExpectBatchInvariant(type, 512, 11, 6, ActivationPrecision::kInt8, rng);
  }
}

// Types without an integer dot product (the float types, Q5_0, Q5_1, Q5_K) keep float
// activations when INT8 is asked for: the result is the float path's, bit for bit.
TEST(Int8ActivationTest, TypesWithoutIntegerDotUseFloatActivations) {
  std::mt19937 rng(23);
  std::normal_distribution<float> nd;
  for (TensorType type : kTypes) {
    if (GetKernelTraits(type)->dot_q8 != nullptr) continue;
    const int64_t k = 2 * kQKK, rows = 13, batch = 5;
    const auto wbytes = RandomRow(type, k * rows, rng);
    const TensorView t = TensorView::Matrix(type, k, rows, wbytes.data(), wbytes.size());
    std::vector<float> x(static_cast<size_t>(batch * k));
    for (auto& v : x) v = nd(rng);
    ThreadPool pool(2);
    std::vector<float> f32(static_cast<size_t>(batch * rows)), int8(f32.size());
    MatMul(t, x.data(), batch, f32.data(), pool, ActivationPrecision::kF32);
    MatMul(t, x.data(), batch, int8.data(), pool, ActivationPrecision::kInt8);
    EXPECT_EQ(0, std::memcmp(f32.data(), int8.data(), f32.size() * 4)) << TypeName(type);
  }
}

}  // namespace
}  // namespace frugal
