// The query reading of text/numbers.h: a user's question as the cache's verifier compares it
// with another (values, dates, alternative readings; English number words). The rules are in
// numbers.h.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/lexicon.h"
#include "text/numbers.h"
#include "text/numbers_internal.h"
#include "text/tokens.h"

namespace frugal::text {
namespace {

using Kind = TokenKind;

// The numeral tables (data/lexicon/zh_digits.txt, zh_powers.txt): digit -> value, multiplier
// -> its value (十 10 .. 亿 10^8).
struct QueryTables {
  std::unordered_map<uint32_t, int> digits;
  std::unordered_map<uint32_t, int64_t> units;
  std::u32string measures;                        // zh_query_measure_chars
  std::unordered_set<std::string> idioms;         // zh_numeral_idioms
  std::unordered_map<std::string, int> en_words;  // en_number_words
  std::unordered_map<std::string, int> ordinals;  // en_ordinals
  std::unordered_map<std::string, int> months;    // en_months
  std::unordered_set<std::string> one_pronoun;    // en_one_pronoun_after
};

const QueryTables& Tables() {
  static const QueryTables kTables = [] {
    QueryTables t;
    for (const auto& [c, v] : LexiconNumbers("zh_digits")) t.digits[OneCodePoint(c)] = v;
    for (const auto& [c, p] : LexiconNumbers("zh_powers")) {
      int64_t v = 1;
      for (int k = 0; k < p; ++k) v *= 10;
      t.units[OneCodePoint(c)] = v;
    }
    for (const std::string& c : LexiconWords("zh_query_measure_chars"))
      t.measures.push_back(static_cast<char32_t>(OneCodePoint(c)));
    for (std::string& w : LexiconWords("zh_numeral_idioms")) t.idioms.insert(std::move(w));
    for (auto& [w, v] : LexiconNumbers("en_number_words")) t.en_words[w] = v;
    for (auto& [w, v] : LexiconNumbers("en_ordinals")) t.ordinals[w] = v;
    for (auto& [w, v] : LexiconNumbers("en_months")) t.months[w] = v;
    for (std::string& w : LexiconWords("en_one_pronoun_after")) t.one_pronoun.insert(std::move(w));
    return t;
  }();
  return kTables;
}

int ChineseDigit(uint32_t cp) {
  const auto& d = Tables().digits;
  const auto it = d.find(cp);
  return it == d.end() ? -1 : it->second;
}

int64_t ChineseUnit(uint32_t cp) {
  const auto& u = Tables().units;
  const auto it = u.find(cp);
  return it == u.end() ? 0 : it->second;
}

bool IsNumeral(uint32_t cp) { return ChineseDigit(cp) >= 0 || ChineseUnit(cp) > 0; }

// Characters a quantity is counted in: 一件 / 两天 are numbers, 一下 / 一起 are not.
bool IsMeasure(uint32_t cp) {
  return Tables().measures.find(static_cast<char32_t>(cp)) != std::u32string::npos;
}

std::string FormatValue(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(std::llround(v)));
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return CanonicalDigits(buf);
}

// The value of a run of Chinese numerals: 三百 300, 两千五 2500, 十一 11, 一百零五 105, 三万五
// 35000.
std::optional<double> ParseChineseNumber(const std::vector<uint32_t>& cps, double leading) {
  double total = 0, section = 0;
  double digit = leading;  // "1.5万": the ASCII number before the run
  bool have_digit = leading != 0;
  int64_t last_unit = 0;
  bool any = have_digit;
  for (uint32_t cp : cps) {
    const int d = ChineseDigit(cp);
    if (d >= 0) {
      if (have_digit && d != 0 && last_unit == 0) {
        // "一二三" is not a number in our sense: read digit by digit (an id).
        digit = digit * 10 + d;
      } else {
        digit = d;
      }
      have_digit = true;
      any = true;
      continue;
    }
    const int64_t u = ChineseUnit(cp);
    if (u == 0) return std::nullopt;
    if (!have_digit) digit = 1;  // 十一 = 11
    if (u >= 10000) {
      section = (section + digit) * static_cast<double>(u);
      total += section;
      section = 0;
    } else {
      section += digit * static_cast<double>(u);
    }
    last_unit = u;
    digit = 0;
    have_digit = false;
    any = true;
  }
  if (have_digit) {
    // The colloquial tail: 两千五 = 2500, 三万五 = 35000, 一百五 = 150.
    if (last_unit >= 10 && digit < 10 && cps.size() >= 2 && ChineseDigit(cps[cps.size() - 2]) < 0) {
      section += digit * static_cast<double>(last_unit >= 10000 ? last_unit / 10 : last_unit / 10);
      if (last_unit >= 10000) {
        total += section;
        section = 0;
      }
    } else {
      section += digit;
    }
  }
  if (!any) return std::nullopt;
  return total + section;
}

// Words with numeral characters that are not quantities.
bool NumeralIdiom(const std::vector<Token>& t, size_t i) {
  const auto& kIdioms = Tables().idioms;
  for (size_t len = 4; len >= 2; --len) {
    for (size_t start = i >= len - 1 ? i - (len - 1) : 0; start <= i; ++start) {
      if (start + len > t.size()) continue;
      std::string w;
      bool ok = true;
      for (size_t k = start; k < start + len; ++k) {
        if (t[k].kind != Kind::kHan || (k > start && t[k].gap)) {
          ok = false;
          break;
        }
        w += t[k].text;
      }
      if (!ok || !kIdioms.count(w)) continue;
      // 十分钟 (ten minutes) is a quantity; 十分满意 (very satisfied) is not.
      if (w == "十分" && start + 2 < t.size() && t[start + 2].kind == Kind::kHan &&
          t[start + 2].text == "钟")
        continue;
      if (w == "千克") continue;  // a unit after a number: handled by the caller
      return true;
    }
  }
  return false;
}

int EnglishNumberWord(const std::string& w) {
  const auto& words = Tables().en_words;  // not "once": "once the order ships"
  auto it = words.find(w);
  return it == words.end() ? -1 : it->second;
}

// first .. thirty-first ("second" only where it cannot be the time unit: the caller checks).
int OrdinalWord(const std::string& w) {
  const auto& ord = Tables().ordinals;
  auto it = ord.find(w);
  return it == ord.end() ? -1 : it->second;
}

int MonthNumber(const std::string& w) {
  const auto& months = Tables().months;
  auto it = months.find(w);
  return it == months.end() ? 0 : it->second;
}

bool IsDayNumber(const Token& t, int* day) {
  if (t.kind != Kind::kNumber || t.text.find_first_not_of("0123456789") != std::string::npos ||
      t.text.size() > 2)
    return false;
  *day = std::atoi(t.text.c_str());
  return *day >= 1 && *day <= 31;
}

std::string DateValue(int month, int day) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "d%d/%d", month, day);
  return buf;
}

