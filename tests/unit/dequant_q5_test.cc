// GGUF's Q5_0, Q5_1 and Q5_K from hand-built blocks: where each element's fifth bit lives. The
// Python test (tests/python/test_dequant.py) checks random blocks against the gguf package.
#include <gtest/gtest.h>

#include "common/fp16.h"
#include "kernels/kernels.h"

namespace frugal {
namespace {

// qh as a little-endian word: bit 0 (element 0) in qh[0], bit 16 (element 16) in qh[2], bit 31
// (element 31) at the top of qh[3].
template <typename Block>
void FillQ5Block(Block& b) {
  b.qh[0] = 0x01;
  b.qh[2] = 0x01;
  b.qh[3] = 0x80;
  b.qs[0] = 0x53;   // element 0: 3, element 16: 5
  b.qs[15] = 0xf0;  // element 15: 0, element 31: 15
}

TEST(DequantQ5Test, Q5_0FifthBitAndOffset) {
  BlockQ5_0 b{};
  b.d = Fp32ToFp16(0.5f);
  FillQ5Block(b);
  float out[kQK];
  GetKernelTraits(TensorType::kQ5_0)->dequantize_row(&b, out, kQK);
  EXPECT_EQ(out[0], 0.5f * 3);     // 3 + 16 - 16
  EXPECT_EQ(out[16], 0.5f * 5);    // 5 + 16 - 16
  EXPECT_EQ(out[15], 0.5f * -16);  // no bits: -16
  EXPECT_EQ(out[31], 0.5f * 15);   // 15 + 16 - 16
  EXPECT_EQ(out[1], 0.5f * -16);
  EXPECT_EQ(out[17], 0.5f * -16);
}

TEST(DequantQ5Test, Q5_1FifthBitAndMinimum) {
  BlockQ5_1 b{};
  b.d = Fp32ToFp16(0.25f);
  b.m = Fp32ToFp16(-2.0f);
  FillQ5Block(b);
  float out[kQK];
  GetKernelTraits(TensorType::kQ5_1)->dequantize_row(&b, out, kQK);
  EXPECT_EQ(out[0], 0.25f * 19 - 2.0f);
  EXPECT_EQ(out[16], 0.25f * 21 - 2.0f);
  EXPECT_EQ(out[15], -2.0f);
  EXPECT_EQ(out[31], 0.25f * 31 - 2.0f);
  EXPECT_EQ(out[1], -2.0f);
}

TEST(DequantQ5Test, Q5_KFifthBitPerSubBlock) {
  BlockQ5_K b{};
  b.d = Fp32ToFp16(1.0f);
  b.dmin = Fp32ToFp16(0.5f);
  b.scales[0] = 3;                // sub-block 0: scale 3
  b.scales[4] = 2;                //              min 2
  b.scales[1] = 4;                // sub-block 1: scale 4
  b.scales[5] = 1;                //              min 1
  b.scales[8] = 5;                // sub-block 4: scale 5, min 0 (low and high nibble of byte 8)
  b.scales[11] = 0x12;            // sub-block 7: scale 2, min 1
  for (auto& q : b.qs) q = 0x21;  // low nibble 1, high nibble 2
  b.qh[0] = 0x03;                 // element 0 of sub-blocks 0 and 1
  b.qh[5] = 0x10;                 // element 5 of sub-block 4
  b.qh[31] = 0x80;                // element 31 of sub-block 7
  float out[kQKK];
  GetKernelTraits(TensorType::kQ5_K)->dequantize_row(&b, out, kQKK);
  EXPECT_EQ(out[0], 3.0f * 17 - 0.5f * 2);
  EXPECT_EQ(out[1], 3.0f * 1 - 0.5f * 2);
  EXPECT_EQ(out[32], 4.0f * 18 - 0.5f * 1);  // sub-block 1: high nibbles of qs[0..31]
  EXPECT_EQ(out[33], 4.0f * 2 - 0.5f * 1);
  EXPECT_EQ(out[64], 0.0f);        // sub-block 2: scale and min 0
  EXPECT_EQ(out[133], 5.0f * 17);  // sub-block 4: low nibbles of qs[64..95]
  EXPECT_EQ(out[134], 5.0f * 1);
  EXPECT_EQ(out[224], 2.0f * 2 - 0.5f * 1);  // sub-block 7: high nibbles of qs[96..127]
  EXPECT_EQ(out[255], 2.0f * 18 - 0.5f * 1);
}

}  // namespace
}  // namespace frugal
