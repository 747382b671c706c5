#include "text/numbers.h"

#include <utf8proc.h>

#include <cstdio>

#include "common/check.h"
#include "text/numbers_internal.h"

namespace frugal::text {

std::vector<Number> ExtractNumbers(std::string_view text, NumberReading reading) {
  return reading == NumberReading::kAnswer ? ReadAnswerNumbers(text) : ReadQueryNumbers(text);
}

std::vector<std::string> NumberValues(const std::vector<Number>& numbers) {
  std::vector<std::string> out;
  out.reserve(numbers.size());
  for (const Number& n : numbers) out.push_back(n.value);
  return out;
}

char32_t OneCodePoint(const std::string& utf8) {
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
                                  static_cast<utf8proc_ssize_t>(utf8.size()), &cp);
  if (n <= 0 || static_cast<size_t>(n) != utf8.size()) {
    std::fprintf(stderr, "lexicon: '%s' is not one character\n", utf8.c_str());
    FRUGAL_CHECK(false);
  }
  return static_cast<char32_t>(cp);
}

}  // namespace frugal::text
