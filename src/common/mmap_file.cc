#include "common/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace frugal {

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no such file: " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return IoError("cannot stat " + path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("not a regular file: " + path);
  }
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return IoError("cannot mmap " + path + ": " + std::strerror(e));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->owned_ = true;
  }
  ::close(fd);
  return file;
}

std::unique_ptr<MappedFile> MappedFile::FromBuffer(const void* data, size_t size,
                                                   std::string name) {
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->data_ = static_cast<const uint8_t*>(data);
  file->size_ = size;
  file->path_ = std::move(name);
  return file;
}

MappedFile::~MappedFile() {
  if (owned_ && data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void ReleaseResidentPages(const void* data, size_t bytes) {
#if defined(MADV_PAGEOUT)
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (data == nullptr || last <= first) return;
  // Advice only: EINVAL (an old kernel) or EAGAIN leave the pages where they are.
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_PAGEOUT);
#else
  (void)data, (void)bytes;
#endif
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("error reading " + path);
  return ss.str();
}

}  // namespace frugal
