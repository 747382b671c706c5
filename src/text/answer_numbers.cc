// The answer reading of text/numbers.h: the numbers of a model's answer as plain decimals, for
// the quantizer's numeric check (docs/eval.md, "Numbers"). The rules are in numbers.h.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/lexicon.h"
#include "text/numbers.h"
#include "text/numbers_internal.h"

namespace frugal::text {
namespace {

// --- decimals: m x 10^e, exact, or nothing when it does not fit 64 bits ---

struct Dec {
  uint64_t m = 0;
  int e = 0;
};

constexpr uint64_t kMaxU64 = UINT64_MAX;

bool MulPow10(uint64_t& m, int k) {
  for (int i = 0; i < k; ++i) {
    if (m > kMaxU64 / 10) return false;
    m *= 10;
  }
  return true;
}

std::optional<Dec> Add(Dec a, Dec b) {
  const int e = std::min(a.e, b.e);
  if (!MulPow10(a.m, a.e - e) || !MulPow10(b.m, b.e - e) || a.m > kMaxU64 - b.m)
    return std::nullopt;
  return Dec{a.m + b.m, e};
}

std::optional<Dec> Times(uint64_t coef, int pow10) {
  if (!MulPow10(coef, pow10)) return std::nullopt;
  return Dec{coef, 0};
}

std::string Format(Dec d) {
  if (d.m == 0) return "0";
  while (d.e < 0 && d.m % 10 == 0) {
    d.m /= 10;
    ++d.e;
  }
  std::string s = std::to_string(d.m);
  if (d.e >= 0) return s + std::string(static_cast<size_t>(d.e), '0');
  const auto frac = static_cast<size_t>(-d.e);
  // Built by appending (GCC 12 warns wrongly, -Wrestrict, on std::string(n, '0') + s).
  std::string out;
  if (s.size() <= frac) out.assign(frac - s.size() + 1, '0');
  out += s;
  out.insert(out.size() - frac, 1, '.');
  return out;
}

// "whole" and "frac" digits (ASCII) as a decimal; nothing past 19 significant digits.
std::optional<Dec> DecFromDigits(const std::string& whole, const std::string& frac) {
  const std::string all = whole + frac;
  if (all.size() > 19) return std::nullopt;
  uint64_t m = 0;
  for (char c : all) {
    if (m > (kMaxU64 - 9) / 10) return std::nullopt;
    m = m * 10 + static_cast<uint64_t>(c - '0');
  }
  return Dec{m, -static_cast<int>(frac.size())};
}

// --- code points ---

// UTF-8 to code points; a byte that does not start a well-formed sequence is U+FFFD. `offsets`
// gets each code point's first byte, and the text's size last.
std::u32string Decode(std::string_view s, std::vector<size_t>* offsets) {
  std::u32string out;
  out.reserve(s.size());
  offsets->clear();
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = b0 < 0x80             ? 1
              : (b0 & 0xE0) == 0xC0 ? 2
              : (b0 & 0xF0) == 0xE0 ? 3
              : (b0 & 0xF8) == 0xF0 ? 4
                                    : 0;
    char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) len = 0;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((b & 0xC0) != 0x80) {
        len = 0;
        break;
      }
      c = (c << 6) | (b & 0x3F);
    }
    offsets->push_back(i);
    if (len == 0) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(c);
      i += static_cast<size_t>(len);
    }
  }
  offsets->push_back(s.size());
  return out;
}

bool IsFullWidthDigit(char32_t c) { return c >= 0xFF10 && c <= 0xFF19; }

// Full-width digits as ASCII, "．" as ".", and "，" as "," between two full-width digits.
std::u32string Normalise(const std::u32string& in) {
  std::u32string out = in;
  for (size_t k = 0; k < in.size(); ++k) {
    const char32_t c = in[k];
    if (IsFullWidthDigit(c)) {
      out[k] = U'0' + (c - 0xFF10);
    } else if (c == 0xFF0E) {
      out[k] = U'.';
    } else if (c == 0xFF0C && k > 0 && k + 1 < in.size() && IsFullWidthDigit(in[k - 1]) &&
               IsFullWidthDigit(in[k + 1])) {
      out[k] = U',';
    }
  }
  return out;
}

