#include "common/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <utility>

namespace frugal {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  map_bytes_ = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  const auto base = reinterpret_cast<uintptr_t>(map_);
  data_ = reinterpret_cast<uint8_t*>((base + kHugePage - 1) / kHugePage * kHugePage);
#if defined(MADV_HUGEPAGE)
  // Advice only: without transparent huge pages the buffer works as well on small pages.
  madvise(data_, (bytes + kHugePage - 1) / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
}

HugePageBuffer::~HugePageBuffer() { Release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept { *this = std::move(o); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
  }
  return *this;
}

void HugePageBuffer::Release() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace frugal
