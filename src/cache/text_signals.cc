#include "cache/text_signals.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "cache/signal_lexicon.h"
#include "text/lexicon.h"
#include "text/numbers.h"
#include "text/tokens.h"

namespace frugal::cache {
namespace {

using text::Token;
using Kind = text::TokenKind;

// ---------------------------------------------------------------------------------------------
// Numbers

// NumberValue::indefinite: the number was read from a lone 一 right before a measure word of
// things (data/lexicon/zh_query_article_measures.txt).
bool IsIndefiniteOne(const std::string& normalized, const text::Number& n) {
  static const std::unordered_set<std::string> kArticle = [] {
    const std::vector<std::string> words = text::LexiconWords("zh_query_article_measures");
    return std::unordered_set<std::string>(words.begin(), words.end());
  }();
  static const std::string kOne = "一";
  if (n.value != "1" || n.end - n.begin != kOne.size() || n.end > normalized.size() ||
      normalized.compare(n.begin, kOne.size(), kOne) != 0)
    return false;
  const size_t at = n.end;  // the measure word: one 3-byte character in UTF-8
  return at + 3 <= normalized.size() && kArticle.count(normalized.substr(at, 3)) > 0;
}

// ---------------------------------------------------------------------------------------------
// Negation

int CountNegations(std::vector<Token>& t) {
  int n = 0;
  const auto& neg = EnglishNegations();
  auto word_at = [&](size_t k) -> const std::string& {
    static const std::string kEmpty;
    return k < t.size() && t[k].kind == Kind::kWord ? t[k].text : kEmpty;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    Token& tok = t[i];
    if (tok.kind == Kind::kWord && tok.text == "w" && i + 1 < t.size() &&
        t[i + 1].kind == Kind::kWord && t[i + 1].text == "o" && t[i + 1].gap) {
      tok.used = t[i + 1].used = true;  // w/o = without
      ++n;
      ++i;
      continue;
    }
    if (tok.kind == Kind::kWord) {
      std::string w = tok.text;
      w.erase(std::remove(w.begin(), w.end(), '\''), w.end());
      const bool is_neg = neg.count(w) != 0 || (tok.text.size() > 3 && tok.text.ends_with("n't"));
      if (!is_neg) continue;
      // "I don't know how to ...", "not sure": hedges, not negations of the question.
      const std::string& next = word_at(i + 1);
      if ((next == "know" || next == "sure" || next == "understand") &&
          (w == "dont" || w == "not" || w == "didnt" || w == "im")) {
        tok.used = true;
        continue;
      }
      if (w == "no" && (next == "idea" || next == "clue")) {
        tok.used = t[i + 1].used = true;
        continue;
      }
      // "out of stock" / "sold out" below; "no charge" / "no cost" is "free" (the lexicon).
      tok.used = true;
      ++n;
      continue;
    }
    if (tok.kind != Kind::kHan || tok.used) continue;
    auto han = [&](size_t k) -> std::string {
      return k < t.size() && t[k].kind == Kind::kHan && (k == i || !t[k].gap || k < i)
                 ? t[k].text
                 : std::string();
    };
    const std::string prev =
        i > 0 && !tok.gap && t[i - 1].kind == Kind::kHan ? t[i - 1].text : std::string();
    const std::string next = i + 1 < t.size() && !t[i + 1].gap ? han(i + 1) : std::string();
    const std::string next2 =
        i + 2 < t.size() && !t[i + 1].gap && !t[i + 2].gap ? han(i + 2) : std::string();
    const std::string& c = tok.text;
    auto is = [&](std::initializer_list<const char*> words, const std::string& w) {
      for (const char* x : words) {
        if (w == x) return true;
      }
      return false;
    };
    if (c == "不" || c == "没") {
      // A-not-A: 是不是, 能不能, 可不可以, 有没有, 支不支持 ask a plain question.
      if (!prev.empty() && prev == next) {
        tok.used = true;
        t[i - 1].used = true;  // 包不包邮 = 包邮: the repeated head is not content of its own
        continue;
      }
      if (c == "不" &&
          (is({"错", "客", "好", "仅", "过", "管", "论", "久", "然", "得", "如", "少", "止"},
              next) ||
           is({"差", "对", "要", "了"}, prev))) {
        // 不错 不客气 不好意思 不仅 不过 不管 不论 不久 不然 不得不 不如 不少 不止; 差不多 对不起
        // 要不 了不起
        if (!(next == "好" && next2 != "意")) {
          tok.used = true;
          continue;
        }
      }
      if (c == "不" &&
          (next == "知" || next == "清" || next == "懂" || next == "明" || next == "太")) {
        // 不知道 / 不清楚 / 不懂 / 不明白 / 不太会: "I don't know how to ...", a hedge.
        if (next != "太") {
          tok.used = true;
          continue;
        }
      }
      if (c == "没" && (is({"关", "问", "事"}, next))) {  // 没关系 没问题 没事
        tok.used = true;
        continue;
      }
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "无") {
      if (is({"法", "货", "效", "需", "须", "权", "人"},
             next)) {  // 无法 无货 无效 无需 无须 无权 无人
        tok.used = true;
        ++n;
      }
      continue;  // 无理由, 无门槛, 无论, 无线, 无忧: not negations
    }
    if (c == "非") {
      if (next == "常" || prev == "除" || prev == "是" || prev == "无" || prev == "莫") continue;
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "未") {
      if (next == "来") continue;  // 未来
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "别") {
      if (is({"人", "的", "处"}, next) ||
          is({"区", "类", "特", "个", "告", "分", "级", "识", "差", "性", "派", "辨", "鉴"}, prev))
        continue;
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "勿" || (c == "莫" && next != "非")) {
      tok.used = true;
      ++n;
    }
  }
  // Phrases: out of stock, sold out.
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != Kind::kWord) continue;
    if (t[i].text == "out" && i + 2 < t.size() && t[i + 1].text == "of" &&
        (t[i + 2].text == "stock")) {
      t[i].used = t[i + 1].used = t[i + 2].used = true;
      ++n;
    } else if (t[i].text == "sold" && t[i + 1].text == "out") {
      t[i].used = t[i + 1].used = true;
      ++n;
    }
  }
  return n;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TextSignals AnalyzeText(std::string_view text) {
  TextSignals s;
  if (text.size() > kMaxSignalBytes) {
    s.too_long = true;
    return s;
  }
  s.normalized = text::NormalizeText(text);
  std::vector<Token> t = text::Tokenize(s.normalized);
  s.tokens = static_cast<int>(t.size());
  for (const Token& tok : t) s.has_han |= tok.kind == Kind::kHan;
  // The query reading tokenizes the same normalized text; the tokens a number consumed (a
  // date's 月 and 日, an ordinal's "th") are no content of their own.
  size_t next = 0;
  for (const text::Number& n : text::ExtractNumbers(text, text::NumberReading::kQuery)) {
    s.numbers.push_back({n.value, n.alt, IsIndefiniteOne(s.normalized, n)});
    for (const auto& [begin, end] : n.consumed) {
      while (next < t.size() && t[next].begin < begin) ++next;
      for (; next < t.size() && t[next].begin < end; ++next) t[next].used = true;
    }
  }
  s.negations = CountNegations(t);

  const Lexicon& lx = GetLexicon();
  const auto& stop = EnglishStopwords();
  std::vector<std::string> stems(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == Kind::kWord) stems[i] = Stem(t[i].text);
  }
  // The longest lexicon entry starting at token i: English stems joined by spaces, or a run of
  // adjacent Chinese characters; null when none.
  auto longest = [&](size_t i, size_t* len) -> const LexEntry* {
    const bool han = t[i].kind == Kind::kHan;
    const auto& table = han ? lx.zh : lx.en;
    const size_t most = han ? lx.zh_max_chars : lx.en_max_words;
    const LexEntry* hit = nullptr;
    std::string key;
    for (size_t k = i; k < t.size() && k - i < most && t[k].kind == t[i].kind && !t[k].used &&
                       (k == i || !han || !t[k].gap);
         ++k) {
      if (k > i && !han) key += ' ';
      key += han ? t[k].text : stems[k];
      if (auto it = table.find(key); it != table.end()) {
        hit = &it->second;
        *len = k - i + 1;
      }
    }
    return hit;
  };
  // A lexicon match of tokens [i, i + len): a question word, an opposite, a canonical content
  // unit (English surfaces joined by spaces, Chinese ones by nothing), or a function word.
  auto take = [&](const LexEntry& hit, size_t i, size_t len) {
    for (size_t k = i; k < i + len; ++k) t[k].used = true;
    if (hit.opposite >= 0) s.opposites.push_back(hit.opposite);
    if (hit.question) {
      s.questions.push_back(hit.canonical);
      return;
    }
    if (hit.canonical.empty()) return;
    const bool han = t[i].kind == Kind::kHan;
    std::string surface;
    for (size_t k = i; k < i + len; ++k) surface += (k > i && !han ? " " : "") + t[k].text;
    s.content.push_back({hit.canonical, surface, han, static_cast<int>(i)});
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].used) continue;
    if (t[i].kind == Kind::kWord) {
      size_t len = 0;
      if (const LexEntry* hit = longest(i, &len)) {
        take(*hit, i, len);
        i += len - 1;
        continue;
      }
      t[i].used = true;
      if (stop.count(t[i].text) || stop.count(stems[i])) continue;
      s.content.push_back({stems[i], t[i].text, false, static_cast<int>(i)});
      continue;
    }
    if (t[i].kind == Kind::kHan) {
      size_t len = 0;
      if (const LexEntry* hit = longest(i, &len)) {
        take(*hit, i, len);
        i += len - 1;
        continue;
      }
      t[i].used = true;
      s.content.push_back({t[i].text, t[i].text, true, static_cast<int>(i)});
      continue;
    }
    // A stray number token left unused cannot happen (numbers take every number token).
    t[i].used = true;
  }
  // "Dear customer service," / "客服你好": the addressee of a greeting is not the question.
  auto greeting_near = [&](int at) {
    for (int k = std::max(0, at - 3); k < std::min<int>(static_cast<int>(t.size()), at + 5); ++k) {
      const Token& g = t[static_cast<size_t>(k)];
      if (g.kind == Kind::kWord &&
          (g.text == "hi" || g.text == "hello" || g.text == "hey" || g.text == "dear"))
        return true;
      if (g.kind == Kind::kHan && (g.text == "好" || g.text == "在") && k > 0 &&
          t[static_cast<size_t>(k - 1)].kind == Kind::kHan &&
          (t[static_cast<size_t>(k - 1)].text == "你" ||
           t[static_cast<size_t>(k - 1)].text == "您" || g.text == "在")) {
        return true;
      }
    }
    return false;
  };
  std::erase_if(s.content, [&](const ContentUnit& u) {
    return (u.text == "agent" || u.text == "客服") && greeting_near(u.index);
  });
  std::sort(s.opposites.begin(), s.opposites.end());
  s.opposites.erase(std::unique(s.opposites.begin(), s.opposites.end()), s.opposites.end());
  std::sort(s.questions.begin(), s.questions.end());
  s.questions.erase(std::unique(s.questions.begin(), s.questions.end()), s.questions.end());
  return s;
}

