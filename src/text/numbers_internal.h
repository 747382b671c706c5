// The two readings behind ExtractNumbers (text/numbers.h), one file each, and what they share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/numbers.h"

namespace frugal::text {

std::vector<Number> ReadAnswerNumbers(std::string_view text);  // answer_numbers.cc
std::vector<Number> ReadQueryNumbers(std::string_view text);   // query_numbers.cc

// The code point of a one-character UTF-8 string (a lexicon table's key); FRUGAL_CHECKs that it
// is one.
char32_t OneCodePoint(const std::string& utf8);

}  // namespace frugal::text