bool IsDigit(char32_t c) { return c >= U'0' && c <= U'9'; }

bool At(const std::u32string& s, size_t i, std::u32string_view w) {
  return i <= s.size() && s.size() - i >= w.size() && s.compare(i, w.size(), w) == 0;
}

bool AtAny(const std::u32string& s, size_t i, std::initializer_list<std::u32string_view> words) {
  for (std::u32string_view w : words) {
    if (At(s, i, w)) return true;
  }
  return false;
}

bool Before(const std::u32string& s, size_t i, std::u32string_view w) {
  return i >= w.size() && s.compare(i - w.size(), w.size(), w) == 0;
}

// --- Chinese numerals ---

// The tables of data/lexicon: digits (with the financial forms), multipliers, and the words
// the rules below look for.
struct AnswerTables {
  std::unordered_map<char32_t, int> digits;    // zh_digits, zh_formal_digits: 0-9 (两 included)
  std::unordered_map<char32_t, int> powers;    // zh_powers, zh_formal_powers: 十 1 .. 亿 8
  std::u32string kilo;                         // zh_answer_kilo_units
  std::vector<std::u32string> measures;        // zh_answer_measure_words
  std::vector<std::u32string> money_or_count;  // zh_answer_money_or_count
};

std::u32string U32(const std::string& utf8) {
  std::vector<size_t> offsets;
  return Decode(utf8, &offsets);
}

const AnswerTables& Tables() {
  static const AnswerTables kTables = [] {
    AnswerTables t;
    for (const char* file : {"zh_digits", "zh_formal_digits"}) {
      for (const auto& [c, v] : LexiconNumbers(file)) t.digits[OneCodePoint(c)] = v;
    }
    for (const char* file : {"zh_powers", "zh_formal_powers"}) {
      for (const auto& [c, p] : LexiconNumbers(file)) t.powers[OneCodePoint(c)] = p;
    }
    for (const std::string& c : LexiconWords("zh_answer_kilo_units"))
      t.kilo.push_back(OneCodePoint(c));
    for (const std::string& w : LexiconWords("zh_answer_measure_words"))
      t.measures.push_back(U32(w));
    for (const std::string& w : LexiconWords("zh_answer_money_or_count"))
      t.money_or_count.push_back(U32(w));
    return t;
  }();
  return kTables;
}

// 0-9 for a digit character, -1 otherwise (两 included: the caller limits where it may stand).
int CnDigit(char32_t c) {
  const auto& d = Tables().digits;
  const auto it = d.find(c);
  return it == d.end() ? -1 : it->second;
}

// The power of ten of a multiplier character, 0 otherwise.
int CnUnit(char32_t c) {
  const auto& p = Tables().powers;
  const auto it = p.find(c);
  return it == p.end() ? 0 : it->second;
}

// 千 before these is the SI prefix "kilo" (千克 kg, 千米 km, 千瓦 kW, 千卡 kcal).
bool IsKilo(const std::u32string& s, size_t i) {
  return i + 1 < s.size() && s[i] == U'千' && Tables().kilo.find(s[i + 1]) != std::u32string::npos;
}

bool IsUnitAt(const std::u32string& s, size_t i) {
  return i < s.size() && CnUnit(s[i]) != 0 && !IsKilo(s, i);
}

// Measure words and units after which a lone numeral character is a count.
bool MeasureWordAt(const std::u32string& s, size_t i) {
  for (const std::u32string& w : Tables().measures) {
    if (At(s, i, w)) return true;
  }
  return false;
}

// After a numeral that starts with 百 千 万 or 亿: money, people, items.
bool MoneyOrCountAt(const std::u32string& s, size_t i) {
  for (const std::u32string& w : Tables().money_or_count) {
    if (At(s, i, w)) return true;
  }
  return false;
}

