#include "gateway/cache/guard.h"

#include <algorithm>
#include <cctype>

namespace frugal::cache {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// English words that negate (lower case, whole words).
constexpr const char* kNegationWords[] = {
    "not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "without",
    "cannot", "cant", "can't", "won't", "wont", "don't", "dont", "doesn't", "doesnt", "didn't",
    "didnt", "isn't", "isnt", "aren't", "arent", "wasn't", "wasnt", "weren't", "werent",
    "haven't", "havent", "hasn't", "hasnt", "hadn't", "hadnt", "shouldn't", "wouldn't",
    "couldn't", "mustn't", "unable", "fail", "failed", "fails"};

// Chinese negation characters and words, and common words that contain them without negating.
constexpr const char* kZhNegations[] = {"不", "没", "未", "无", "别", "非", "勿", "莫"};
constexpr const char* kZhNotNegating[] = {"不错", "不客气", "不好意思", "非常", "无论", "不仅", "别人", "差不多", "无线", "别的"};

int CountOccurrences(std::string_view text, std::string_view word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + word.size())) ++n;
  return n;
}

}  // namespace

std::vector<std::string> NumberNegationGuard::Numbers(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (!IsDigit(text[i])) {
      ++i;
      continue;
    }
    // A run of digits with inner separators (1,299.00  2024-03-05  10:30  A-10432 keeps 10432).
    std::string n;
    while (i < text.size()) {
      const char c = text[i];
      if (IsDigit(c)) {
        n += c;
        ++i;
      } else if ((c == '.' || c == ',' || c == '-' || c == '/' || c == ':') && i + 1 < text.size() && IsDigit(text[i + 1])) {
        n += c == ',' ? '\0' : c;  // thousands separators drop out
        ++i;
      } else {
        break;
      }
    }
    n.erase(std::remove(n.begin(), n.end(), '\0'), n.end());
    // 24.90 == 24.9; 05 == 5 in a lone number.
    if (n.find_first_of("-/:") == std::string::npos) {
      if (n.find('.') != std::string::npos) {
        while (!n.empty() && n.back() == '0') n.pop_back();
        if (!n.empty() && n.back() == '.') n.pop_back();
      }
      const size_t nz = n.find_first_not_of('0');
      n = nz == std::string::npos ? "0" : (n[nz] == '.' ? n.substr(nz - 1) : n.substr(nz));
    }
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int NumberNegationGuard::Negations(std::string_view text) {
  int n = 0;
  // English: lower-cased words of letters and apostrophes.
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    for (const char* w : kNegationWords) {
      if (word == w) {
        ++n;
        break;
      }
    }
    if (word.size() > 3 && word.ends_with("n't")) {
      bool listed = false;
      for (const char* w : kNegationWords) listed |= word == w;
      if (!listed) ++n;
    }
    word.clear();
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u) || c == '\'') {
      word += static_cast<char>(std::tolower(u));
    } else {
      flush();
    }
  }
  flush();
  // Chinese: negation characters, minus those inside non-negating words.
  for (const char* z : kZhNegations) n += CountOccurrences(text, z);
  for (const char* z : kZhNotNegating) n -= CountOccurrences(text, z);
  return n;
}

bool NumberNegationGuard::Accept(std::string_view query, std::string_view cached_query) const {
  if (Numbers(query) != Numbers(cached_query)) return false;
  return (Negations(query) % 2) == (Negations(cached_query) % 2);
}

}  // namespace frugal::cache
