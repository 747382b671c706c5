// The float <-> IEEE half converters (common/fp16.h, and each CPU level's row converters in
// OpsKernels, F16C's VCVTPS2PH / VCVTPH2PS on x86) give the same bits: every one of the 65536
// halves widened and narrowed again, and a large sample of floats (every exponent, ties,
// subnormals, overflow, NaN payloads) narrowed with round to nearest even. The KV cache stores
// halves written by whichever level runs, so a prefix written at one level reads the same at
// another only if they agree exactly.
#include "common/fp16.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace frugal {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

TEST(Fp16ConvertTest, EveryHalfWidensExactlyAndNarrowsBack) {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  for (CpuLevel level : SupportedCpuLevels()) {
    const OpsKernels& ops = GetOpsKernels(level);
    std::vector<float> f(h.size());
    std::vector<uint16_t> back(h.size());
    ops.fp16_to_fp32(h.data(), f.data(), 65536);
    ops.fp32_to_fp16(f.data(), back.data(), 65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      ASSERT_EQ(Bits(f[i]), Bits(Fp16ToFp32(h[i])))
          << CpuLevelName(level) << " half 0x" << std::hex << i;
      const bool nan = (i & 0x7c00u) == 0x7c00u && (i & 0x3ffu) != 0;
      // Every half but a signalling NaN comes back as itself; that one comes back quiet.
      ASSERT_EQ(back[i], nan ? (i | 0x200u) : i)
          << CpuLevelName(level) << " half 0x" << std::hex << i;
      ASSERT_EQ(back[i], Fp32ToFp16(f[i])) << CpuLevelName(level) << " half 0x" << std::hex << i;
    }
  }
  // Spot values, independent of the converter.
  EXPECT_EQ(Fp16ToFp32(0x3c00), 1.0f);
  EXPECT_EQ(Fp16ToFp32(0x0001), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(Fp16ToFp32(0x7bff), 65504.0f);  // largest finite
  EXPECT_EQ(Bits(Fp16ToFp32(0xfc00)), 0xff800000u);
}

TEST(Fp16ConvertTest, FloatsNarrowAsF16cDoes) {
  // Floats: a stride through all 2^32 bit patterns, random ones, and the edges of every half
  // exponent (ties either side of each rounding boundary).
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093)
    x.push_back(FromBits(static_cast<uint32_t>(b)));
  std::mt19937 rng(11);
  for (int i = 0; i < 1 << 20; ++i) x.push_back(FromBits(static_cast<uint32_t>(rng())));
  for (uint32_t e = 100; e < 146; ++e) {  // 2^-27 .. 2^18: subnormal halves to overflow
    for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffffu, 0x7ff000u,
                       0x7fefffu, 0x400000u, 0x401000u, 0x403000u}) {
      for (uint32_t sign : {0u, 0x80000000u}) x.push_back(FromBits(sign | (e << 23) | m));
    }
  }
  for (uint32_t b :
       {0x7f800000u, 0x7f800001u, 0x7fa00000u, 0x7fc00000u, 0x7fc02000u, 0x7fffffffu, 0xff800001u,
        0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x33000000u, 0x33000001u, 0x337fffffu,
        0x33800000u, 0x38800000u, 0x387fffffu, 0x00000001u, 0x00800000u})
    x.push_back(FromBits(b));
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = Fp32ToFp16(x[i]);
  for (CpuLevel level : SupportedCpuLevels()) {
    std::vector<uint16_t> got(x.size());
    GetOpsKernels(level).fp32_to_fp16(x.data(), got.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], ref[i]) << CpuLevelName(level) << " float 0x" << std::hex << Bits(x[i]);
    }
  }
  // Round to nearest even, overflow, underflow and NaN, independent of any level.
  EXPECT_EQ(Fp32ToFp16(1.0f + 0x1p-11f), 0x3c00);  // a tie goes to the even neighbour
  EXPECT_EQ(Fp32ToFp16(1.0f + 0x1p-10f + 0x1p-11f), 0x3c02);
  EXPECT_EQ(Fp32ToFp16(65519.0f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7c00);  // the tie above the largest finite: inf
  EXPECT_EQ(Fp32ToFp16(0x1p-25f), 0x0000);  // a tie with 0: even
  EXPECT_EQ(Fp32ToFp16(0x1.8p-24f), 0x0002);
  EXPECT_EQ(Fp32ToFp16(FromBits(0x7fa00000u)), 0x7f00);  // signalling NaN: quiet, payload kept
  EXPECT_EQ(Fp32ToFp16(FromBits(0xff800001u)), 0xfe00);
}

// The row converters at lengths that are not a multiple of any vector width: each level's tail
// (and a row starting off the vector alignment) gives the scalar converter's bits.
TEST(Fp16ConvertTest, RowTailsAgreeWithTheScalarConverter) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 8.0f);
  for (int64_t n : {1, 2, 3, 7, 9, 15, 17, 31, 33, 63, 65}) {
    std::vector<float> x(static_cast<size_t>(n) + 1);
    for (auto& v : x) v = nd(rng);
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = Fp32ToFp16(x[i]);
    for (CpuLevel level : SupportedCpuLevels()) {
      const OpsKernels& ops = GetOpsKernels(level);
      // From the second element: a row that starts one element past an aligned address.
      std::vector<uint16_t> got(x.size(), 0xabcd);
      ops.fp32_to_fp16(x.data() + 1, got.data() + 1, n);
      EXPECT_EQ(got[0], 0xabcd) << CpuLevelName(level) << " n=" << n;  // nothing before the row
      for (int64_t i = 1; i <= n; ++i)
        ASSERT_EQ(got[i], h[i]) << CpuLevelName(level) << " n=" << n << " i=" << i;
      std::vector<float> wide(x.size(), -1.0f);
      ops.fp16_to_fp32(h.data() + 1, wide.data() + 1, n);
      EXPECT_EQ(wide[0], -1.0f) << CpuLevelName(level) << " n=" << n;
      for (int64_t i = 1; i <= n; ++i)
        ASSERT_EQ(Bits(wide[i]), Bits(Fp16ToFp32(h[i])))
            << CpuLevelName(level) << " n=" << n << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace frugal
