// Hit verification: a candidate hit (similarity over the threshold) is checked against the
// query before it is served, because embeddings place "price of item 1299" and "price of item
// 1300", or "can I return it" and "can I not return it", next to each other.
//
// Thread safety: Accept is const and may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::cache {

class HitVerifier {
 public:
  virtual ~HitVerifier() = default;
  // True when the answer cached for `cached_query` may answer `query`.
  virtual bool Accept(std::string_view query, std::string_view cached_query) const = 0;
  virtual const char* name() const = 0;
};

// The default guard rejects a candidate when the two queries differ in
// - their numbers (digit runs with decimal points and separators: prices, ids, quantities,
//   dates; compared as multisets);
// - negation (English not/no/never/n't/non-/un-available/out of stock..., Chinese
//   不/没/未/无/别/非 outside common non-negating words), compared as the parity of negations;
// - a substituted content word: each side has a word of 3+ letters (not a stopword) that the
//   other lacks and that is not a misspelling of one there ("wool sweater" / "cotton sweater"),
//   while words only added on one side ("hi, could you tell me ...") are fine.
class NumberNegationGuard : public HitVerifier {
 public:
  bool Accept(std::string_view query, std::string_view cached_query) const override;
  const char* name() const override { return "numbers+negation+substitution"; }

  // Exposed for tests: the normalised numbers of a text, sorted, and its negation count.
  static std::vector<std::string> Numbers(std::string_view text);
  static int Negations(std::string_view text);
  static bool Substituted(std::string_view a, std::string_view b);
};

// Lower case, without spaces and punctuation (ASCII and CJK): for exact-text comparisons.
std::string CanonicalText(std::string_view text);

}  // namespace frugal::cache
