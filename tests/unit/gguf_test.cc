#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <random>

#include "testing/gguf_builder.h"

namespace frugal {
namespace {

using testing::FloatBytes;
using testing::GgufBuilder;

StatusOr<std::unique_ptr<GgufFile>> ParseBytes(const std::vector<uint8_t>& bytes) {
  return GgufFile::Parse(MappedFile::FromBuffer(bytes.data(), bytes.size(), "test.gguf"));
}

std::vector<uint8_t> SampleFile() {
  GgufBuilder b;
  b.KvString("general.architecture", "llama");
  b.KvU32("llama.block_count", 2);
  b.KvF32("llama.rope.freq_base", 10000.0f);
  b.KvStringArray("tokenizer.ggml.tokens", {"a", "b", "c"});
  b.Tensor("w", {4, 2}, TensorType::kF32, FloatBytes({1, 2, 3, 4, 5, 6, 7, 8}));
  b.Tensor("v", {32}, TensorType::kF32, FloatBytes(std::vector<float>(32, 0.5f)));
  return b.Build();
}

TEST(GgufTest, ParsesMetadataAndTensors) {
  const auto bytes = SampleFile();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "llama");
  EXPECT_EQ(*(*f)->GetInt("llama.block_count"), 2);
  EXPECT_FLOAT_EQ(static_cast<float>(*(*f)->GetFloat("llama.rope.freq_base")), 10000.0f);
  const GgufValue* toks = (*f)->Find("tokenizer.ggml.tokens");
  ASSERT_NE(toks, nullptr);
  ASSERT_EQ(toks->strings.size(), 3u);
  EXPECT_EQ(toks->strings[2], "c");
  const TensorView* w = (*f)->FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->ne[0], 4);
  EXPECT_EQ(w->ne[1], 2);
  EXPECT_EQ(w->nbytes, 32u);
  EXPECT_EQ(reinterpret_cast<const float*>(w->data)[5], 6.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*f)->FindTensor("v")->data) % 32,
            reinterpret_cast<uintptr_t>(bytes.data()) % 32);
}

TEST(GgufTest, WrongTypeIsAnErrorNotACrash) {
  const auto bytes = SampleFile();
  auto f = ParseBytes(bytes);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->GetInt("general.architecture").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->GetString("missing.key").status().code(), StatusCode::kNotFound);
}

TEST(GgufTest, EveryTruncationIsRefused) {
  const auto bytes = SampleFile();
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    auto f = ParseBytes(cut);
    EXPECT_FALSE(f.ok()) << "accepted a file cut at " << len << " of " << bytes.size();
    if (!f.ok()) {
      EXPECT_TRUE(f.status().code() == StatusCode::kDataLoss) << f.status().ToString();
    }
  }
}

TEST(GgufTest, BadMagicAndVersion) {
  auto bytes = SampleFile();
  bytes[0] = 'X';
  EXPECT_EQ(ParseBytes(bytes).status().code(), StatusCode::kDataLoss);
  bytes = SampleFile();
  bytes[4] = 99;
  EXPECT_EQ(ParseBytes(bytes).status().code(), StatusCode::kUnimplemented);
}

TEST(GgufTest, HugeCountsAreRefusedWithoutAllocating) {
  auto bytes = SampleFile();
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(&bytes[8], &huge, 8);  // tensor count
  EXPECT_EQ(ParseBytes(bytes).status().code(), StatusCode::kDataLoss);
  bytes = SampleFile();
  std::memcpy(&bytes[16], &huge, 8);  // kv count
  EXPECT_EQ(ParseBytes(bytes).status().code(), StatusCode::kDataLoss);
}

TEST(GgufTest, TensorPastEndOfFileIsRefused) {
  GgufBuilder b;
  b.Tensor("w", {64, 64}, TensorType::kF32,
           FloatBytes(std::vector<float>(8)));  // far too little data
  const auto bytes = b.Build();
  auto f = ParseBytes(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("past the end"), std::string::npos) << f.status().message();
}

TEST(GgufTest, UnknownTensorTypeIsRefused) {
  GgufBuilder b;
  b.Tensor("w", {32}, static_cast<TensorType>(77), std::vector<uint8_t>(64));
  const auto bytes = b.Build();
  EXPECT_EQ(ParseBytes(bytes).status().code(), StatusCode::kUnimplemented);
}

TEST(GgufTest, RandomCorruptionNeverCrashes) {
  const auto good = SampleFile();
  std::mt19937 rng(42);
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    auto f = ParseBytes(bytes);  // must return, OK or not
    if (f.ok()) {
      for (const auto& t : (*f)->tensors()) {
        ASSERT_LE(t.data + t.nbytes, bytes.data() + bytes.size());
      }
    }
  }
}

}  // namespace
}  // namespace frugal
