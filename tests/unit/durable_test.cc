// common/durable.h: the sync helpers succeed on real files and directories and say which path
// failed otherwise (their ordering around renames is traced black box in
// tests/python/test_durable_output.py).
#include "common/durable.h"

#include <gtest/gtest.h>

#include <cstdio>
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

}  // namespace
}  // namespace frugal
