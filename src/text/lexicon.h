// Word lists kept as data: the files of data/lexicon/ (measure words, negations, synonyms,
// opposites, numeral tables), compiled in verbatim by CMake (lexicon_data.h.in), so an installed
// binary needs no data directory. This file reads them; the layers above build their tables.
//
// A lexicon file is UTF-8 text, one entry a line:
//   # a comment line          (only at the start of a line; blank lines are skipped too)
//   word                      a word list: one item
//   key = value               a number table: an integer value
//   canonical = a | b | c     groups: each surface reads as the canonical (empty: removed)
//   a | b = c | d             pairs: the two sides of an opposite
// Items are trimmed; an empty item, a second '=', a duplicate (per kind, below) or a bad number
// is an InvalidArgument naming the file and line.
//
// Thread safety: pure functions; the embedded files are immutable.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frugal/status.h"

namespace frugal::text {

// What a file holds; each kind has its reader below.
enum class LexiconKind { kWordList, kNumberTable, kGroups, kPairs };

// One line: `left` or `left = right`.
struct LexiconLine {
  std::vector<std::string> left;   // empty only in `= a | b` (groups without a canonical)
  std::vector<std::string> right;  // empty when the line has no '='
  bool has_equals = false;
  int line = 0;  // 1-based
};
StatusOr<std::vector<LexiconLine>> ParseLexicon(std::string_view name, std::string_view text);

// Words, one a line, each once.
StatusOr<std::vector<std::string>> ReadWordList(std::string_view name, std::string_view text);

// `key = integer`, each key once (values may repeat: 零 = 0, 〇 = 0).
using NumberTable = std::vector<std::pair<std::string, int>>;
StatusOr<NumberTable> ReadNumberTable(std::string_view name, std::string_view text);

// `canonical = surface | ...`: each surface once in the file, each canonical on one line.
struct LexiconGroup {
  std::string canonical;  // "" for `= a | b`
  std::vector<std::string> surfaces;
  bool operator==(const LexiconGroup&) const = default;
};
StatusOr<std::vector<LexiconGroup>> ReadGroups(std::string_view name, std::string_view text);

// `a | b = c | d`: every word once in the file, on either side.
struct LexiconPair {
  std::vector<std::string> one, other;
};
StatusOr<std::vector<LexiconPair>> ReadPairs(std::string_view name, std::string_view text);

// The files of data/lexicon/ as compiled in, by file stem ("zh_digits"), with their kind.
struct EmbeddedLexicon {
  std::string_view name;
  LexiconKind kind;
  std::string_view text;
};
std::span<const EmbeddedLexicon> EmbeddedLexicons();

// One embedded file read by its kind. The files are part of the build and tested to read
// (tests/unit/lexicon_test.cc), so a missing or malformed one is a bug: FRUGAL_CHECK.
std::vector<std::string> LexiconWords(std::string_view name);
NumberTable LexiconNumbers(std::string_view name);
std::vector<LexiconGroup> LexiconGroups(std::string_view name);
std::vector<LexiconPair> LexiconPairs(std::string_view name);

}  // namespace frugal::text