bool IsCjk(char32_t c) { return c >= 0x3400 && c <= 0x9FFF; }

struct CnToken {
  enum Kind { kDigit, kUnit, kPoint } kind = kDigit;
  int value = 0;       // digit, or the unit's power of ten
  std::string frac;    // kPoint: the digits after 点
  bool liang = false;  // the digit was 两
};

// A run of numeral characters from i: digits, multipliers, and 点 with the digits after it.
// 两 joins only at the start or before a multiplier; 点 followed by digits and then a small
// multiplier is a time ("三点五十分": 3 o'clock, then 50), so the run ends before it.
std::vector<CnToken> CollectCn(const std::u32string& s, size_t i, size_t* end) {
  std::vector<CnToken> t;
  bool point = false;
  size_t j = i;
  while (j < s.size()) {
    const char32_t c = s[j];
    const int d = CnDigit(c);
    if (d >= 0) {
      if (c == U'两' && !t.empty() && !IsUnitAt(s, j + 1)) break;
      if (point && t.back().kind == CnToken::kPoint) break;  // digits after 点 are in its token
      t.push_back({CnToken::kDigit, d, "", c == U'两'});
      ++j;
    } else if (IsUnitAt(s, j)) {
      t.push_back({CnToken::kUnit, CnUnit(c), "", false});
      ++j;
    } else if (c == U'点' && !t.empty() && !point && j + 1 < s.size() && CnDigit(s[j + 1]) >= 0 &&
               s[j + 1] != U'两') {
      size_t k = j + 1;
      std::string frac;
      while (k < s.size() && CnDigit(s[k]) >= 0 && s[k] != U'两') {
        frac += static_cast<char>('0' + CnDigit(s[k]));
        ++k;
      }
      if (k < s.size() && CnUnit(s[k]) != 0 && CnUnit(s[k]) < 4) break;  // a time
      t.push_back({CnToken::kPoint, 0, frac, false});
      point = true;
      j = k;
    } else {
      break;
    }
  }
  *end = j;
  return t;
}

using Tokens = std::vector<CnToken>;

// A section below 万: digits with 十 百 千, 零 as a placeholder; "两千五" is 2500.
std::optional<uint64_t> CnSection(const Tokens& t, size_t b, size_t e) {
  uint64_t sum = 0;
  int pending = -1, last_p = 4, last_unit = 0;
  bool after_zero = false, liang_pending = false;
  for (size_t k = b; k < e; ++k) {
    const CnToken& x = t[k];
    if (x.kind == CnToken::kDigit) {
      if (pending >= 0) return std::nullopt;  // two digits in a row
      if (x.value == 0) {
        if (after_zero) return std::nullopt;  // 零零
        after_zero = true;
        continue;
      }
      pending = x.value;
      liang_pending = x.liang;
    } else if (x.kind == CnToken::kUnit) {
      const int p = x.value;
      if (p >= last_p) return std::nullopt;
      int coef = pending;
      if (coef < 0) {
        if (k != b || after_zero) return std::nullopt;  // 千百, 一千零十
        coef = 1;                                       // 十五, 百...
      }
      if (liang_pending && p == 1) return std::nullopt;  // 两十
      uint64_t v = static_cast<uint64_t>(coef);
      MulPow10(v, p);
      sum += v;
      last_p = last_unit = p;
      pending = -1;
      liang_pending = false;
      after_zero = false;
    } else {
      return std::nullopt;
    }
  }
  if (pending >= 0) {
    if (liang_pending && (last_unit > 0 || after_zero)) return std::nullopt;  // 一千两
    uint64_t v = static_cast<uint64_t>(pending);
    if (last_unit > 0 && !after_zero) MulPow10(v, last_unit - 1);  // 两千五, 一百五
    sum += v;
  }
  return sum;
}

