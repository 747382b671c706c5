// libFuzzer target for the hit verifier's reading of queries (cache/text_signals.h):
// any bytes, split into a cached query and a lookup at the first NUL, are analysed and compared
// without crashing, in bounded time.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cache/text_signals.h"
#include "cache/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\0');
  const std::string_view a = all.substr(0, cut),
                         b = cut == std::string_view::npos ? all : all.substr(cut + 1);
  const frugal::cache::PairFeatures f = frugal::cache::ComputePairFeatures(b, a, 0.95f);
  const frugal::cache::PairVerifier strict;
  (void)strict.Decide(f);
  (void)frugal::cache::CanonicalText(a);
  return 0;
}
