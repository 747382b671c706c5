// GgufWriter's streamed path (issue 48): the header from names, shapes and metadata alone, then
// each tensor's bytes asked for as the file reaches it. The file must be byte for byte the one
// an independent in-memory assembler (testing::GgufBuilder) and the writer's own in-memory
// path make, and a failing producer must leave nothing behind.
#include "formats/gguf_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "testing/gguf_builder.h"
#include "testing/temp_files.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

struct Spec {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;
  std::vector<uint8_t> data;
};

// Sizes that need padding (F16 of 3, Q8_0 rows of 34 bytes) and ones that do not.
std::vector<Spec> Specs() {
  std::vector<Spec> s;
  s.push_back({"a", TensorType::kF32, {4, 2}, testing::FloatBytes({1, 2, 3, 4, 5, 6, 7, 8})});
  s.push_back({"h", TensorType::kF16, {3}, {0x00, 0x3c, 0x00, 0x40, 0x00, 0xc0}});
  std::vector<uint8_t> q8(34 * 3);
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(i * 13 + 5);
  s.push_back({"blk.0.q", TensorType::kQ8_0, {32, 3}, q8});
  s.push_back({"v", TensorType::kF32, {32}, testing::FloatBytes(std::vector<float>(32, 0.5f))});
  return s;
}

std::vector<uint8_t> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class GgufWriterStream : public ::testing::Test {
 protected:
  frugal::testing::TempDir tmp_{"frugal_gguf_w"};
  const fs::path dir_ = tmp_.dir();
};

TEST_F(GgufWriterStream, SameBytesAsTheInMemoryWriters) {
  const std::vector<Spec> specs = Specs();
  testing::GgufBuilder b;
  GgufWriter whole, streamed;
  for (GgufWriter* w : {&whole, &streamed}) {
    w->SetString("general.architecture", "llama");
    w->SetUint32("llama.block_count", 2);
    w->SetFloat32("llama.rope.freq_base", 10000.0f);
    w->SetStringArray("tokenizer.ggml.tokens", {"a", "bc", ""});
  }
  b.KvString("general.architecture", "llama");
  b.KvU32("llama.block_count", 2);
  b.KvF32("llama.rope.freq_base", 10000.0f);
  b.KvStringArray("tokenizer.ggml.tokens", {"a", "bc", ""});
  for (const Spec& s : specs) {
    b.Tensor(s.name, s.ne, s.type, s.data);
    ASSERT_TRUE(whole.AddTensor(s.name, s.type, s.ne, s.data).ok());
    ASSERT_TRUE(streamed.AddTensorInfo(s.name, s.type, s.ne).ok());
  }
  EXPECT_EQ(streamed.data_bytes(), whole.data_bytes());
  ASSERT_TRUE(whole.Write((dir_ / "whole.gguf").string()).ok());
  std::vector<size_t> asked;
  std::vector<uint8_t> buf;
  ASSERT_TRUE(streamed
                  .WriteStreamed((dir_ / "streamed.gguf").string(),
                                 [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
                                   asked.push_back(i);
                                   buf = specs[i].data;  // one tensor at a time
                                   return std::span<const uint8_t>(buf);
                                 })
                  .ok());
  EXPECT_EQ(asked, (std::vector<size_t>{0, 1, 2, 3}));
  const std::vector<uint8_t> want = b.Build();
  EXPECT_EQ(ReadAll(dir_ / "streamed.gguf"), want);
  EXPECT_EQ(ReadAll(dir_ / "whole.gguf"), want);
  EXPECT_FALSE(fs::exists(dir_ / "streamed.gguf.tmp"));

  auto f = GgufFile::Open((dir_ / "streamed.gguf").string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const TensorView* q = (*f)->FindTensor("blk.0.q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(q->data, q->data + q->nbytes), specs[2].data);
}

TEST_F(GgufWriterStream, FailuresLeaveNothing) {
  const std::vector<Spec> specs = Specs();
  GgufWriter w;
  for (const Spec& s : specs) ASSERT_TRUE(w.AddTensorInfo(s.name, s.type, s.ne).ok());
  EXPECT_FALSE(w.AddTensorInfo("a", TensorType::kF32, {2}).ok());       // twice
  EXPECT_FALSE(w.AddTensorInfo("q", TensorType::kQ8_0, {31, 2}).ok());  // not whole blocks
  const std::string path = (dir_ / "m.gguf").string();
  std::vector<uint8_t> buf;
  EXPECT_FALSE(w.WriteStreamed(path, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
                  if (i == 2) return IoError("gone");
                  buf = specs[i].data;
                  return std::span<const uint8_t>(buf);
                }).ok());
  EXPECT_FALSE(w.WriteStreamed(path, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
                  buf = specs[i].data;
                  if (i == 1) buf.push_back(0);  // one byte too many
                  return std::span<const uint8_t>(buf);
                }).ok());
  EXPECT_FALSE(w.Write(path).ok());  // described only: Write has no bytes to write
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace frugal
