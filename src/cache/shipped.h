// The per-embedder files the build compiles in (data/cache_calibration, data/cache_decision:
// a null-terminated array of JSON texts), parsed once and looked up by embedder fingerprint.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace frugal::cache {

// The entry whose `fingerprint` is the embedder's, or null (none for an empty fingerprint).
// A shipped text that does not parse is a build defect (the unit tests parse each one); it is
// left out here rather than failing every lookup. The texts are parsed at the first lookup with a
// fingerprint (the decision model is 3.4 MiB of JSON: ~60 ms, 1-2 s under ASan), never for an
// embedder without one.
template <typename T, typename Parse>
const T* FindShipped(const char* const* texts, Parse parse, const std::string& fingerprint) {
  if (fingerprint.empty()) return nullptr;
  static const std::vector<T> all = [&] {
    std::vector<T> out;
    for (const char* const* p = texts; *p != nullptr; ++p) {
      auto parsed = parse(*p);
      if (parsed.ok()) out.push_back(std::move(parsed).value());
    }
    return out;
  }();
  for (const auto& e : all) {
    if (e.fingerprint == fingerprint) return &e;
  }
  return nullptr;
}

}  // namespace frugal::cache
