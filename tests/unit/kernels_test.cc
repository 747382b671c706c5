#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/fp16.h"
#include "common/thread_pool.h"

namespace frugal {
namespace {

TEST(Fp16Test, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(Fp32ToFp16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16Test, RoundsToNearestEven) {
  EXPECT_EQ(Fp16ToFp32(Fp32ToFp16(1.0f + 1.0f / 4096)), 1.0f);                // below half an ulp
  EXPECT_EQ(Fp16ToFp32(Fp32ToFp16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even
  EXPECT_EQ(Fp16ToFp32(Fp32ToFp16(65520.0f)), INFINITY);
  EXPECT_EQ(Fp16ToFp32(Fp32ToFp16(5.96e-8f)), 5.9604645e-8f);  // smallest subnormal
}

TEST(Bf16Test, Conversions) {
  EXPECT_EQ(Bf16ToFp32(Fp32ToBf16(1.5f)), 1.5f);
  EXPECT_EQ(Bf16ToFp32(Fp32ToBf16(-2.0f)), -2.0f);
  EXPECT_NEAR(Bf16ToFp32(Fp32ToBf16(3.14159f)), 3.14159f, 0.01f);
}

TEST(DequantTest, Q8_0) {
  BlockQ8_0 b{};
  b.d = Fp32ToFp16(0.5f);
  for (int i = 0; i < kQK; ++i) b.qs[i] = static_cast<int8_t>(i - 16);
  float out[kQK];
  GetKernelTraits(TensorType::kQ8_0)->dequantize_row(&b, out, kQK);
  for (int i = 0; i < kQK; ++i) EXPECT_EQ(out[i], 0.5f * static_cast<float>(i - 16));
}

TEST(DequantTest, Q4_0AndQ4_1NibbleOrder) {
  BlockQ4_0 b0{};
  b0.d = Fp32ToFp16(2.0f);
  BlockQ4_1 b1{};
  b1.d = Fp32ToFp16(0.25f);
  b1.m = Fp32ToFp16(-1.0f);
  for (int j = 0; j < kQK / 2; ++j) {
    b0.qs[j] = b1.qs[j] = static_cast<uint8_t>((j & 0xf) | ((15 - j) << 4));
  }
  float o0[kQK], o1[kQK];
  GetKernelTraits(TensorType::kQ4_0)->dequantize_row(&b0, o0, kQK);
  GetKernelTraits(TensorType::kQ4_1)->dequantize_row(&b1, o1, kQK);
  for (int j = 0; j < kQK / 2; ++j) {
    EXPECT_EQ(o0[j], 2.0f * static_cast<float>(j - 8));            // low nibble: first half
    EXPECT_EQ(o0[j + 16], 2.0f * static_cast<float>(15 - j - 8));  // high nibble: second half
    EXPECT_EQ(o1[j], 0.25f * static_cast<float>(j) - 1.0f);
    EXPECT_EQ(o1[j + 16], 0.25f * static_cast<float>(15 - j) - 1.0f);
  }
}

TEST(DequantTest, Q4_KScalesAndMins) {
  BlockQ4_K b{};
  b.d = Fp32ToFp16(1.0f);
  b.dmin = Fp32ToFp16(0.5f);
  // Sub-block 0: scale 3, min 2 (6-bit fields of the first 4 pairs live in bytes 0..7).
  b.scales[0] = 3;
  b.scales[4] = 2;
  // Sub-block 4: scale = (scales[8] & 0xf) | (scales[0] >> 6) << 4 -> 5 | 1<<4 = 21.
  b.scales[0] |= 1 << 6;
  b.scales[8] = 5;
  for (auto& q : b.qs) q = 0x21;  // low nibble 1, high nibble 2
  float out[kQKK];
  GetKernelTraits(TensorType::kQ4_K)->dequantize_row(&b, out, kQKK);
  EXPECT_EQ(out[0], 1.0f * 3 * 1 - 0.5f * 2);
  EXPECT_EQ(out[128], 1.0f * 21 * 1);  // sub-block 4: min bits are 0
}

TEST(DequantTest, Q6_KSignedSixBit) {
  BlockQ6_K b{};
  b.d = Fp32ToFp16(0.5f);
  for (auto& s : b.scales) s = 2;
  // element 0: low 4 bits from ql[0] & 0xf, high 2 bits from qh[0] & 3; 0x3f - 32 = 31.
  b.ql[0] = 0x0f;
  b.qh[0] = 0x03;
  float out[kQKK];
  GetKernelTraits(TensorType::kQ6_K)->dequantize_row(&b, out, kQKK);
  EXPECT_EQ(out[0], 0.5f * 2 * 31);
  EXPECT_EQ(out[1], 0.5f * 2 * -32);  // all-zero bits decode to -32
}

TEST(MatMulTest, MatchesNaiveAndIsThreadInvariant) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  const int64_t k = 96, rows = 37, batch = 5;
  std::vector<float> w(static_cast<size_t>(k * rows)), x(static_cast<size_t>(k * batch));
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  const TensorView t = TensorView::Matrix(TensorType::kF32, k, rows,
                                          reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4);
  std::vector<float> y1(static_cast<size_t>(rows * batch)), y2(y1.size());
  ThreadPool one(1), three(3);
  MatMul(t, x.data(), batch, y1.data(), one);
  MatMul(t, x.data(), batch, y2.data(), three);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int64_t i = 0; i < k; ++i)
        ref += static_cast<double>(w[static_cast<size_t>(r * k + i)]) *
               x[static_cast<size_t>(b * k + i)];
      EXPECT_NEAR(y1[static_cast<size_t>(b * rows + r)], ref, 1e-4);
    }
  }
  EXPECT_EQ(y1, y2);  // bit-identical across thread counts
}

TEST(ThreadPoolTest, CoversRangeExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {1, 3, 4, 5, 1000}) {
    std::vector<int> hits(static_cast<size_t>(n), 0);
    pool.ParallelFor(n, [&](int64_t a, int64_t b) {
      for (int64_t i = a; i < b; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (int h : hits) EXPECT_EQ(h, 1);
  }
}

TEST(OpsTest, SoftmaxAndNorms) {
  float x[3] = {1, 2, 3};
  SoftmaxInPlace(x, 3);
  EXPECT_NEAR(x[0] + x[1] + x[2], 1.0f, 1e-6);
  EXPECT_GT(x[2], x[1]);
  const float in[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1}, zeros[4] = {0, 0, 0, 0};
  float out[4];
  RmsNorm(in, ones, out, 4, 0.0f);
  EXPECT_NEAR(out[3], 4.0f / std::sqrt(7.5f), 1e-5);
  LayerNorm(in, ones, zeros, out, 4, 0.0f);
  EXPECT_NEAR(out[0], -1.5f / std::sqrt(1.25f), 1e-5);
}

}  // namespace
}  // namespace frugal
