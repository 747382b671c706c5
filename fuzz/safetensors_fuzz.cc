// libFuzzer target for the safetensors header parser.
#include <cstdint>
#include <cstdlib>

#include "formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = frugal::SafetensorsFile::Parse(
      frugal::MappedFile::FromBuffer(data, size, "fuzz.safetensors"));
  if (file.ok()) {
    for (const auto& t : (*file)->tensors()) {
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();
    }
  }
  return 0;
}
