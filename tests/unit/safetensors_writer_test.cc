// The safetensors writer's streamed path (--target vllm, issue 48): Hugging Face's sharding rule,
// shard names and the index, the layout (every tensor aligned to its element size, no holes)
// read back by Frugal's reader, a producer asked once per tensor in file order, and failures
// that leave nothing behind.
#include "formats/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/safetensors.h"
#include "testing/temp_files.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;

SafetensorsEntry Entry(std::string name, std::string dtype, std::vector<int64_t> shape) {
  size_t n = 1;
  for (const int64_t d : shape) n *= static_cast<size_t>(d);
  SafetensorsEntry e{std::move(name), dtype, std::move(shape), 0};
  e.bytes = n * SafetensorsDtypeSize(e.dtype);
  return e;
}

std::vector<SafetensorsEntry> OfBytes(const std::vector<size_t>& sizes) {
  std::vector<SafetensorsEntry> e;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::string name = "t";  // not "t" + to_string: GCC 12's -Wrestrict false positive
    name += std::to_string(i);
    e.push_back(Entry(name, "U8", {static_cast<int64_t>(sizes[i])}));
  }
  return e;
}

TEST(PlanShards, GreedyInOrderAndATensorOverTheSizeAlone) {
  using Shards = std::vector<std::vector<size_t>>;
  // 40 + 50 fit in 100; 30 would take it to 120; exactly 100 still fits.
  EXPECT_EQ(PlanShards(OfBytes({40, 50, 30, 70}), 100), (Shards{{0, 1}, {2, 3}}));
  // A tensor over the size closes the shard before it and takes one of its own.
  EXPECT_EQ(PlanShards(OfBytes({10, 250, 20, 30}), 100), (Shards{{0}, {1}, {2, 3}}));
  EXPECT_EQ(PlanShards(OfBytes({250}), 100), (Shards{{0}}));
  EXPECT_EQ(PlanShards(OfBytes({250, 250}), 100), (Shards{{0}, {1}}));
  // Everything within the size: one shard (written as model.safetensors, no index).
  EXPECT_EQ(PlanShards(OfBytes({1, 2, 3}), 5'000'000'000), (Shards{{0, 1, 2}}));
  EXPECT_TRUE(PlanShards({}, 100).empty());
  // Every tensor in exactly one shard, in order, each shard within the size unless alone.
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 200; ++i) sizes.push_back((i * 7919) % 97 + 1);
  const Shards s = PlanShards(OfBytes(sizes), 150);
  size_t next = 0;
  for (const auto& shard : s) {
    size_t bytes = 0;
    for (const size_t i : shard) {
      EXPECT_EQ(i, next++);
      bytes += sizes[i];
    }
    EXPECT_TRUE(bytes <= 150 || shard.size() == 1);
  }
  EXPECT_EQ(next, sizes.size());
}

TEST(ShardIndex, NamesAndIndexAsTransformersWritesThem) {
  EXPECT_EQ(ShardFileName(0, 3), "model-00001-of-00003.safetensors");
  EXPECT_EQ(ShardFileName(11, 12), "model-00012-of-00012.safetensors");
  const std::vector<SafetensorsEntry> e = {Entry("b", "F32", {2, 3}), Entry("a", "F16", {5}),
                                           Entry("c", "I32", {4})};
  const nlohmann::json j = nlohmann::json::parse(ShardIndexJson(e, {{0}, {1, 2}}));
  EXPECT_EQ(j["metadata"]["total_size"], 24 + 10 + 16);
  EXPECT_EQ(j["weight_map"].size(), 3u);
  EXPECT_EQ(j["weight_map"]["b"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(j["weight_map"]["a"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(j["weight_map"]["c"], "model-00002-of-00002.safetensors");
}

class StreamedWrite : public ::testing::Test {
 protected:
  frugal::testing::TempDir tmp_{"frugal_st"};
  const fs::path dir_ = tmp_.dir();
};

// Awkward sizes: odd element counts of 2- and 1-byte types between 4-byte ones, and a
// quantized Linear's four tensors.
std::vector<SafetensorsEntry> AwkwardEntries() {
  return {Entry("h", "F16", {3}),
          Entry("a", "F32", {2, 3}),
          Entry("u", "U8", {5}),
          Entry("l.qweight", "I32", {4, 8}),
          Entry("l.qzeros", "I32", {1, 1}),
          Entry("l.scales", "F16", {1, 8}),
          Entry("l.g_idx", "I32", {32}),
          Entry("d", "F64", {3}),
          Entry("bf", "BF16", {7})};
}

std::vector<uint8_t> Pattern(const SafetensorsEntry& e, size_t seed) {
  std::vector<uint8_t> b(e.bytes);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(seed * 31 + i * 7 + 1);
  return b;
}

TEST_F(StreamedWrite, LayoutAlignedWithoutHolesAndReadBack) {
  const std::vector<SafetensorsEntry> e = AwkwardEntries();
  std::vector<size_t> asked;
  std::vector<uint8_t> buf;
  const std::string path = (dir_ / "m.safetensors").string();
  ASSERT_TRUE(
      WriteSafetensorsStreamed(path, e, {}, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
        asked.push_back(i);
        buf = Pattern(e[i], i);
        return std::span<const uint8_t>(buf);
      }).ok());
  // Asked once per tensor, in the layout's order: a multiple of 8 bytes first as given, then
  // the rest by element size.
  EXPECT_EQ(asked, SafetensorsLayoutOrder(e, {}));
  EXPECT_EQ(std::set<size_t>(asked.begin(), asked.end()).size(), e.size());
  // a 24, qweight 128, scales 16, g_idx 128, d 24; then qzeros (4-byte), h and bf (2), u.
  EXPECT_EQ(asked, (std::vector<size_t>{1, 3, 5, 6, 7, 4, 0, 8, 2}));
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  // The header: ranges contiguous from 0, each aligned to its element size.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  uint64_t n = 0;
  ASSERT_EQ(std::fread(&n, 8, 1, f), 1u);
  std::string text(n, ' ');
  ASSERT_EQ(std::fread(text.data(), 1, n, f), n);
  std::fclose(f);
  EXPECT_EQ(n % 8, 0u);
  const nlohmann::json h = nlohmann::json::parse(text);
  std::vector<std::pair<size_t, size_t>> spans;
  for (const SafetensorsEntry& x : e) {
    const size_t b = h[x.name]["data_offsets"][0], end = h[x.name]["data_offsets"][1];
    EXPECT_EQ(b % SafetensorsDtypeSize(x.dtype), 0u) << x.name;
    EXPECT_EQ(end - b, x.bytes);
    spans.emplace_back(b, end);
  }
  std::sort(spans.begin(), spans.end());
  EXPECT_EQ(spans.front().first, 0u);
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_EQ(spans[i - 1].second, spans[i].first);

  // Frugal's reader serves the float tensors with the bytes that were produced.
  auto file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  for (size_t i = 0; i < e.size(); ++i) {
    const TensorView* t = (*file)->FindTensor(e[i].name);
    if (e[i].dtype != "F32" && e[i].dtype != "F16" && e[i].dtype != "BF16") continue;
    ASSERT_NE(t, nullptr) << e[i].name;
    EXPECT_EQ(std::memcmp(t->data, Pattern(e[i], i).data(), e[i].bytes), 0) << e[i].name;
  }
}

TEST_F(StreamedWrite, SameBytesAsTheInMemoryWriter) {
  const std::vector<SafetensorsEntry> e = AwkwardEntries();
  SafetensorsWriter w;
  for (size_t i = 0; i < e.size(); ++i)
    ASSERT_TRUE(w.Add(e[i].name, e[i].dtype, e[i].shape, Pattern(e[i], i)).ok());
  const std::string a = (dir_ / "a.safetensors").string(), b = (dir_ / "b.safetensors").string();
  ASSERT_TRUE(w.Write(a).ok());
  std::vector<uint8_t> buf;
  ASSERT_TRUE(
      WriteSafetensorsStreamed(b, e, {}, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
        buf = Pattern(e[i], i);
        return std::span<const uint8_t>(buf);
      }).ok());
  const auto read = [](const std::string& p) {
    std::FILE* f = std::fopen(p.c_str(), "rb");
    std::vector<uint8_t> v(fs::file_size(p));
    EXPECT_EQ(std::fread(v.data(), 1, v.size(), f), v.size());
    std::fclose(f);
    return v;
  };
  EXPECT_EQ(read(a), read(b));
}

TEST_F(StreamedWrite, ShardsHoldEveryTensorOnce) {
  std::vector<SafetensorsEntry> e;
  for (int i = 0; i < 20; ++i) {
    std::string name = "w";
    name += std::to_string(i);
    e.push_back(Entry(name, "F32", {3, 5 + i}));
  }
  const auto shards = PlanShards(e, 400);
  ASSERT_GT(shards.size(), 3u);
  std::vector<uint8_t> buf;
  for (size_t s = 0; s < shards.size(); ++s) {
    ASSERT_TRUE(WriteSafetensorsStreamed((dir_ / ShardFileName(s, shards.size())).string(), e,
                                         shards[s],
                                         [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
                                           buf = Pattern(e[i], i);
                                           return std::span<const uint8_t>(buf);
                                         })
                    .ok());
  }
  const nlohmann::json index = nlohmann::json::parse(ShardIndexJson(e, shards));
  size_t total = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    const std::string file = index["weight_map"][e[i].name];
    auto f = SafetensorsFile::Open((dir_ / file).string());
    ASSERT_TRUE(f.ok()) << f.status().message();
    const TensorView* t = (*f)->FindTensor(e[i].name);
    ASSERT_NE(t, nullptr) << e[i].name;
    EXPECT_EQ(std::memcmp(t->data, Pattern(e[i], i).data(), e[i].bytes), 0);
    total += e[i].bytes;
  }
  EXPECT_EQ(index["metadata"]["total_size"], total);
  size_t listed = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    auto f = SafetensorsFile::Open((dir_ / ShardFileName(s, shards.size())).string());
    ASSERT_TRUE(f.ok());
    listed += (*f)->tensors().size();
  }
  EXPECT_EQ(listed, e.size());
}

TEST_F(StreamedWrite, AFailingOrShortProducerLeavesNothing) {
  const std::vector<SafetensorsEntry> e = AwkwardEntries();
  const std::string path = (dir_ / "m.safetensors").string();
  std::vector<uint8_t> buf;
  Status st =
      WriteSafetensorsStreamed(path, e, {}, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
        if (i == 5) return IoError("disk gone");
        buf = Pattern(e[i], i);
        return std::span<const uint8_t>(buf);
      });
  EXPECT_FALSE(st.ok());
  st = WriteSafetensorsStreamed(path, e, {}, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
    buf = Pattern(e[i], i);
    buf.pop_back();
    return std::span<const uint8_t>(buf);
  });
  EXPECT_FALSE(st.ok());
  std::vector<SafetensorsEntry> twice = {Entry("x", "F32", {1}), Entry("x", "F32", {1})};
  st = WriteSafetensorsStreamed(path, twice, {},
                                [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
                                  buf = Pattern(twice[i], i);
                                  return std::span<const uint8_t>(buf);
                                });
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace frugal