std::optional<Dec> CnInteger(const Tokens& t, size_t b, size_t e);

// What follows 万 (p = 4) or 亿 (p = 8): below 10^p; a lone digit is the next place down
// (三万五 = 35000), 零 first is a placeholder (一万零五百).
std::optional<Dec> CnRemainder(const Tokens& t, size_t b, size_t e, int p) {
  if (b == e) return Dec{};
  if (e - b == 1 && t[b].kind == CnToken::kDigit && t[b].value > 0 && !t[b].liang)
    return Times(static_cast<uint64_t>(t[b].value), p - 1);
  if (t[b].kind == CnToken::kDigit && t[b].value == 0) {
    ++b;
    if (b == e) return std::nullopt;
  } else if (t[b].kind == CnToken::kUnit && t[b].value == 1) {
    return std::nullopt;  // 一万十: not how it is written
  }
  auto r = CnInteger(t, b, e);
  uint64_t limit = 1;
  MulPow10(limit, p);
  if (!r || r->e != 0 || r->m >= limit) return std::nullopt;
  return r;
}

std::optional<Dec> CnInteger(const Tokens& t, size_t b, size_t e) {
  for (const int big : {8, 4}) {
    size_t at = e;
    for (size_t k = b; k < e; ++k) {
      if (t[k].kind == CnToken::kUnit && t[k].value == big) {
        at = k;
        break;
      }
    }
    if (at == e) continue;
    // 万亿: the 亿 multiplies everything before it.
    std::optional<Dec> left = at == b ? std::optional<Dec>(Dec{1, 0}) : CnInteger(t, b, at);
    if (!left) return std::nullopt;
    auto right = CnRemainder(t, at + 1, e, big);
    if (!right) return std::nullopt;
    return Add(Dec{left->m, left->e + big}, *right);
  }
  auto v = CnSection(t, b, e);
  if (!v) return std::nullopt;
  return Dec{*v, 0};
}

struct CnNumeral {
  std::optional<Dec> value;  // nothing: not a well-formed numeral
  size_t end = 0;
  bool lone = false;          // one character
  bool digit_string = false;  // digits only, at least two
  bool has_zero = false;      // a 零 or 〇 among them
  bool unit_first = false;    // starts with 百 千 万 or 亿
};

CnNumeral ParseCn(const std::u32string& s, size_t i) {
  CnNumeral r;
  const Tokens t = CollectCn(s, i, &r.end);
  if (t.empty()) return r;
  r.lone = t.size() == 1 && t[0].kind != CnToken::kPoint;
  r.unit_first = t[0].kind == CnToken::kUnit && t[0].value >= 2;
  bool digits_only = true;
  for (const CnToken& x : t) {
    if (x.kind != CnToken::kDigit) digits_only = false;
    if (x.kind == CnToken::kDigit && x.value == 0) r.has_zero = true;
  }
  if (r.lone) {
    r.value = t[0].kind == CnToken::kDigit ? Dec{static_cast<uint64_t>(t[0].value), 0}
                                           : *Times(1, t[0].value);
    return r;
  }
  if (digits_only) {
    r.digit_string = true;
    std::string digits;
    for (const CnToken& x : t) {
      if (x.liang) return r;
      digits += static_cast<char>('0' + x.value);
    }
    const size_t nz = digits.find_first_not_of('0');
    r.value = DecFromDigits(nz == std::string::npos ? "0" : digits.substr(nz), "");
    return r;
  }
  // [integer] [点 digits] [万 | 亿 | 万亿]
  size_t point = t.size();
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind == CnToken::kPoint) point = k;
  }
  if (point == t.size()) {
    r.value = CnInteger(t, 0, t.size());
    return r;
  }
  if (point == 0) return r;
  auto whole = CnInteger(t, 0, point);
  if (!whole || whole->e != 0) return r;
  int scale = 0, last = 0;
  for (size_t k = point + 1; k < t.size(); ++k) {
    if (t[k].kind != CnToken::kUnit || t[k].value < 4 || t[k].value <= last) return r;
    scale += t[k].value;
    last = t[k].value;
  }
  auto v = DecFromDigits(std::to_string(whole->m), t[point].frac);
  if (!v) return r;
  v->e += scale;
  r.value = v;
  return r;
}

