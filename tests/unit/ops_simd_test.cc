// The element-wise kernels of every CPU level against the scalar reference at awkward sizes.
// Error budgets:
//  - QuantizeRowQ8Act, Axpy: bit-identical (same float operations);
//  - RmsNorm: |y - ref| <= 2 ulp-ish (4e-7 relative) + 1e-30: only the order of the double
//    sum of squares differs;
//  - Softmax: |y - ref| <= 1e-6 x max(ref) + 4e-7 x |ref| (exp by polynomial, a few ulps);
//  - SwiGlu: |y - ref| <= 1e-6 x |ref| + 1e-30 (same exp budget through x / (1 + e^-x));
//  - Gelu: |y - ref| <= 1e-6 x |x| + 1e-30 (erf by a rational approximation, 1.5e-7 absolute);
//  - AttentionHead: |out - ref| <= 1e-5 x sum_p p_p |v_p| per dim (softmax budget plus FMA and
//    summation order), with float or half (F16) keys and values;
//  - with half keys and values, each level's result equals its result for float ones holding the
//    same values bit for bit (the halves are widened exactly, then the float arithmetic runs);
//  - F16 against F32 keys and values (the rounding of storing them as halves): see
//    AttentionF16AgainstF32WithinRoundingBound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"

namespace frugal {
namespace {

constexpr int64_t kSizes[] = {1, 7, 8, 31, 33, 127, 129, 576, 4095};

std::vector<float> Random(int64_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

TEST(OpsSimdTest, QuantizeQ8BitIdentical) {
  std::mt19937 rng(1);
  const OpsKernels& ref = GetOpsKernels(CpuLevel::kScalar);
  for (int64_t blocks : {1, 3, 18, 129}) {
    const int64_t n = blocks * kQK;
    auto x = Random(n, 2.0f, rng);
    if (blocks > 1) std::fill_n(x.begin() + kQK, kQK, 0.0f);  // an all-zero block (d = 0)
    x[3] = 127.0f * 0.5f;                                     // exact .5 ties after scaling
    x[4] = -0.5f;
    for (CpuLevel level : SupportedCpuLevels()) {
      std::vector<BlockQ8Act> a(static_cast<size_t>(blocks)), b(a.size());
      ref.quantize_q8(x.data(), b.data(), n);
      GetOpsKernels(level).quantize_q8(x.data(), a.data(), n);
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8Act)))
          << CpuLevelName(level) << " n=" << n;
      for (const BlockQ8Act& q : a) {  // the half sums are those of the stored integers
        int half[2] = {0, 0};
        for (int j = 0; j < kQK; ++j) half[j / (kQK / 2)] += q.qs[j];
        ASSERT_EQ(q.half_sums[0], half[0]) << CpuLevelName(level);
        ASSERT_EQ(q.half_sums[1], half[1]) << CpuLevelName(level);
      }
    }
  }
}

TEST(OpsSimdTest, AxpyBitIdentical) {
  std::mt19937 rng(2);
  for (int64_t n : kSizes) {
    const auto x = Random(n, 1, rng), y0 = Random(n, 1, rng);
    auto b = y0;
    GetOpsKernels(CpuLevel::kScalar).axpy(0.37f, x.data(), b.data(), n);
    for (CpuLevel level : SupportedCpuLevels()) {
      auto a = y0;
      GetOpsKernels(level).axpy(0.37f, x.data(), a.data(), n);
      ASSERT_EQ(a, b) << CpuLevelName(level) << " n=" << n;
    }
  }
}

TEST(OpsSimdTest, RmsNormWithinBudget) {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    const auto x = Random(n, 3, rng), w = Random(n, 1, rng);
    std::vector<float> b(static_cast<size_t>(n)), a(b.size());
    GetOpsKernels(CpuLevel::kScalar).rms_norm(x.data(), w.data(), b.data(), n, 1e-5f);
    for (CpuLevel level : SupportedCpuLevels()) {
      GetOpsKernels(level).rms_norm(x.data(), w.data(), a.data(), n, 1e-5f);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_LE(std::fabs(a[i] - b[i]), 4e-7f * std::fabs(b[i]) + 1e-30f)
            << CpuLevelName(level) << " n=" << n;
      }
    }
  }
}

