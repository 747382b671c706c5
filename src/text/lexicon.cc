#include "text/lexicon.h"

#include <charconv>
#include <cstdio>
#include <unordered_set>

#include "common/check.h"
#include "text_lexicon_data.h"  // generated: kLexiconFiles, from data/lexicon/*.txt

namespace frugal::text {
namespace {

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

Status Bad(std::string_view name, int line, std::string_view what) {
  return InvalidArgument("lexicon " + std::string(name) + ":" + std::to_string(line) + ": " +
                         std::string(what));
}

// "a | b | c" -> items; an empty item is an error.
Status SplitItems(std::string_view name, int line, std::string_view side,
                  std::vector<std::string>* out) {
  size_t i = 0;
  while (true) {
    const size_t bar = side.find('|', i);
    const std::string_view item =
        Trim(side.substr(i, bar == std::string_view::npos ? std::string_view::npos : bar - i));
    if (item.empty()) return Bad(name, line, "empty item");
    out->emplace_back(item);
    if (bar == std::string_view::npos) return Status::Ok();
    i = bar + 1;
  }
}

// Remembers what was seen; a second sighting is an error naming the item.
class Once {
 public:
  Status Add(std::string_view name, int line, const std::string& item) {
    if (!seen_.insert(item).second) return Bad(name, line, "duplicate '" + item + "'");
    return Status::Ok();
  }

 private:
  std::unordered_set<std::string> seen_;
};

const EmbeddedLexicon& Find(std::string_view name, LexiconKind kind) {
  for (const EmbeddedLexicon& f : EmbeddedLexicons()) {
    if (f.name == name) {
      FRUGAL_CHECK(f.kind == kind);
      return f;
    }
  }
  std::fprintf(stderr, "no lexicon file data/lexicon/%.*s.txt compiled in\n",
               static_cast<int>(name.size()), name.data());
  FRUGAL_CHECK(false);
  std::abort();
}

template <typename T>
T MustRead(const StatusOr<T>& r) {
  if (!r.ok()) std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
  FRUGAL_CHECK(r.ok());
  return *r;
}

// Which reader each file of data/lexicon/ takes. A file missing here fails the unit test.
struct KindOf {
  std::string_view name;
  LexiconKind kind;
};
constexpr KindOf kKinds[] = {
    {"en_months", LexiconKind::kNumberTable},
    {"en_negations", LexiconKind::kWordList},
    {"en_number_words", LexiconKind::kNumberTable},
    {"en_one_pronoun_after", LexiconKind::kWordList},
    {"en_opposites", LexiconKind::kPairs},
    {"en_ordinals", LexiconKind::kNumberTable},
    {"en_questions", LexiconKind::kGroups},
    {"en_stopwords", LexiconKind::kWordList},
    {"en_synonyms", LexiconKind::kGroups},
    {"zh_answer_kilo_units", LexiconKind::kWordList},
    {"zh_answer_measure_words", LexiconKind::kWordList},
    {"zh_answer_money_or_count", LexiconKind::kWordList},
    {"zh_digits", LexiconKind::kNumberTable},
    {"zh_formal_digits", LexiconKind::kNumberTable},
    {"zh_formal_powers", LexiconKind::kNumberTable},
    {"zh_numeral_idioms", LexiconKind::kWordList},
    {"zh_opposites", LexiconKind::kPairs},
    {"zh_powers", LexiconKind::kNumberTable},
    {"zh_query_article_measures", LexiconKind::kWordList},
    {"zh_query_measure_chars", LexiconKind::kWordList},
    {"zh_questions", LexiconKind::kGroups},
    {"zh_synonyms", LexiconKind::kGroups},
};

std::vector<EmbeddedLexicon> MakeEmbedded() {
  std::vector<EmbeddedLexicon> out;
  for (const LexiconFileText& f : kLexiconFiles) {
    bool known = false;
    for (const KindOf& k : kKinds) {
      if (k.name == f.name) {
        out.push_back({f.name, k.kind, f.text});
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "data/lexicon/%s.txt: no kind in text/lexicon.cc kKinds\n", f.name);
      FRUGAL_CHECK(known);
    }
  }
  return out;
}

}  // namespace

StatusOr<std::vector<LexiconLine>> ParseLexicon(std::string_view name, std::string_view text) {
  std::vector<LexiconLine> out;
  int line_no = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t nl = text.find('\n', i);
    const std::string_view raw =
        text.substr(i, nl == std::string_view::npos ? std::string_view::npos : nl - i);
    i = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    const std::string_view s = Trim(raw);
    if (s.empty() || s.front() == '#') continue;
    LexiconLine l;
    l.line = line_no;
    const size_t eq = s.find('=');
    if (eq != std::string_view::npos && s.find('=', eq + 1) != std::string_view::npos)
      return Bad(name, line_no, "more than one '='");
    l.has_equals = eq != std::string_view::npos;
    const std::string_view left = l.has_equals ? Trim(s.substr(0, eq)) : s;
    if (l.has_equals) {
      if (Status st = SplitItems(name, line_no, s.substr(eq + 1), &l.right); !st.ok()) return st;
    }
    // `= a | b`: the groups' "no canonical"; any other empty side is an error.
    if (!left.empty() || !l.has_equals) {
      if (Status st = SplitItems(name, line_no, left, &l.left); !st.ok()) return st;
    }
    out.push_back(std::move(l));
  }
  return out;
}