namespace {

// Optimal string alignment distance (a transposition costs 1: retrun / return), or limit + 1
// once it must exceed limit.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      best = std::min(best, cur[j]);
    }
    if (best > limit) return limit + 1;
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

// Two spellings of one English word: a typo (edit distance 1 from 4 letters, 2 from 8) or a
// shared stem of 5+ letters (delivery / delivered).
bool SameSpelling(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  const size_t shorter = std::min(a.size(), b.size());
  if (shorter < 3) return false;
  if (shorter >= 5 && a.substr(0, shorter) == b.substr(0, shorter)) return true;
  const size_t limit = shorter >= 8 ? 2 : 1;
  return EditDistance(a, b, limit) <= limit && (shorter >= 4 || a[0] == b[0]);
}

// A misspelling of a function word of 4+ letters by a letter dropped, added or swapped (chek /
// check, dose / does, suport / support), or substituted from 6 letters (doller / dollar); in a
// shorter word a substituted letter is another word (wait / want).
bool MisspelledFunctionWord(const std::string& w) {
  std::string sw = w;
  std::sort(sw.begin(), sw.end());
  for (const std::string& f : EnglishStopwords()) {
    if (f.size() < 4 || f.find('\'') != std::string::npos || f == w) continue;
    if (EditDistance(w, f, 1) > 1) continue;
    if (f.size() != w.size() || w.size() >= 6) return true;
    std::string sf = f;
    std::sort(sf.begin(), sf.end());
    if (sf == sw) return true;
  }
  return false;
}

