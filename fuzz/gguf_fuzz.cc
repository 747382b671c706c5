// libFuzzer target: any byte string fed to the GGUF parser must yield OK or a Status, never a
// crash, an out-of-bounds read or an unbounded allocation; accepted tensors must lie inside.
#include <cstdint>
#include <cstdlib>

#include "formats/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = frugal::GgufFile::Parse(frugal::MappedFile::FromBuffer(data, size, "fuzz.gguf"));
  if (file.ok()) {
    for (const auto& t : (*file)->tensors()) {
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();
    }
    for (const auto& [key, value] : (*file)->metadata()) {
      (void)(*file)->GetString(key);
      (void)(*file)->GetInt(key);
    }
  }
  return 0;
}
