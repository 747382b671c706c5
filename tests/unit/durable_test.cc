// common/durable.h: the sync helpers succeed on real files and directories and say which path
// failed otherwise (their ordering around renames is traced black box in
// tests/python/test_durable_output.py).
#include "common/durable.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "testing/temp_files.h"

namespace frugal {
namespace {

TEST(Durable, SyncsAFileItsParentAndAnOpenStream) {
  testing::TempDir dir;
  const std::string p = dir.Write("a.bin", "bytes");
  EXPECT_TRUE(SyncPath(p).ok());
  EXPECT_TRUE(SyncPath(dir.dir().string()).ok());
  EXPECT_TRUE(SyncParentDirectory(p).ok());
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(p.c_str(), "ab"), &std::fclose);
  ASSERT_NE(f, nullptr);
  ASSERT_GE(std::fputs("more", f.get()), 0);
  EXPECT_TRUE(SyncFile(f.get(), p).ok());
}

TEST(Durable, AMissingPathIsAnIoErrorNamingIt) {
  testing::TempDir dir;
  const std::string missing = (dir.dir() / "nope" / "x.bin").string();
  const Status a = SyncPath(missing);
  EXPECT_EQ(a.code(), StatusCode::kIoError);
  EXPECT_NE(a.message().find(missing), std::string::npos);
  const Status b = SyncParentDirectory(missing);
  EXPECT_EQ(b.code(), StatusCode::kIoError);
  EXPECT_NE(b.message().find("directory of " + missing), std::string::npos);
}

TEST(Durable, WriteFileAtomicallyReplacesTheFileOnlyWhenAllWent) {
  testing::TempDir dir;
  const std::string p = dir.Write("out.bin", "old");
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // The writer's own error: the old file stays, no .tmp is left.
  Status st = WriteFileAtomically(p, [](std::FILE* f) {
    std::fputs("half", f);
    return Internal("tensor came short");
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(read(p), "old");
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  // A write the stream refuses (reading a write-only stream sets its error flag, as a full
  // disk would on fwrite) is an IoError, whatever the writer returned.
  st = WriteFileAtomically(p, [](std::FILE* f) {
    std::fgetc(f);
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(read(p), "old");
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  // All went: the new bytes under the old name.
  EXPECT_TRUE(WriteFileAtomically(p, [](std::FILE* f) {
                std::fputs("new bytes", f);
                return Status::Ok();
              }).ok());
  EXPECT_EQ(read(p), "new bytes");
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp"));
  // No directory to write in.
  st = WriteFileAtomically((dir.dir() / "no" / "x.bin").string(),
                           [](std::FILE*) { return Status::Ok(); });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace frugal