std::string WithoutSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ') out += c;
  }
  return out;
}

// Whether the numbers of a can be paired one to one with those of b (each pair sharing a
// reading). Greedy is exact here: a value has at most two readings and they never chain.
bool NumbersMatch(const std::vector<NumberValue>& a, const std::vector<NumberValue>& b) {
  // "A card" against no number at all (NumberValue::indefinite).
  auto all_indefinite = [](const std::vector<NumberValue>& n) {
    return std::all_of(n.begin(), n.end(), [](const NumberValue& v) { return v.indefinite; });
  };
  if ((a.empty() && all_indefinite(b)) || (b.empty() && all_indefinite(a))) return true;
  if (a.size() != b.size()) return false;
  std::vector<bool> taken(b.size(), false);
  // Exact readings first, then the alternates.
  std::vector<bool> done(a.size(), false);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (done[i]) continue;
      for (size_t j = 0; j < b.size(); ++j) {
        if (taken[j]) continue;
        const bool eq =
            pass == 0 ? a[i].value == b[j].value
                      : (!a[i].alt.empty() && (a[i].alt == b[j].value || a[i].alt == b[j].alt)) ||
                            (!b[j].alt.empty() && b[j].alt == a[i].value);
        if (eq) {
          taken[j] = true;
          done[i] = true;
          break;
        }
      }
    }
  }
  return std::all_of(done.begin(), done.end(), [](bool d) { return d; });
}

}  // namespace

