// The words the hit verifier knows (text_signals.h): English stems, function words, negations,
// and the lexicon of synonyms, question words and opposites. The word lists are data
// (data/lexicon/en_*.txt, zh_*.txt, read by text/lexicon.h); this file builds the lookup tables
// once.
//
// Thread safety: the tables are built on first use (a function-local static) and immutable.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace frugal::cache {

// Light stemming so that inflections compare equal: refunds / refunded / refunding -> refund,
// deliveries -> delivery, charged / charge -> charg. Words of 3 letters or fewer stay.
std::string Stem(std::string w);
// Each space-separated word stemmed.
std::string StemPhrase(std::string_view phrase);

// Function words and fillers (data/lexicon/en_stopwords.txt).
const std::unordered_set<std::string>& EnglishStopwords();
// Words that negate, whole (data/lexicon/en_negations.txt).
const std::unordered_set<std::string>& EnglishNegations();

struct LexEntry {
  std::string canonical;  // the unit it becomes ("" = a function word: removed)
  int opposite = -1;      // pair id * 2 + side, or -1
  bool question = false;  // a question word (compared separately, not as content)
};

// Synonyms (surface -> canonical unit), question words and opposites (pairs kept apart), from
// data/lexicon/{en,zh}_{synonyms,questions,opposites}.txt, applied in that order: a word that is
// also a synonym keeps its canonical form and gains the opposite.
struct Lexicon {
  // English: stemmed words joined by ' ' -> entry; longest first per first word.
  std::unordered_map<std::string, LexEntry> en;
  size_t en_max_words = 1;
  // Chinese: surface -> entry; longest match over a Han run.
  std::unordered_map<std::string, LexEntry> zh;
  size_t zh_max_chars = 1;
};
const Lexicon& GetLexicon();

}  // namespace frugal::cache