// A run of Han numerals starting at i (adjacent, no gap); returns its end.
size_t NumeralRun(const std::vector<Token>& t, size_t i) {
  size_t j = i;
  while (j < t.size() && t[j].kind == Kind::kHan && IsNumeral(t[j].cp) && (j == i || !t[j].gap))
    ++j;
  return j;
}

// The numbers of a tokenized query, each with the index of its first token in `begin` (the
// caller turns token indices into bytes); the tokens each number consumed are marked used.
void ReadNumbers(std::vector<Token>& t, std::vector<Number>* out) {
  auto han_is = [&](size_t k, const char* s) {
    return k < t.size() && t[k].kind == Kind::kHan && !t[k].gap && t[k].text == s;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    Token& tok = t[i];
    if (tok.used) continue;
    // 双十一 / 双11 / 双十二: the shopping festivals, dates.
    if (tok.kind == Kind::kHan && tok.text == "双" && i + 1 < t.size() && !t[i + 1].gap) {
      int v = 0;
      size_t end = i + 1;
      if (t[i + 1].kind == Kind::kNumber && (t[i + 1].text == "11" || t[i + 1].text == "12")) {
        v = std::atoi(t[i + 1].text.c_str());
        end = i + 2;
      } else {
        const size_t r = NumeralRun(t, i + 1);
        std::vector<uint32_t> cps;
        for (size_t k = i + 1; k < r; ++k) cps.push_back(t[k].cp);
        if (auto x = ParseChineseNumber(cps, 0); x && (*x == 11 || *x == 12)) {
          v = static_cast<int>(*x);
          end = r;
        }
      }
      if (v != 0) {
        out->push_back({DateValue(v, v), "", i, 0, {}});
        for (size_t k = i; k < end; ++k) t[k].used = true;
        i = end - 1;
        continue;
      }
    }
    // An ASCII number, maybe the head of a Chinese quantity (1.5万) or of a date (11月11日).
    if (tok.kind == Kind::kNumber) {
      double lead = std::atof(tok.text.c_str());
      const bool plain = tok.text.find_first_of("-/:") == std::string::npos;
      size_t end = i + 1;
      std::string value = tok.text, alt;
      if (plain && end < t.size() && t[end].kind == Kind::kHan && !t[end].gap &&
          ChineseUnit(t[end].cp) > 0) {
        const size_t r = NumeralRun(t, end);
        std::vector<uint32_t> cps;
        for (size_t k = end; k < r; ++k) cps.push_back(t[k].cp);
        if (auto x = ParseChineseNumber(cps, lead)) {
          value = FormatValue(*x);
          end = r;
        }
      }
      // M月D日 / M月D号 with digits (or a numeral day).
      if (plain && han_is(end, "月")) {
        const int month = std::atoi(value.c_str());
        size_t k = end + 1;
        int day = 0;
        if (k < t.size() && !t[k].gap && IsDayNumber(t[k], &day)) {
          ++k;
        } else if (k < t.size() && t[k].kind == Kind::kHan && !t[k].gap && IsNumeral(t[k].cp)) {
          const size_t r = NumeralRun(t, k);
          std::vector<uint32_t> cps;
          for (size_t q = k; q < r; ++q) cps.push_back(t[q].cp);
          if (auto x = ParseChineseNumber(cps, 0)) day = static_cast<int>(*x);
          k = r;
        }
        if (month >= 1 && month <= 12 && day >= 1 && day <= 31) {
          if (han_is(k, "日") || han_is(k, "号")) ++k;
          out->push_back({DateValue(month, day), "", i, 0, {}});
          for (size_t q = i; q < k; ++q) t[q].used = true;
          i = k - 1;
          continue;
        }
      }
      // May 3 / 3 May written with a month name after the number.
      if (plain && end < t.size() && t[end].kind == Kind::kWord && MonthNumber(t[end].text) > 0 &&
          t[end].text != "may") {
        int day = 0;
        if (IsDayNumber(tok, &day)) {
          out->push_back({DateValue(MonthNumber(t[end].text), day), "", i, 0, {}});
          tok.used = t[end].used = true;
          i = end;
          continue;
        }
      }
      // 11.11 / 6.18 read as prices or as dates; 11/11 as a date.
      const size_t dot = value.find('.');
      if (dot != std::string::npos && value.find('.', dot + 1) == std::string::npos &&
          tok.text == value) {
        const int m = std::atoi(value.substr(0, dot).c_str()),
                  d = std::atoi(value.substr(dot + 1).c_str());
        if (m >= 1 && m <= 12 && d >= 1 && d <= 31 && value.size() - dot - 1 <= 2)
          alt = DateValue(m, d);
      }
      const size_t slash = value.find('/');
      if (slash != std::string::npos &&
          value.find_first_of("/-:", slash + 1) == std::string::npos) {
        const int m = std::atoi(value.substr(0, slash).c_str()),
                  d = std::atoi(value.substr(slash + 1).c_str());
        if (m >= 1 && m <= 12 && d >= 1 && d <= 31) value = DateValue(m, d);
      }
      out->push_back({value, alt, i, 0, {}});
      for (size_t k = i; k < end; ++k) t[k].used = true;
      // Ordinal and unit suffixes glued to the digits: 1st, 2nd, 5pcs stay a number + a word;
      // the ordinal letters are not content.
      if (end < t.size() && t[end].kind == Kind::kWord && !t[end].gap &&
          (t[end].text == "st" || t[end].text == "nd" || t[end].text == "rd" ||
           t[end].text == "th")) {
        t[end].used = true;
        int day = 0;
        if (end + 2 < t.size() && t[end + 1].kind == Kind::kWord && t[end + 1].text == "of" &&
            IsDayNumber(tok, &day) && t[end + 2].kind == Kind::kWord &&
            MonthNumber(t[end + 2].text) > 0) {
          out->back() = {DateValue(MonthNumber(t[end + 2].text), day), "", i, 0, {}};
          t[end + 1].used = t[end + 2].used = true;
          end += 2;
        }
        i = end;
        continue;
      }
      i = end - 1;
      continue;
    }
    // Chinese numerals.
    if (tok.kind == Kind::kHan && IsNumeral(tok.cp)) {
      const size_t r = NumeralRun(t, i);
      if (NumeralIdiom(t, i)) continue;
      // A lone 一 / 两 counts only before a measure word (一件, 两天), and 百分之 is a percentage.
      const bool lone_small =
          r == i + 1 && (tok.text == "一" || tok.text == "两" || tok.text == "二");
      const bool measured =
          r < t.size() && t[r].kind == Kind::kHan && !t[r].gap && IsMeasure(t[r].cp);
      if (lone_small && !measured) continue;
      std::vector<uint32_t> cps;
      for (size_t k = i; k < r; ++k) cps.push_back(t[k].cp);
      // 百分之十: 100 then 分之 then a number; read as the percentage.
      auto x = ParseChineseNumber(cps, 0);
      if (!x) continue;
      size_t end = r;
      if (han_is(end, "月")) {
        size_t k = end + 1;
        int day = 0;
        if (k < t.size() && !t[k].gap && IsDayNumber(t[k], &day)) {
          ++k;
        } else if (k < t.size() && t[k].kind == Kind::kHan && IsNumeral(t[k].cp)) {
          const size_t r2 = NumeralRun(t, k);
          std::vector<uint32_t> c2;
          for (size_t q = k; q < r2; ++q) c2.push_back(t[q].cp);
          if (auto y = ParseChineseNumber(c2, 0)) day = static_cast<int>(*y);
          k = r2;
        }
        if (*x >= 1 && *x <= 12 && day >= 1 && day <= 31) {
          if (han_is(k, "日") || han_is(k, "号")) ++k;
          out->push_back({DateValue(static_cast<int>(*x), day), "", i, 0, {}});
          for (size_t q = i; q < k; ++q) t[q].used = true;
          i = k - 1;
          continue;
        }
      }
      out->push_back({FormatValue(*x), "", i, 0, {}});
      for (size_t k = i; k < end; ++k) t[k].used = true;
      i = end - 1;
      continue;
    }
    // English number words: two, twenty five, three hundred (and fifty).
    if (tok.kind == Kind::kWord && EnglishNumberWord(tok.text) >= 0) {
      if (tok.text == "one") {
        // "which one", "this one", "one of": a pronoun, not a quantity.
        const auto& kBefore = Tables().one_pronoun;
        const bool pron_before =
            i > 0 && t[i - 1].kind == Kind::kWord && kBefore.count(t[i - 1].text);
        const bool of_after = i + 1 < t.size() && t[i + 1].kind == Kind::kWord &&
                              (t[i + 1].text == "of" || t[i + 1].text == "by");
        const bool last = i + 1 >= t.size();
        const bool scaled = i + 1 < t.size() && t[i + 1].kind == Kind::kWord &&
                            EnglishNumberWord(t[i + 1].text) >= 100;
        if (!scaled && (pron_before || of_after || last)) continue;
      }
      double total = 0, current = 0;
      size_t j = i;
      bool any = false;
      while (j < t.size() && t[j].kind == Kind::kWord) {
        const int v = EnglishNumberWord(t[j].text);
        if (v < 0) {
          if (t[j].text == "and" && any && j + 1 < t.size() &&
              EnglishNumberWord(t[j + 1].text) > 0) {
            ++j;
            continue;
          }
          break;
        }
        if (v == 100) {
          current = (current == 0 ? 1 : current) * 100;
        } else if (v >= 1000) {
          total += (current == 0 ? 1 : current) * v;
          current = 0;
        } else {
          current += v;
        }
        any = true;
        ++j;
      }
      out->push_back({FormatValue(total + current), "", i, 0, {}});
      for (size_t k = i; k < j; ++k) t[k].used = true;
      i = j - 1;
      continue;
    }
    // Ordinals: the third (of March), a second bag, twenty-first; "30th of November" below.
    if (tok.kind == Kind::kWord && OrdinalWord(tok.text) > 0) {
      int v = OrdinalWord(tok.text);
      const std::string& before =
          i > 0 && t[i - 1].kind == Kind::kWord ? t[i - 1].text : std::string();
      const bool of_next =
          i + 1 < t.size() && t[i + 1].kind == Kind::kWord && t[i + 1].text == "of";
      if (tok.text == "second" && !of_next &&
          !(before == "the" || before == "a" || before == "my" || before == "your" ||
            before == "our" || before == "their")) {
        continue;
      }
      size_t end = i + 1;
      if (of_next && i + 2 < t.size() && t[i + 2].kind == Kind::kWord &&
          MonthNumber(t[i + 2].text) > 0) {
        out->push_back({DateValue(MonthNumber(t[i + 2].text), v), "", i, 0, {}});
        end = i + 3;
      } else {
        out->push_back({FormatValue(v), "", i, 0, {}});
      }
      for (size_t k = i; k < end; ++k) t[k].used = true;
      i = end - 1;
      continue;
    }
    // May 3, March 5th.
    if (tok.kind == Kind::kWord && MonthNumber(tok.text) > 0) {
      int day = 0;
      if (i + 1 < t.size() && IsDayNumber(t[i + 1], &day)) {
        out->push_back({DateValue(MonthNumber(tok.text), day), "", i, 0, {}});
        tok.used = t[i + 1].used = true;
        if (i + 2 < t.size() && t[i + 2].kind == Kind::kWord && !t[i + 2].gap &&
            (t[i + 2].text == "st" || t[i + 2].text == "nd" || t[i + 2].text == "rd" ||
             t[i + 2].text == "th")) {
          t[i + 2].used = true;
        }
        ++i;
      }
    }
  }
}

}  // namespace

std::vector<Number> ReadQueryNumbers(std::string_view text) {
  const std::string s = NormalizeText(text);
  std::vector<Token> t = Tokenize(s);
  std::vector<Number> out;
  ReadNumbers(t, &out);
  // Token indices to bytes of s. A number consumed tokens from its first one up to the next
  // number's first; what it consumed is every used token there, in runs.
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t first = out[k].begin;
    const size_t limit = k + 1 < out.size() ? out[k + 1].begin : t.size();
    for (size_t j = first; j < limit; ++j) {
      if (!t[j].used) continue;
      if (j > first && t[j - 1].used) {
        out[k].consumed.back().second = t[j].end;
      } else {
        out[k].consumed.emplace_back(t[j].begin, t[j].end);
      }
      out[k].end = t[j].end;
    }
    out[k].begin = t[first].begin;
  }
  return out;
}

}  // namespace frugal::text
