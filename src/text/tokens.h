// Query text as the cache's verifier reads it (text/numbers.h's query reading and
// cache/text_signals.h): NFKC with case folding, then words, digit runs and Chinese characters.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::text {

enum class TokenKind { kWord, kNumber, kHan };

struct Token {
  TokenKind kind;
  std::string text;   // lower-case word, canonical digits, or one Han character (UTF-8)
  uint32_t cp = 0;    // kHan: the code point
  bool gap = true;    // a space or punctuation before it (Han runs and "1.5万" need adjacency)
  bool used = false;  // consumed by a number, a negation or a lexicon match
  size_t begin = 0;   // bytes of the tokenized text it was read from: [begin, end)
  size_t end = 0;
};

// Chinese characters (CJK unified ideographs, extensions A and B, compatibility) and 〇.
bool IsHan(uint32_t cp);

// NFKC + case folding (full-width digits and letters become ASCII); invalid bytes become U+FFFD
// first.
std::string NormalizeText(std::string_view text);

// Canonical digits: thousands separators dropped, 24.90 -> 24.9, 007 -> 7; dates and times
// (2024-03-05, 10:30, 11/11) keep their separators.
std::string CanonicalDigits(std::string n);

// Words (letters, with inner apostrophes: don't), digit runs with inner separators (1,299.00
// 2024-03-05 10:30 11.11) and single Chinese characters; everything else separates.
std::vector<Token> Tokenize(const std::string& s);

}  // namespace frugal::text
