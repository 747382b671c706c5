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

// Asks the kernel to take back the pages of [data, data + bytes) that this process holds, when
// they will not be read again soon: a finished layer's weights during `frugal quantize`, so that
// its resident set stays near one layer of a source larger than memory. Only whole pages inside
// the range are touched, and nothing is lost whatever the memory is (MADV_PAGEOUT: clean file
// pages are dropped and read back from the file if touched again; anonymous ones go to swap, or
// stay where there is none). A no-op where the kernel lacks it (before Linux 5.4).
void ReleaseResidentPages(const void* data, size_t bytes);

// Reads a whole (small) file into a string.
StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace frugal