TEST(OpsSimdTest, SoftmaxWithinBudget) {
  std::mt19937 rng(4);
  for (int64_t n : kSizes) {
    for (float spread : {0.1f, 5.0f, 40.0f}) {  // 40: many terms underflow to ~0
      const auto x = Random(n, spread, rng);
      auto b = x;
      GetOpsKernels(CpuLevel::kScalar).softmax(b.data(), n);
      const float mx = *std::max_element(b.begin(), b.end());
      for (CpuLevel level : SupportedCpuLevels()) {
        auto a = x;
        GetOpsKernels(level).softmax(a.data(), n);
        double sum = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          ASSERT_LE(std::fabs(a[i] - b[i]), 1e-6f * mx + 4e-7f * std::fabs(b[i]))
              << CpuLevelName(level) << " n=" << n << " spread " << spread << " i=" << i;
          sum += a[i];
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
}

TEST(OpsSimdTest, GeluWithinBudget) {
  std::mt19937 rng(9);
  for (int64_t n : kSizes) {
    auto x = Random(n, 3, rng);
    if (n > 8)
      x[3] = -12.0f, x[4] = 12.0f, x[5] = 0.0f, x[6] = -1e-20f, x[7] = 1e-3f;  // tails, zero, tiny
    std::vector<float> b = x;
    GetOpsKernels(CpuLevel::kScalar).gelu(b.data(), n);
    for (CpuLevel level : SupportedCpuLevels()) {
      std::vector<float> a = x;
      GetOpsKernels(level).gelu(a.data(), n);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_LE(std::fabs(a[i] - b[i]), 1e-6f * std::fabs(x[i]) + 1e-30f)
            << CpuLevelName(level) << " n=" << n << " x=" << x[i];
      }
    }
  }
  // The reference is the erf GELU: a few known values.
  float v[] = {-1.0f, 0.0f, 1.0f, 2.0f};
  GeluInPlace(v, 4);
  EXPECT_NEAR(v[0], -0.158655254f, 1e-6f);
  EXPECT_EQ(v[1], 0.0f);
  EXPECT_NEAR(v[2], 0.841344746f, 1e-6f);
  EXPECT_NEAR(v[3], 1.954499736f, 1e-6f);
}

TEST(OpsSimdTest, SwiGluWithinBudget) {
  std::mt19937 rng(5);
  for (int64_t n : kSizes) {
    auto g = Random(n, 4, rng);
    const auto u = Random(n, 1, rng);
    if (n > 8) g[5] = -100.0f, g[6] = 100.0f, g[7] = 0.0f, g[8] = -88.2f;  // saturated tails, zero
    std::vector<float> b(static_cast<size_t>(n)), a(b.size());
    GetOpsKernels(CpuLevel::kScalar).swiglu(g.data(), u.data(), b.data(), n);
    for (CpuLevel level : SupportedCpuLevels()) {
      GetOpsKernels(level).swiglu(g.data(), u.data(), a.data(), n);
      for (size_t i = 0; i < a.size(); ++i) {
        // Below e^-87 the polynomial exp clamps: the product is then tiny in absolute terms.
        ASSERT_LE(std::fabs(a[i] - b[i]), 1e-6f * std::fabs(b[i]) + 1e-30f)
            << CpuLevelName(level) << " n=" << n << " g=" << g[i];
      }
    }
  }
}

// Copies a contiguous [n][stride] array into separate blocks of `block` positions, as a paged KV
// cache holds them (each in its own allocation, so a kernel that runs past a block's end reads
// the wrong memory); returns the table of block starts. T: float or a uint16_t half.
template <typename T>
std::vector<const void*> BlockTable(const std::vector<T>& x, int64_t n, int64_t stride,
                                    int64_t block, std::vector<std::vector<T>>* storage) {
  std::vector<const void*> t;
  T poison;  // unused tail: NaN
  if constexpr (sizeof(T) == 2) {
    poison = 0x7e00;
  } else {
    poison = NAN;
  }
  for (int64_t p = 0; p < n; p += block) {
    const int64_t m = std::min(block, n - p);
    storage->emplace_back(x.begin() + p * stride, x.begin() + (p + m) * stride);
    storage->back().resize(static_cast<size_t>(block * stride), poison);
  }
  for (const auto& b : *storage) t.push_back(b.data());
  return t;
}

TEST(OpsSimdTest, AttentionHeadWithinBudget) {
  std::mt19937 rng(6);
  for (int64_t hd : {8, 12, 64, 80, 128}) {
    for (int64_t n : {1, 3, 4, 7, 33, 257}) {
      const int64_t stride = 3 * hd + 8;  // heads interleaved in the cache, as with GQA
      const int64_t offset = hd;          // the second head
      const auto q = Random(hd, 1, rng), k = Random(n * stride, 1, rng),
                 v = Random(n * stride, 1, rng);
      std::vector<std::vector<float>> ks1, vs1;
      const auto kt = BlockTable(k, n, stride, n, &ks1), vt = BlockTable(v, n, stride, n, &vs1);
      const KvBlocks whole{kt.data(), vt.data(), offset, n, stride};
      std::vector<float> sb(static_cast<size_t>(n)), ob(static_cast<size_t>(hd));
      GetOpsKernels(CpuLevel::kScalar)
          .attention_head(q.data(), whole, n, hd, 0.125f, sb.data(), ob.data());
      for (CpuLevel level : SupportedCpuLevels()) {
        std::vector<float> sa(sb.size()), oa(ob.size(), NAN);
        GetOpsKernels(level).attention_head(q.data(), whole, n, hd, 0.125f, sa.data(), oa.data());
        for (int64_t e = 0; e < hd; ++e) {
          double mag = 0;
          for (int64_t p = 0; p < n; ++p)
            mag += sb[static_cast<size_t>(p)] *
                   std::fabs(v[static_cast<size_t>(p * stride + offset + e)]);
          ASSERT_LE(std::fabs(oa[static_cast<size_t>(e)] - ob[static_cast<size_t>(e)]),
                    1e-5 * mag + 1e-30)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " dim " << e;
        }
        // Paged: blocks of 4 and 16 positions give bit-identical results to one block.
        for (int64_t block : {4, 16}) {
          std::vector<std::vector<float>> ks, vs;
          const auto kp = BlockTable(k, n, stride, block, &ks),
                     vp = BlockTable(v, n, stride, block, &vs);
          std::vector<float> sp(sb.size()), op(ob.size(), NAN);
          GetOpsKernels(level).attention_head(q.data(),
                                              KvBlocks{kp.data(), vp.data(), offset, block, stride},
                                              n, hd, 0.125f, sp.data(), op.data());
          ASSERT_EQ(std::memcmp(op.data(), oa.data(), op.size() * sizeof(float)), 0)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " block=" << block;
        }
      }
    }
  }
}

TEST(OpsSimdTest, AttentionGroupEqualsEachHeadAlone) {
  // The grouped kernel reads a span of keys and values for all the group's heads in turn; each
  // head's probabilities and output must be AttentionHead's bit for bit at every level, for spans
  // cut short by the end of the positions or of a paged block, and heads of a width that the
  // vector kernels do not take (hd 12: the scalar path).
  std::mt19937 rng(7);
  for (int64_t hd : {12, 64, 80, 128}) {
    for (int64_t n : {1, 5, 32, 33, 70, 257}) {
      for (int64_t heads : {1, 2, 6, 7}) {
        const int64_t stride = 2 * hd + 8, offset = hd;  // the second of two key/value heads
        const auto q = Random(heads * hd, 1, rng), k = Random(n * stride, 1, rng),
                   v = Random(n * stride, 1, rng);
        for (int64_t block : {n, int64_t{4}, int64_t{16}, int64_t{36}}) {
          std::vector<std::vector<float>> ks, vs;
          const auto kt = BlockTable(k, n, stride, block, &ks),
                     vt = BlockTable(v, n, stride, block, &vs);
          const KvBlocks kv{kt.data(), vt.data(), offset, block, stride};
          for (CpuLevel level : SupportedCpuLevels()) {
            const OpsKernels& ops = GetOpsKernels(level);
            std::vector<float> sg(static_cast<size_t>(heads * n), NAN),
                og(static_cast<size_t>(heads * hd), NAN);
            ops.attention_group(q.data(), heads, kv, n, hd, 0.125f, sg.data(), og.data());
            for (int64_t h = 0; h < heads; ++h) {
              std::vector<float> sh(static_cast<size_t>(n)), oh(static_cast<size_t>(hd), NAN);
              ops.attention_head(q.data() + h * hd, kv, n, hd, 0.125f, sh.data(), oh.data());
              ASSERT_EQ(std::memcmp(oh.data(), og.data() + h * hd, oh.size() * sizeof(float)), 0)
                  << CpuLevelName(level) << " hd=" << hd << " n=" << n << " heads=" << heads
                  << " block=" << block << " head " << h;
              ASSERT_EQ(std::memcmp(sh.data(), sg.data() + h * n, sh.size() * sizeof(float)), 0)
                  << CpuLevelName(level) << " hd=" << hd << " n=" << n << " heads=" << heads
                  << " block=" << block << " head " << h;
            }
          }
        }
      }
    }
  }
}

// Halves of x (round to nearest even, the scalar converter) and the floats they hold.
std::vector<uint16_t> ToHalves(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  GetOpsKernels(CpuLevel::kScalar).fp32_to_fp16(x.data(), h.data(), static_cast<int64_t>(x.size()));
  return h;
}
std::vector<float> Widened(const std::vector<uint16_t>& h) {
  std::vector<float> x(h.size());
  GetOpsKernels(CpuLevel::kScalar).fp16_to_fp32(h.data(), x.data(), static_cast<int64_t>(h.size()));
  return x;
}

TEST(OpsSimdTest, AttentionF16EqualsF32OnTheSameValuesAndIsWithinBudget) {
  // Half keys and values: at every level, bit for bit the level's float result on the widened
  // values, paged or not, one head or a group; against the scalar level within the float budget.
  std::mt19937 rng(8);
  for (int64_t hd : {8, 12, 64, 80, 128}) {
    for (int64_t n : {1, 3, 4, 7, 33, 70, 257}) {
      const int64_t heads = 3;
      const int64_t stride = 2 * hd + 8, offset = hd;  // the second of two key/value heads
      const auto q = Random(heads * hd, 1, rng);
      const auto kh = ToHalves(Random(n * stride, 1, rng)),
                 vh = ToHalves(Random(n * stride, 1, rng));
      const auto kf = Widened(kh), vf = Widened(vh);
      std::vector<std::vector<uint16_t>> ks1, vs1;
      const auto kt1 = BlockTable(kh, n, stride, n, &ks1), vt1 = BlockTable(vh, n, stride, n, &vs1);
      const KvBlocks whole{kt1.data(), vt1.data(), offset, n, stride, KvType::kF16};
      std::vector<float> sb(static_cast<size_t>(heads * n)), ob(static_cast<size_t>(heads * hd));
      GetOpsKernels(CpuLevel::kScalar)
          .attention_group(q.data(), heads, whole, n, hd, 0.125f, sb.data(), ob.data());
      for (CpuLevel level : SupportedCpuLevels()) {
        const OpsKernels& ops = GetOpsKernels(level);
        for (int64_t block : {n, int64_t{4}, int64_t{16}}) {
          std::vector<std::vector<uint16_t>> ks, vs;
          std::vector<std::vector<float>> kfs, vfs;
          const auto kt = BlockTable(kh, n, stride, block, &ks),
                     vt = BlockTable(vh, n, stride, block, &vs);
          const auto kft = BlockTable(kf, n, stride, block, &kfs),
                     vft = BlockTable(vf, n, stride, block, &vfs);
          const KvBlocks half{kt.data(), vt.data(), offset, block, stride, KvType::kF16};
          const KvBlocks full{kft.data(), vft.data(), offset, block, stride, KvType::kF32};
          std::vector<float> sa(sb.size()), oa(ob.size(), NAN), sf(sb.size()), of(ob.size(), NAN);
          ops.attention_group(q.data(), heads, half, n, hd, 0.125f, sa.data(), oa.data());
          ops.attention_group(q.data(), heads, full, n, hd, 0.125f, sf.data(), of.data());
          ASSERT_EQ(std::memcmp(oa.data(), of.data(), oa.size() * sizeof(float)), 0)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " block=" << block;
          ASSERT_EQ(std::memcmp(sa.data(), sf.data(), sa.size() * sizeof(float)), 0)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " block=" << block;
          for (int64_t h = 0; h < heads; ++h) {  // the group is each head alone
            std::vector<float> sh(static_cast<size_t>(n)), oh(static_cast<size_t>(hd), NAN);
            ops.attention_head(q.data() + h * hd, half, n, hd, 0.125f, sh.data(), oh.data());
            ASSERT_EQ(std::memcmp(oh.data(), oa.data() + h * hd, oh.size() * sizeof(float)), 0)
                << CpuLevelName(level) << " hd=" << hd << " n=" << n << " head " << h;
          }
          for (int64_t h = 0; h < heads; ++h) {
            for (int64_t e = 0; e < hd; ++e) {
              double mag = 0;
              for (int64_t p = 0; p < n; ++p)
                mag += sb[static_cast<size_t>(h * n + p)] *
                       std::fabs(vf[static_cast<size_t>(p * stride + offset + e)]);
              const auto i = static_cast<size_t>(h * hd + e);
              ASSERT_LE(std::fabs(oa[i] - ob[i]), 1e-5 * mag + 1e-30)
                  << CpuLevelName(level) << " hd=" << hd << " n=" << n << " dim " << e;
            }
          }
        }
      }
    }
  }
}

TEST(OpsSimdTest, AttentionF16AgainstF32WithinRoundingBound) {
  // Storing keys and values as halves rounds each to a relative 2^-11. A score moves by at most
  // d_p = scale x 2^-11 x sum_e |q_e k_pe|; with delta = max_p d_p every probability moves by a
  // factor within e^(+-2 delta), so per dimension
  //   |out16 - out32| <= (2^-11 + e^(2 delta) - 1) x sum_p p_p |v_p| (+ the float budget, 1e-5).
  // The test holds each level to that bound and to a plain 2e-3 x sum_p p_p |v_p| for these
  // N(0, 1) heads (delta < 0.006 here), and checks the bound is not slack by more than 100x.
  std::mt19937 rng(9);
  double worst_ratio = 0;
  for (int64_t hd : {64, 128}) {
    for (int64_t n : {1, 7, 33, 257, 1000}) {
      const int64_t stride = hd;
      const auto q = Random(hd, 1, rng), k = Random(n * stride, 1, rng),
                 v = Random(n * stride, 1, rng);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      double delta = 0;
      for (int64_t p = 0; p < n; ++p) {
        double s = 0;
        for (int64_t e = 0; e < hd; ++e)
          s += std::fabs(q[static_cast<size_t>(e)] * k[static_cast<size_t>(p * stride + e)]);
        delta = std::max(delta, scale * s * 0x1p-11);
      }
      for (CpuLevel level : SupportedCpuLevels()) {
        const OpsKernels& ops = GetOpsKernels(level);
        std::vector<std::vector<float>> s1, s2;
        const auto k32 = BlockTable(k, n, stride, 16, &s1), v32 = BlockTable(v, n, stride, 16, &s2);
        std::vector<std::vector<uint16_t>> h1, h2;
        const auto kh = BlockTable(ToHalves(k), n, stride, 16, &h1),
                   vh = BlockTable(ToHalves(v), n, stride, 16, &h2);
        std::vector<float> p32(static_cast<size_t>(n)), o32(static_cast<size_t>(hd)),
            p16(p32.size()), o16(o32.size());
        ops.attention_head(q.data(), KvBlocks{k32.data(), v32.data(), 0, 16, stride, KvType::kF32},
                           n, hd, scale, p32.data(), o32.data());
        ops.attention_head(q.data(), KvBlocks{kh.data(), vh.data(), 0, 16, stride, KvType::kF16}, n,
                           hd, scale, p16.data(), o16.data());
        const double bound = 0x1p-11 + std::expm1(2 * delta);
        for (int64_t e = 0; e < hd; ++e) {
          double mag = 0;
          for (int64_t p = 0; p < n; ++p)
            mag += p32[static_cast<size_t>(p)] * std::fabs(v[static_cast<size_t>(p * stride + e)]);
          const double err = std::fabs(o16[static_cast<size_t>(e)] - o32[static_cast<size_t>(e)]);
          ASSERT_LE(err, (bound + 1e-5) * mag + 1e-30)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " dim " << e;
          ASSERT_LE(err, 2e-3 * mag + 1e-30)
              << CpuLevelName(level) << " hd=" << hd << " n=" << n << " dim " << e;
          worst_ratio = std::max(worst_ratio, err / ((bound + 1e-5) * mag + 1e-30));
        }
      }
    }
  }
  EXPECT_GT(worst_ratio, 0.01) << "the bound is far looser than the error it bounds";
}

}  // namespace
}  // namespace frugal
