// What the hit verifier reads in a query besides its embedding: the quantities it names, its
// negations, the opposites it uses (subscribe / unsubscribe, 订阅 / 退订) and its content words,
// in English and Chinese. Every function is linear in the text and touches at most
// kMaxSignalBytes of it; a longer text is reported as such (`too_long`) and never analysed.
//
// - Text: NFKC with case folding (full-width digits and letters become ASCII), invalid UTF-8
//   replaced.
// - Numbers: ASCII digits with their separators (1,299.00 = 1299; 24.90 = 24.9), Chinese
//   numerals (三百 = 300, 两千五 = 2500, 1.5万 = 15000, 十一 = 11), English number words (two,
//   twenty five, three hundred), dates (11月11日, 双十一, May 3: all month/day), each compared as
//   a value; a number with two readings (11.11 as a price or as 11/11) matches either.
// - Negation by word: not, no, never, n't, without, non-, unavailable, out of stock, ...;
//   不 没 未 无法 非 别 勿 as words, not inside 不错 / 非常 / 无理由 / 别的, and never in an
//   A-not-A question (是不是, 能不能, 可不可以, 有没有, 支不支持).
// - Opposites from a lexicon of pairs (kept apart: subscribe/unsubscribe, 增加/减少).
// - Content: words that are not function words or fillers, in a canonical form (a synonym
//   lexicon maps delivery -> shipping, 物流 -> 快递; light stemming: refunds -> refund); Chinese
//   content by character (most Chinese words are two characters, and a query segmented either
//   way shares its characters).
//
// Thread safety: pure functions over immutable tables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::cache {

// Texts longer than this (bytes) are not analysed: the verifier refuses them.
inline constexpr size_t kMaxSignalBytes = 16 * 1024;

// A quantity as it compares: its value, and another reading when the notation has two.
struct NumberValue {
  std::string value;  // canonical: "1299", "24.9", "15000", "d11/11" (a month/day date)
  std::string alt;    // "" or the other reading ("11.11" -> "d11/11")
  // A lone 一 before a measure word of things (一张, 一份, 一笔, 一个: not of time or money): in
  // Chinese mostly the article "a", not a count. Against a text without any number it does not
  // make the numbers differ (我想办一张信用卡 / 怎么申请信用卡); against another number it
  // is 1 (买一件 / 买两件).
  bool indefinite = false;
  bool operator==(const NumberValue&) const = default;
};

// One content unit in text order: a canonical English word or one Chinese character.
struct ContentUnit {
  std::string text;     // canonical: what matches
  std::string surface;  // as written (lower case, unstemmed): what a misspelling is compared with
  bool han = false;
  int index = 0;  // position among the text's tokens (adjacent units form a span)
};

struct TextSignals {
  bool too_long = false;
  bool has_han = false;
  std::string normalized;            // NFKC, case-folded
  std::vector<NumberValue> numbers;  // in text order
  int negations = 0;
  std::vector<int> opposites;          // lexicon pair ids * 2 + side, sorted
  std::vector<std::string> questions;  // canonical question words (how, when, howmuch, ...), sorted
  std::vector<ContentUnit> content;
  int tokens = 0;  // words + Chinese characters
};

TextSignals AnalyzeText(std::string_view text);

// How two analysed texts differ.
struct PairDiff {
  bool too_long = false;
  bool numbers_differ = false;
  bool negation_differs = false;
  bool opposite = false;            // one says X where the other says its opposite
  bool question_differs = false;    // how vs when, how much vs how long (what fits any)
  bool question_one_sided = false;  // a wh-question (how, when, ...) against a yes/no one
  // Content of one side that the other lacks (after synonyms, stems and typos), as spans of
  // adjacent units: "for shoes" -> {"shoe"}; 可以换尺码吗 / 可以换颜色吗 -> {"尺码"} / {"颜色"}.
  std::vector<std::string> only_a, only_b;
  int content_a = 0, content_b = 0;      // content units of each side
  int unmatched_a = 0, unmatched_b = 0;  // of which unmatched
  int typo_matches = 0;                  // units matched only as a misspelling
};

PairDiff Compare(const TextSignals& a, const TextSignals& b);

// Lower case, without spaces and punctuation (ASCII and CJK): for exact-text comparisons.
std::string CanonicalText(std::string_view text);

}  // namespace frugal::cache