// Whether a numeral read at [i, r.end) is a number here, by what is around it (numbers.h).
bool CnIsNumber(const std::u32string& s, size_t i, const CnNumeral& r) {
  if (!r.value) return false;
  const char32_t prev = i > 0 ? s[i - 1] : 0;
  if (prev == U'几' || prev == U'数') return false;  // 几十, 数百
  if (r.unit_first && (prev == U'多' || prev == U'余')) return false;
  if (r.digit_string) return r.has_zero || At(s, r.end, U"年") || At(s, r.end, U"折");
  if (r.lone && (Before(s, i, U"星期") || Before(s, i, U"礼拜") || prev == U'周'))
    return false;  // a weekday
  if (r.unit_first) return MoneyOrCountAt(s, r.end);
  if (!r.lone) return true;
  if (s[i] == U'零' || s[i] == U'〇')
    return r.end >= s.size() || !IsCjk(s[r.end]) || AtAny(s, r.end, {U"元", U"块"});
  if (prev == U'第') return true;
  if (s[i] == U'一' && At(s, r.end, U"点") && !At(s, r.end, U"点钟") && !At(s, r.end, U"点半"))
    return false;  // 一点: "a little"
  return MeasureWordAt(s, r.end);
}

// --- the scan ---

// An ASCII number at i (IsDigit(s[i])): its digits and where it ends.
size_t ParseAscii(const std::u32string& s, size_t i, std::string& whole, std::string& frac) {
  const size_t n = s.size();
  while (i < n && IsDigit(s[i])) whole += static_cast<char>(s[i++]);
  // Thousands groups: ",ddd" not followed by another digit.
  while (i + 3 < n && s[i] == U',' && IsDigit(s[i + 1]) && IsDigit(s[i + 2]) && IsDigit(s[i + 3]) &&
         (i + 4 >= n || !IsDigit(s[i + 4]))) {
    for (size_t k = 1; k <= 3; ++k) whole += static_cast<char>(s[i + k]);
    i += 4;
  }
  if (i + 1 < n && s[i] == U'.' && IsDigit(s[i + 1])) {
    ++i;
    while (i < n && IsDigit(s[i])) frac += static_cast<char>(s[i++]);
  }
  return i;
}

// Multipliers at i (十 百 千, then 万, then 亿, at least one): their power of ten, 0 for none.
int MultiplierAt(const std::u32string& s, size_t i, size_t* end) {
  int p = 0, last = 0;
  size_t j = i;
  while (IsUnitAt(s, j)) {
    const int u = CnUnit(s[j]);
    if (u <= last || (u < 4 && last > 0)) break;  // 千万, 百万, 万亿; not 十百
    p += u;
    last = u;
    ++j;
  }
  *end = j;
  return p;
}

// An ASCII number with the multipliers after it: "1.5万", "3千万", "1万2千".
std::optional<Dec> AsciiTimesUnits(const std::u32string& s, const std::string& whole,
                                   const std::string& frac, size_t* end) {
  size_t j = *end;
  const int p = MultiplierAt(s, j, &j);
  if (p == 0) return std::nullopt;
  auto v = DecFromDigits(whole, frac);
  if (!v) return std::nullopt;
  v->e += p;
  int lowest = CnUnit(s[j - 1]);
  // Further "digits + smaller multiplier" pairs add on.
  while (j < s.size() && IsDigit(s[j])) {
    std::string w2, f2;
    const size_t k = ParseAscii(s, j, w2, f2);
    size_t k2 = k;
    const int q = MultiplierAt(s, k, &k2);
    if (q == 0 || q >= lowest) break;
    auto part = DecFromDigits(w2, f2);
    if (!part) break;
    part->e += q;
    auto sum = Add(*v, *part);
    if (!sum) break;
    v = sum;
    j = k2;
    lowest = CnUnit(s[k2 - 1]);
  }
  *end = j;
  return v;
}

