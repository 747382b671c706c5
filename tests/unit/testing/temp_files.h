// Scratch files and environment variables for one test's scope.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace frugal::testing {

// A fresh directory under the system's temp directory, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "frugal_test")
      : dir_(std::filesystem::temp_directory_path() /
             (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(Next()))) {
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // Writes `text` to dir/name; returns the path.
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  static int Next() {
    static int n = 0;
    return n++;
  }
  std::filesystem::path dir_;
};

// Sets (or, with nullopt, clears) an environment variable until the end of the scope, then
// puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace frugal::testing
