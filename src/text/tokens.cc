#include "text/tokens.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace frugal::text {
namespace {

bool IsLetter(uint32_t cp) {
  if (cp < 128) return std::isalpha(static_cast<int>(cp)) != 0;
  const utf8proc_category_t c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO || c == UTF8PROC_CATEGORY_MN;
}

}  // namespace

bool IsHan(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0xF900 && cp <= 0xFAFF) || cp == 0x3007;  // 〇
}

// NFKC + case folding; invalid bytes become U+FFFD first.
std::string NormalizeText(std::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                    static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      valid += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    valid.append(text.substr(i, static_cast<size_t>(n)));
    i += static_cast<size_t>(n);
  }
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
      static_cast<utf8proc_ssize_t>(valid.size()), &out,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
                                     UTF8PROC_CASEFOLD | UTF8PROC_IGNORE));
  if (n < 0) return valid;
  std::string s(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

// Canonical digits: thousands separators dropped, 24.90 -> 24.9, 007 -> 7; dates and times
// (2024-03-05, 10:30, 11/11) keep their separators.
std::string CanonicalDigits(std::string n) {
  n.erase(std::remove(n.begin(), n.end(), ','), n.end());
  if (n.find_first_of("-/:") != std::string::npos) return n;
  if (n.find('.') != std::string::npos) {
    while (!n.empty() && n.back() == '0') n.pop_back();
    if (!n.empty() && n.back() == '.') n.pop_back();
  }
  const size_t nz = n.find_first_not_of('0');
  if (nz == std::string::npos) return "0";
  return n[nz] == '.' ? n.substr(nz - 1) : n.substr(nz);
}

std::vector<Token> Tokenize(const std::string& s) {
  std::vector<Token> out;
  bool gap = true;
  size_t i = 0;
  auto cp_at = [&](size_t at, uint32_t* cp) -> size_t {
    utf8proc_int32_t c = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + at),
                                    static_cast<utf8proc_ssize_t>(s.size() - at), &c);
    *cp = n > 0 ? static_cast<uint32_t>(c) : 0xFFFD;
    return n > 0 ? static_cast<size_t>(n) : 1;
  };
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t len = cp_at(i, &cp);
    if (cp < 128 && std::isdigit(static_cast<int>(cp))) {
      // Digits with inner separators: 1,299.00  2024-03-05  10:30  11.11
      std::string n;
      size_t j = i;
      while (j < s.size()) {
        const char c = s[j];
        if (std::isdigit(static_cast<unsigned char>(c))) {
          n += c;
          ++j;
        } else if ((c == '.' || c == ',' || c == '-' || c == '/' || c == ':') && j + 1 < s.size() &&
                   std::isdigit(static_cast<unsigned char>(s[j + 1])) && !n.empty()) {
          n += c;
          ++j;
        } else {
          break;
        }
      }
      out.push_back({TokenKind::kNumber, CanonicalDigits(n), 0, gap, false, i, j});
      gap = false;
      i = j;
      continue;
    }
    if (IsHan(cp)) {
      out.push_back({TokenKind::kHan, s.substr(i, len), cp, gap, false, i, i + len});
      gap = false;
      i += len;
      continue;
    }
    if (IsLetter(cp)) {
      std::string w;
      size_t j = i;
      while (j < s.size()) {
        uint32_t c = 0;
        const size_t l = cp_at(j, &c);
        if (IsLetter(c) && !IsHan(c)) {
          w.append(s, j, l);
          j += l;
        } else if ((c == '\'' || c == 0x2019) && !w.empty() && j + l < s.size() &&
                   std::isalpha(static_cast<unsigned char>(s[j + l]))) {
          w += '\'';  // don't, can't, item's
          j += l;
        } else {
          break;
        }
      }
      out.push_back({TokenKind::kWord, w, 0, gap, false, i, j});
      gap = false;
      i = j;
      continue;
    }
    gap = true;
    i += len;
  }
  return out;
}

}  // namespace frugal::text