StatusOr<std::vector<std::string>> ReadWordList(std::string_view name, std::string_view text) {
  auto lines = ParseLexicon(name, text);
  if (!lines.ok()) return lines.status();
  std::vector<std::string> out;
  Once once;
  for (const LexiconLine& l : *lines) {
    if (l.has_equals || l.left.size() != 1) return Bad(name, l.line, "expected one word a line");
    if (Status st = once.Add(name, l.line, l.left[0]); !st.ok()) return st;
    out.push_back(l.left[0]);
  }
  return out;
}

StatusOr<NumberTable> ReadNumberTable(std::string_view name, std::string_view text) {
  auto lines = ParseLexicon(name, text);
  if (!lines.ok()) return lines.status();
  NumberTable out;
  Once once;
  for (const LexiconLine& l : *lines) {
    if (!l.has_equals || l.left.size() != 1 || l.right.size() != 1)
      return Bad(name, l.line, "expected 'key = number'");
    const std::string& v = l.right[0];
    int value = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (ec != std::errc() || end != v.data() + v.size())
      return Bad(name, l.line, "'" + v + "' is not an integer");
    if (Status st = once.Add(name, l.line, l.left[0]); !st.ok()) return st;
    out.emplace_back(l.left[0], value);
  }
  return out;
}

StatusOr<std::vector<LexiconGroup>> ReadGroups(std::string_view name, std::string_view text) {
  auto lines = ParseLexicon(name, text);
  if (!lines.ok()) return lines.status();
  std::vector<LexiconGroup> out;
  Once surfaces, canonicals;
  for (const LexiconLine& l : *lines) {
    if (!l.has_equals || l.left.size() > 1)
      return Bad(name, l.line, "expected 'canonical = surface | ...'");
    LexiconGroup g{l.left.empty() ? "" : l.left[0], l.right};
    if (Status st = canonicals.Add(name, l.line, "= " + g.canonical); !st.ok()) return st;
    for (const std::string& s : g.surfaces) {
      if (Status st = surfaces.Add(name, l.line, s); !st.ok()) return st;
    }
    out.push_back(std::move(g));
  }
  return out;
}

StatusOr<std::vector<LexiconPair>> ReadPairs(std::string_view name, std::string_view text) {
  auto lines = ParseLexicon(name, text);
  if (!lines.ok()) return lines.status();
  std::vector<LexiconPair> out;
  Once once;
  for (const LexiconLine& l : *lines) {
    if (!l.has_equals || l.left.empty()) return Bad(name, l.line, "expected 'a | b = c | d'");
    for (const auto* side : {&l.left, &l.right}) {
      for (const std::string& w : *side) {
        if (Status st = once.Add(name, l.line, w); !st.ok()) return st;
      }
    }
    out.push_back({l.left, l.right});
  }
  return out;
}

std::span<const EmbeddedLexicon> EmbeddedLexicons() {
  static const std::vector<EmbeddedLexicon> kFiles = MakeEmbedded();
  return kFiles;
}

std::vector<std::string> LexiconWords(std::string_view name) {
  const EmbeddedLexicon& f = Find(name, LexiconKind::kWordList);
  return MustRead(ReadWordList(f.name, f.text));
}

NumberTable LexiconNumbers(std::string_view name) {
  const EmbeddedLexicon& f = Find(name, LexiconKind::kNumberTable);
  return MustRead(ReadNumberTable(f.name, f.text));
}

std::vector<LexiconGroup> LexiconGroups(std::string_view name) {
  const EmbeddedLexicon& f = Find(name, LexiconKind::kGroups);
  return MustRead(ReadGroups(f.name, f.text));
}

std::vector<LexiconPair> LexiconPairs(std::string_view name) {
  const EmbeddedLexicon& f = Find(name, LexiconKind::kPairs);
  return MustRead(ReadPairs(f.name, f.text));
}

}  // namespace frugal::text