PairDiff Compare(const TextSignals& a, const TextSignals& b) {
  PairDiff d;
  if (a.too_long || b.too_long) {
    d.too_long = true;
    return d;
  }
  d.numbers_differ = !NumbersMatch(a.numbers, b.numbers);
  // Question words: "what" / "which" fit any question; how, when, where, why, who, how much
  // and how long ask different things.
  auto specific = [](const std::vector<std::string>& q) {
    std::vector<std::string> out;
    for (const auto& w : q) {
      if (w != "what") out.push_back(w);
    }
    return out;
  };
  const auto qa = specific(a.questions), qb = specific(b.questions);
  if (!qa.empty() && !qb.empty()) {
    std::vector<std::string> common;
    std::set_intersection(qa.begin(), qa.end(), qb.begin(), qb.end(), std::back_inserter(common));
    d.question_differs = common.empty();
  }
  // A wh-question against a yes/no question ("how much is international shipping" / "do you
  // ship internationally"); "what" counts as a wh-question here.
  d.question_one_sided =
      (!qa.empty() && b.questions.empty()) || (!qb.empty() && a.questions.empty());
  d.negation_differs = (a.negations % 2) != (b.negations % 2);
  // X on one side, its opposite on the other, and neither side has both.
  for (int x : a.opposites) {
    const int y = x ^ 1;
    if (std::binary_search(b.opposites.begin(), b.opposites.end(), y) &&
        !std::binary_search(a.opposites.begin(), a.opposites.end(), y) &&
        !std::binary_search(b.opposites.begin(), b.opposites.end(), x)) {
      d.opposite = true;
    }
  }
  // Content: a unit of one side is matched by an occurrence of it on the other (or a spelling
  // of it), each occurrence once: compared as multisets, so a sentence added to a long message
  // differs even when every word of it already occurs somewhere in the message.
  std::unordered_map<std::string, int> in_a, in_b;
  for (const ContentUnit& u : a.content) ++in_a[u.text];
  for (const ContentUnit& u : b.content) ++in_b[u.text];
  d.content_a = static_cast<int>(a.content.size());
  d.content_b = static_cast<int>(b.content.size());
  std::vector<bool> ma(a.content.size()), mb(b.content.size());
  {
    std::unordered_map<std::string, int> left_b = in_b, left_a = in_a;
    for (size_t i = 0; i < a.content.size(); ++i) {
      int& n = left_b[a.content[i].text];
      if (n > 0) {
        ma[i] = true;
        --n;
      }
    }
    for (size_t j = 0; j < b.content.size(); ++j) {
      int& n = left_a[b.content[j].text];
      if (n > 0) {
        mb[j] = true;
        --n;
      }
    }
  }
  // "How much is shipping" asks the price: a price unit matches that question on the other side.
  auto asks_price = [](const TextSignals& t) {
    return std::find(t.questions.begin(), t.questions.end(), "howmuch") != t.questions.end();
  };
  auto is_price = [](const ContentUnit& u) { return u.text == "price" || u.text == "价格"; };
  if (asks_price(b)) {
    for (size_t i = 0; i < a.content.size(); ++i) ma[i] = ma[i] || is_price(a.content[i]);
  }
  if (asks_price(a)) {
    for (size_t j = 0; j < b.content.size(); ++j) mb[j] = mb[j] || is_price(b.content[j]);
  }
  // Misspellings among what is left (bounded: at most 16 x 16 short comparisons): a unit
  // matches a spelling of one of the other side's, or of a function word (chek / check), and
  // two adjacent units match their joined form (phone line / phoneline).
  constexpr size_t kMaxTypoUnits = 16;
  const size_t left_a = static_cast<size_t>(std::count(ma.begin(), ma.end(), false));
  const size_t left_b = static_cast<size_t>(std::count(mb.begin(), mb.end(), false));
  if (left_a <= kMaxTypoUnits && left_b <= kMaxTypoUnits) {
    auto spelled = [](const ContentUnit& x, const ContentUnit& y) {
      return SameSpelling(x.surface, y.surface) || SameSpelling(x.text, y.text) ||
             (x.surface.find(' ') != std::string::npos || y.surface.find(' ') != std::string::npos
                  ? SameSpelling(WithoutSpaces(x.surface), WithoutSpaces(y.surface))
                  : false);
    };
    for (size_t i = 0; i < a.content.size(); ++i) {
      if (ma[i] || a.content[i].han) continue;
      for (size_t j = 0; j < b.content.size(); ++j) {
        // Only with a unit the other side has left over: every occurrence pairs once.
        if (mb[j] || b.content[j].han || !spelled(a.content[i], b.content[j])) continue;
        ma[i] = mb[j] = true;
        ++d.typo_matches;
        break;
      }
    }
    // Two adjacent units of one side against one unit of the other: "phone line" / "phoneline".
    auto joined = [&](const std::vector<ContentUnit>& x, std::vector<bool>& mx,
                      const std::vector<ContentUnit>& y, std::vector<bool>& my) {
      for (size_t i = 0; i + 1 < x.size(); ++i) {
        if (x[i].han || x[i + 1].han || x[i + 1].index != x[i].index + 1 || (mx[i] && mx[i + 1]))
          continue;
        const std::string both = x[i].surface + x[i + 1].surface;
        for (size_t j = 0; j < y.size(); ++j) {
          if (y[j].han || my[j] || !SameSpelling(both, WithoutSpaces(y[j].surface))) continue;
          mx[i] = mx[i + 1] = my[j] = true;
          ++d.typo_matches;
          break;
        }
      }
    };
    joined(a.content, ma, b.content, mb);
    joined(b.content, mb, a.content, ma);
    for (auto [side, matched] : {std::pair{&a.content, &ma}, std::pair{&b.content, &mb}}) {
      for (size_t i = 0; i < side->size(); ++i) {
        if ((*matched)[i] || (*side)[i].han || (*side)[i].surface.size() < 3) continue;
        if (MisspelledFunctionWord((*side)[i].surface)) {
          (*matched)[i] = true;
          ++d.typo_matches;
        }
      }
    }
  }
  auto spans = [](const std::vector<ContentUnit>& units, const std::vector<bool>& matched,
                  std::vector<std::string>* out) {
    int count = 0;
    int last = -10;
    for (size_t i = 0; i < units.size(); ++i) {
      if (matched[i]) continue;
      ++count;
      const ContentUnit& u = units[i];
      const std::string& text = u.text;
      if (!out->empty() && u.index <= last + 2) {
        if (!u.han) out->back() += ' ';
        out->back() += text;
      } else {
        out->push_back(text);
      }
      last = u.index;
    }
    return count;
  };
  d.unmatched_a = spans(a.content, ma, &d.only_a);
  d.unmatched_b = spans(b.content, mb, &d.only_b);
  return d;
}

std::string CanonicalText(std::string_view text) {
  static const char* kCjkPunct[] = {"？", "！", "，", "。", "：", "；", "、", "（", "）", "“", "”"};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool skipped = false;
    for (const char* p : kCjkPunct) {
      const size_t n = std::char_traits<char>::length(p);
      if (text.compare(i, n, p) == 0) {
        i += n;
        skipped = true;
        break;
      }
    }
    if (skipped) continue;
    const auto u = static_cast<unsigned char>(text[i]);
    // Punctuation goes, except inside a number (24.99 and 249.9 stay apart).
    const bool in_number = i > 0 && i + 1 < text.size() &&
                           std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (u < 128 && (std::isspace(u) || (std::ispunct(u) && !in_number))) {
      ++i;
      continue;
    }
    out += static_cast<char>(u < 128 ? std::tolower(u) : u);
    ++i;
  }
  return out;
}

}  // namespace frugal::cache
