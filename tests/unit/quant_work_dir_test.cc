// The quantizer's work directory (issue 48): a layer counts as finished only once committed, the
// manifest decides whether a checkpoint may be continued (and names the option that differs),
// the states come back bit for bit, only the latest states file is kept, and nothing but a work
// directory's own files is ever touched.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "quant/work_dir.h"
#include "testing/temp_files.h"

namespace frugal::quant_internal {
namespace {

namespace fs = std::filesystem;

class WorkDirTest : public ::testing::Test {
 protected:
  frugal::testing::TempDir tmp_{"frugal_wd"};
  const std::string dir_ = (tmp_.dir() / "q.gguf.parts").string();
  RunManifest run_ = {{"method", "gptq"}, {"threads", "2"}, {"damp", "0.01"}};
};

TEST_F(WorkDirTest, CommittedLayersAndStatesComeBack) {
  std::vector<std::vector<float>> states = {{1.5f, -2.0f, 3.0f}, {0.25f, 1e-30f}};
  {
    auto wd = WorkDir::Open(dir_, run_, 4, /*resume=*/false);
    ASSERT_TRUE(wd.ok()) << wd.status().message();
    EXPECT_EQ((*wd)->layers_done(), 0);
    for (int64_t li = 0; li < 2; ++li) {
      ASSERT_TRUE((*wd)->BeginLayer(li).ok());
      const std::vector<uint8_t> bytes = {1, 2, 3, static_cast<uint8_t>(li)};
      auto b = (*wd)->Append(WorkDir::LayerFile(li, ".bin"), bytes);
      ASSERT_TRUE(b.ok());
      auto again = (*wd)->Append(WorkDir::LayerFile(li, ".bin"), bytes);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(again->offset, 4u);
      std::vector<uint8_t> buf;
      auto read = QuantizedModel::Read(*again, buf);
      ASSERT_TRUE(read.ok());
      EXPECT_EQ(std::vector<uint8_t>(read->begin(), read->end()), bytes);
      states[0][0] = static_cast<float>(li) + 0.5f;
      ASSERT_TRUE((*wd)->CommitLayer(li, "{\"layer\": " + std::to_string(li) + "}", states).ok());
    }
    // Layer 2 begun but not committed: an interruption.
    ASSERT_TRUE((*wd)->BeginLayer(2).ok());
    ASSERT_TRUE((*wd)->Append(WorkDir::LayerFile(2, ".bin"), std::vector<uint8_t>{9}).ok());
  }
  // Only the latest states are kept.
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "states-00001.bin"));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "states-00002.bin"));

  auto refused = WorkDir::Open(dir_, run_, 4, /*resume=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--resume"), std::string::npos);
  EXPECT_NE(refused.status().message().find("2 of 4 layers"), std::string::npos);

  auto wd = WorkDir::Open(dir_, run_, 4, /*resume=*/true);
  ASSERT_TRUE(wd.ok()) << wd.status().message();
  EXPECT_EQ((*wd)->layers_done(), 2);
  EXPECT_EQ(*(*wd)->LayerJson(1), "{\"layer\": 1}");
  std::vector<std::vector<float>> back = {std::vector<float>(3), std::vector<float>(2)};
  ASSERT_TRUE((*wd)->LoadStates(back).ok());
  EXPECT_EQ(back[0], (std::vector<float>{1.5f, -2.0f, 3.0f}));
  EXPECT_EQ(std::memcmp(back[1].data(), states[1].data(), 8), 0);
  std::vector<std::vector<float>> wrong = {std::vector<float>(4)};
  EXPECT_FALSE((*wd)->LoadStates(wrong).ok());  // not this run's states
  // The interrupted layer starts afresh.
  ASSERT_TRUE((*wd)->BeginLayer(2).ok());
  EXPECT_FALSE(fs::exists(fs::path(dir_) / WorkDir::LayerFile(2, ".bin")));
}

TEST_F(WorkDirTest, ADifferentRunIsRefusedNamingTheOption) {
  {
    auto wd = WorkDir::Open(dir_, run_, 3, false);
    ASSERT_TRUE(wd.ok());
    ASSERT_TRUE((*wd)->CommitLayer(0, "{}", {}).ok());
  }
  RunManifest other = run_;
  other["damp"] = "0.02";
  auto r = WorkDir::Open(dir_, other, 3, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("damp 0.01, this run has 0.02"), std::string::npos)
      << r.status().message();
  other = run_;
  other["recipe"] = "name: x\n";  // an option the checkpoint does not have
  EXPECT_FALSE(WorkDir::Open(dir_, other, 3, true).ok());
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "layer-00000.json"));  // the checkpoint stays
}

TEST_F(WorkDirTest, NoFinishedLayerIsNoCheckpoint) {
  {
    auto wd = WorkDir::Open(dir_, run_, 3, false);
    ASSERT_TRUE(wd.ok());
    ASSERT_TRUE((*wd)->BeginLayer(0).ok());
    ASSERT_TRUE((*wd)->Append(WorkDir::LayerFile(0, ".bin"), std::vector<uint8_t>{1}).ok());
  }
  RunManifest other = run_;
  other["method"] = "rtn";
  auto wd = WorkDir::Open(dir_, other, 3, false);  // starts afresh, whatever the options
  ASSERT_TRUE(wd.ok()) << wd.status().message();
  EXPECT_EQ((*wd)->layers_done(), 0);
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "layer-00000.bin"));
}

TEST_F(WorkDirTest, OnlyItsOwnFilesAreTouched) {
  fs::create_directories(dir_);
  std::ofstream(fs::path(dir_) / "notes.txt") << "mine";
  auto wd = WorkDir::Open(dir_, run_, 3, false);
  ASSERT_FALSE(wd.ok());
  EXPECT_NE(wd.status().message().find("notes.txt"), std::string::npos);
  std::ofstream(fs::path(dir_) / "layer-00000.bin") << "x";
  std::ofstream(fs::path(dir_) / "manifest.json") << "{}";
  ASSERT_TRUE(RemoveQuantizeWorkDir(dir_).ok());
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "notes.txt"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "layer-00000.bin"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "manifest.json"));
  fs::remove(fs::path(dir_) / "notes.txt");
  ASSERT_TRUE(RemoveQuantizeWorkDir(dir_).ok());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_TRUE(RemoveQuantizeWorkDir(dir_).ok());  // absent: nothing to do
}

}  // namespace
}  // namespace frugal::quant_internal
