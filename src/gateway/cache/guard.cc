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
    "couldn't", "mustn't", "unable", "fail", "failed", "fails", "non", "unavailable", "invalid",
    "ineligible", "nonrefundable", "nontransferable", "unpaid", "undelivered", "unused"};
// Phrases that negate as a whole.
constexpr const char* kNegationPhrases[] = {"out of stock", "sold out", "out-of-stock"};

constexpr const char* kStopwords[] = {
    "the", "and", "for", "you", "your", "are", "was", "were", "can", "could", "would", "will",
    "does", "did", "how", "what", "when", "where", "why", "which", "who", "whom", "this", "that",
    "these", "those", "with", "from", "about", "into", "onto", "please", "hello", "hey",
    "thanks", "thank", "tell", "know", "want", "need", "like", "get", "there", "any", "some",
    "much", "many", "have", "has", "had", "its", "our", "ours", "mine", "yours", "just", "also",
    "still", "yet", "then", "than", "too", "very", "really", "kindly", "help", "question",
    "wondering", "wonder", "let", "may", "might", "should", "shall", "must", "is", "it"};

bool IsStopword(const std::string& w) {
  for (const char* s : kStopwords) {
    if (w == s) return true;
  }
  return false;
}

// Lower-case ASCII words of 3+ characters that are not stopwords or negations.
std::vector<std::string> ContentWords(std::string_view text) {
  std::vector<std::string> out;
  std::string w;
  auto flush = [&] {
    bool negation = false;
    for (const char* n : kNegationWords) negation |= w == n;
    if (w.size() >= 3 && !IsStopword(w) && !negation) out.push_back(w);
    w.clear();
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) && u < 128) {
      w += static_cast<char>(std::tolower(u));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Two spellings of one word: a typo (edit distance <= 2 for longer words) or an inflection
// (one a prefix of the other, sharing at least 4 letters: refund / refunds / refunded).
bool SameWord(const std::string& a, const std::string& b) {
  const size_t common = std::min(a.size(), b.size());
  if (common >= 4 && a.compare(0, common, b, 0, common) == 0) return true;
  const size_t limit = common >= 6 ? 2 : 1;
  return EditDistance(a, b) <= limit;
}

// Words of `a` with no spelling of them in `b`.
std::vector<std::string> Unmatched(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& w : a) {
    bool found = false;
    for (const auto& v : b) found |= SameWord(w, v);
    if (!found) out.push_back(w);
  }
  return out;
}

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
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* p : kNegationPhrases) n += CountOccurrences(lower, p);
  // Chinese: negation characters, minus those inside non-negating words.
  for (const char* z : kZhNegations) n += CountOccurrences(text, z);
  for (const char* z : kZhNotNegating) n -= CountOccurrences(text, z);
  return n;
}

bool NumberNegationGuard::Substituted(std::string_view a, std::string_view b) {
  const auto wa = ContentWords(a), wb = ContentWords(b);
  return !Unmatched(wa, wb).empty() && !Unmatched(wb, wa).empty();
}

bool NumberNegationGuard::Accept(std::string_view query, std::string_view cached_query) const {
  if (Numbers(query) != Numbers(cached_query)) return false;
  if ((Negations(query) % 2) != (Negations(cached_query) % 2)) return false;
  return !Substituted(query, cached_query);
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
    const bool in_number = i > 0 && i + 1 < text.size() && IsDigit(text[i - 1]) && IsDigit(text[i + 1]);
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
