#include "common/durable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace frugal {

Status SyncFile(std::FILE* f, const std::string& name) {
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0)
    return IoError("cannot sync " + name + ": " + std::strerror(errno));
  return Status::Ok();
}

Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  return ok ? Status::Ok() : IoError("cannot sync " + path + ": " + std::strerror(err));
}

Status SyncParentDirectory(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open the directory of " + path + ": " + std::strerror(errno));
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return IoError("cannot sync the directory of " + path + ": " + std::strerror(err));
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path,
                           const std::function<Status(std::FILE*)>& write) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  Status st = write(f);
  if (st.ok() && std::ferror(f) != 0)
    st = IoError("cannot write " + tmp + ": " + std::strerror(errno) + " (disk full?)");
  if (st.ok()) st = SyncFile(f, tmp);
  if (std::fclose(f) != 0 && st.ok())
    st = IoError("cannot write " + tmp + ": " + std::strerror(errno));
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    std::remove(tmp.c_str());
    return st;
  }
  return SyncParentDirectory(path);
}

}  // namespace frugal