// One numeral digit at i for 角 and 分 (Chinese 1-9 with 两, or one ASCII digit).
int MoneyDigitAt(const std::u32string& s, size_t i) {
  if (i >= s.size()) return -1;
  if (IsDigit(s[i]))
    return i + 1 < s.size() && IsDigit(s[i + 1]) ? -1 : static_cast<int>(s[i] - U'0');
  const int d = CnDigit(s[i]);
  return d > 0 ? d : -1;
}

// Yuan and jiao (and fen) as one amount: "三元五角" = 3.5, "12块3毛5分" = 12.35.
void AddJiaoFen(const std::u32string& s, Dec& v, size_t* end) {
  size_t j = *end;
  if (j >= s.size() || (s[j] != U'元' && s[j] != U'块')) return;
  const int jiao = MoneyDigitAt(s, j + 1);
  if (jiao < 0 || !(At(s, j + 2, U"角") || At(s, j + 2, U"毛"))) return;
  auto sum = Add(v, Dec{static_cast<uint64_t>(jiao), -1});
  if (!sum) return;
  j += 3;
  const int fen = MoneyDigitAt(s, j);
  if (fen >= 0 && At(s, j + 1, U"分")) {
    if (auto with_fen = Add(*sum, Dec{static_cast<uint64_t>(fen), -2})) {
      sum = with_fen;
      j += 2;
    }
  }
  v = *sum;
  *end = j;
}

std::string Plain(std::string whole, std::string frac) {
  const size_t nz = whole.find_first_not_of('0');
  whole = nz == std::string::npos ? "0" : whole.substr(nz);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return frac.empty() ? whole : whole + "." + frac;
}

}  // namespace

std::vector<Number> ReadAnswerNumbers(std::string_view text) {
  std::vector<size_t> bytes;
  const std::u32string s = Normalise(Decode(text, &bytes));
  const size_t n = s.size();
  std::vector<Number> out;
  // Code points [b, e) of the text as bytes.
  auto add = [&](std::string value, size_t b, size_t e) {
    out.push_back({std::move(value), "", bytes[b], bytes[e], {}});
  };
  size_t i = 0;
  while (i < n) {
    if (At(s, i, U"百分百")) {
      add("100", i, i + 3);
      i += 3;
      continue;
    }
    const bool percent = At(s, i, U"百分之");
    const size_t at = percent ? i + 3 : i;
    if (at < n && IsDigit(s[at])) {
      std::string whole, frac;
      size_t end = ParseAscii(s, at, whole, frac);
      std::optional<Dec> v = AsciiTimesUnits(s, whole, frac, &end);
      if (v) {
        AddJiaoFen(s, *v, &end);
      } else {
        // Plain digits keep their own text (ids and tracking numbers may pass 19 digits).
        v = DecFromDigits(whole, frac);
        size_t after = end;
        if (v) AddJiaoFen(s, *v, &after);
        if (after == end) {
          add(Plain(whole, frac), i, end);
          i = end;
          continue;
        }
        end = after;
      }
      add(Format(*v), i, end);
      i = end;
      continue;
    }
    if (at < n && (CnDigit(s[at]) >= 0 || IsUnitAt(s, at))) {
      CnNumeral r = ParseCn(s, at);
      if (r.end > at && (percent ? r.value.has_value() : CnIsNumber(s, at, r))) {
        Dec v = *r.value;
        size_t end = r.end;
        AddJiaoFen(s, v, &end);
        add(Format(v), i, end);
        i = end;
        continue;
      }
      if (!percent) {
        i = std::max(r.end, i + 1);  // the whole run is not a number: not its parts either
        continue;
      }
    }
    ++i;
  }
  return out;
}

}  // namespace frugal::text
