// A read-only memory mapping of a whole file. Move-only; unmaps on destruction.
// Thread-safe for concurrent reads once opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "frugal/status.h"

namespace frugal {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  // Wraps a caller-owned buffer (tests, fuzzing); the buffer must outlive this object.
  static std::unique_ptr<MappedFile> FromBuffer(const void* data, size_t size, std::string name);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = false;
  std::string path_;
};

// Reads a whole (small) file into a string.
StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace frugal
