#include "cache/signal_lexicon.h"

#include <algorithm>
#include <vector>

#include "text/lexicon.h"

namespace frugal::cache {
namespace {

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::unordered_set<std::string> WordSet(std::string_view file) {
  std::unordered_set<std::string> out;
  for (std::string& w : text::LexiconWords(file)) out.insert(std::move(w));
  return out;
}

}  // namespace

std::string Stem(std::string w) {
  if (w.size() > 2 && w.ends_with("'s")) w.resize(w.size() - 2);
  if (w.size() <= 3) return w;
  auto undouble = [](std::string& x) {
    if (x.size() >= 3 && x[x.size() - 1] == x[x.size() - 2] &&
        std::string("aeiouls").find(x.back()) == std::string::npos)
      x.pop_back();
  };
  if (w.size() > 4 && w.ends_with("ies")) {
    w.resize(w.size() - 3);
    w.push_back('y');
  } else if (w.size() > 5 && w.ends_with("sses")) {
    w.resize(w.size() - 2);
  } else if (w.size() > 5 && w.ends_with("ing")) {
    w.resize(w.size() - 3);
    undouble(w);
  } else if (w.size() > 4 && w.ends_with("ed") && !w.ends_with("eed")) {
    w.resize(w.size() - 2);
    undouble(w);
  } else if (w.size() > 4 && (w.ends_with("ches") || w.ends_with("shes") || w.ends_with("xes") ||
                              w.ends_with("zes"))) {
    w.resize(w.size() - 2);
  } else if (w.size() > 3 && w.back() == 's' && !w.ends_with("ss") && !w.ends_with("us") &&
             !w.ends_with("is")) {
    w.pop_back();
  } else if (w.size() > 5 && w.ends_with("ly")) {
    w.resize(w.size() - 2);
  }
  if (w.size() > 4 && w.back() == 'e') w.pop_back();
  return w;
}

// Function words and fillers: what a polite or chatty rewording adds without changing the

std::string StemPhrase(std::string_view phrase) {
  std::string out;
  size_t i = 0;
  while (i < phrase.size()) {
    const size_t sp = phrase.find(' ', i);
    const std::string w(
        phrase.substr(i, sp == std::string_view::npos ? std::string_view::npos : sp - i));
    if (!out.empty()) out += ' ';
    out += Stem(w);
    if (sp == std::string_view::npos) break;
    i = sp + 1;
  }
  return out;
}

const std::unordered_set<std::string>& EnglishStopwords() {
  static const std::unordered_set<std::string> kSet = WordSet("en_stopwords");
  return kSet;
}

const std::unordered_set<std::string>& EnglishNegations() {
  static const std::unordered_set<std::string> kSet = WordSet("en_negations");
  return kSet;
}

const Lexicon& GetLexicon() {
  static const Lexicon kLex = [] {
    Lexicon lx;
    auto en = [&](const std::string& canonical, const std::vector<std::string>& surfaces,
                  bool question) {
      for (const std::string& s : surfaces) {
        const std::string k = StemPhrase(s);
        lx.en[k] = {canonical.empty() ? "" : StemPhrase(canonical), -1, question};
        lx.en_max_words =
            std::max<size_t>(lx.en_max_words, std::count(k.begin(), k.end(), ' ') + 1);
      }
    };
    auto zh = [&](const std::string& canonical, const std::vector<std::string>& surfaces,
                  bool question) {
      for (const std::string& s : surfaces) {
        lx.zh[s] = {canonical, -1, question};
        lx.zh_max_chars = std::max(lx.zh_max_chars, CountChars(s));
      }
    };
    for (const auto& g : text::LexiconGroups("en_synonyms")) en(g.canonical, g.surfaces, false);
    for (const auto& g : text::LexiconGroups("en_questions")) en(g.canonical, g.surfaces, true);
    for (const auto& g : text::LexiconGroups("zh_synonyms")) zh(g.canonical, g.surfaces, false);
    for (const auto& g : text::LexiconGroups("zh_questions")) zh(g.canonical, g.surfaces, true);
    // Opposites: each pair's two sides; pair ids in file order, English first.
    int pair = 0;
    auto opp = [&](bool chinese, const std::vector<std::string>& one,
                   const std::vector<std::string>& other) {
      for (int side = 0; side < 2; ++side) {
        for (const std::string& s : side == 0 ? one : other) {
          // A word that is also a synonym keeps its canonical form and gains the opposite.
          if (chinese) {
            auto [it, fresh] = lx.zh.try_emplace(s, LexEntry{s, -1, false});
            it->second.opposite = pair * 2 + side;
            lx.zh_max_chars = std::max(lx.zh_max_chars, CountChars(s));
          } else {
            const std::string k = StemPhrase(s);
            auto [it, fresh] = lx.en.try_emplace(k, LexEntry{k, -1, false});
            it->second.opposite = pair * 2 + side;
            lx.en_max_words =
                std::max<size_t>(lx.en_max_words, std::count(k.begin(), k.end(), ' ') + 1);
          }
        }
      }
      ++pair;
    };
    for (const auto& p : text::LexiconPairs("en_opposites")) opp(false, p.one, p.other);
    for (const auto& p : text::LexiconPairs("zh_opposites")) opp(true, p.one, p.other);
    return lx;
  }();
  return kLex;
}

}  // namespace frugal::cache
