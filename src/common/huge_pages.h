// Large read-mostly buffers (re-laid model weights) backed by transparent huge pages where the
// kernel allows it (madvise mode): a decode step streams every weight once, and with 4 KiB pages
// a gigabyte of weights costs a quarter million TLB misses per token.
#pragma once

#include <cstddef>
#include <cstdint>

namespace frugal {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // `bytes` zeroed bytes, 2 MiB aligned. Aborts when memory is exhausted, as std::vector would.
  explicit HugePageBuffer(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& o) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // the whole mapping (data_ is its first 2 MiB boundary)
  size_t map_bytes_ = 0;
};

}  // namespace frugal
