// The numbers of a text: the one reader of quantities for the whole tree. The semantic cache's
// verifier reads a query's numbers to refuse a hit between questions about other quantities
// (cache/text_signals.h); the quantizer's numeric check reads a model's answers to compare them
// (quant/eval.h, docs/eval.md "Numbers"). Every notation: ASCII and full-width digits with
// thousands separators and decimals, percents and currency signs (the sign is not part of the
// number), Chinese numerals with 十 百 千 万 亿 (and 两, 〇, the financial forms), mixed forms
// (1.5万), dates. The tables behind it (numeral characters, measure words, number words) are
// data: data/lexicon/*.txt (text/lexicon.h).
//
// Two readings, because a question and an answer ask different things of a number:
//
// kAnswer (the quantizer): each number a plain decimal, in text order; the same value written
// differently compares equal, and nothing else is read.
//   Digits (ASCII, and full-width ０-９):
//   - a number is a run of digits, with thousands commas (a comma followed by exactly three
//     digits and then no further digit) and one decimal point followed by a digit:
//     "1,299.00" -> "1299", "$12.50" -> "12.5", "0.50" -> "0.5", "15%" -> "15";
//   - full-width digits read as ASCII; the full-width point "．" as "."; the full-width comma
//     "，" is a thousands comma only between full-width digits ("１，２９９" -> "1299"), since
//     it is also Chinese's ordinary comma ("12，300件" -> "12", "300");
//   - anything else separates numbers: "#A-48213-77" -> "48213", "77"; "2024-03-05" -> "2024",
//     "3", "5"; "10:30" -> "10", "30"; "1,2" -> "1", "2"; signs are not part of a number;
//   - a multiplier right after the digits multiplies: 十 百 千 万 亿 and their combinations
//     ("1.5万" -> "15000", "2千" -> "2000", "3亿" -> "300000000", "3千万" -> "30000000"),
//     and "1万2千" -> "12000"; but 千 before 克 米 瓦 卡 is "kilo": "2千克" -> "2".
//   Chinese numerals (零〇一二两三四五六七八九十百千万亿, the financial forms 壹贰叁肆伍陆柒捌玖拾
//   佰仟, and 萬 億):
//   - by their value: "三百" -> "300", "两千五百" -> "2500", "一千零五" -> "1005", "十五" -> "15",
//     "二点五" -> "2.5", "一点五万" -> "15000"; the shortened spoken form "两千五" -> "2500",
//     "三万五" -> "35000";
//   - digit by digit when there is no multiplier, only for years, codes and discounts: with a
//     zero ("二〇二六" -> "2026") or before 年 or 折 ("一九九八年" -> "1998", "八五折" -> "85");
//   - a percentage is its number, as "10%" is: "百分之十" -> "10", "百分之零点五" -> "0.5",
//     "百分之百" -> "100";
//   - yuan with jiao and fen are one amount: "三元五角" -> "3.5", "12元3角5分" -> "12.35".
//   What is not read as a number, because Chinese words are made of these characters:
//   - one numeral character alone, unless a measure word or unit follows (三件, 两天, 五元,
//     七折, 一个, 十分钟, 三点) or 第 precedes it (第一): so not 一些, 一起, 一定, 统一, 十分
//     (very), 四川, 三星; not 一点 ("a little"; 一点半 and 一点钟 are times);
//   - a weekday: 周一, 星期三, 礼拜五;
//   - a numeral that starts with 百 千 万 or 亿 unless money, people or items follow (百万元 is
//     read): so not 千万 ("by all means"), 万一 ("in case"), 百度;
//   - approximations: adjacent digits without a zero (三四个, 七八天), and numerals after 几 or
//     数 (几十, 数百), or multipliers after 多 余 (50多万 is "50");
//   - a lone 零 before another character (零件, 零售); 零 alone reads "0" (库存为零。).
//
// kQuery (the cache): the text is read after NFKC with case folding (text/tokens.h), and each
// number keeps what distinguishes one question from another:
//   - digits keep their inner separators when they are a date or a time ("2024-03-05",
//     "10:30"); thousands commas go ("1,299.00" -> "1299", "24.90" -> "24.9");
//   - Chinese numerals by value (三百 300, 两千五 2500, 1.5万 15000, 十一 11, 一百零五 105);
//     a lone 一 / 两 / 二 only before a measure character (一件, 两天), and words made of numeral
//     characters (一下, 一起, 万一, 十分) are not numbers; the financial forms stay text;
//   - English number words (two, twenty five, three hundred; "one" not as a pronoun: which
//     one), ordinals (first, the 2nd; "second" only where it cannot be the time unit);
//   - dates as "d<month>/<day>": 11月11日, 双十一, May 3, 3 May, the 30th of November, 11/11;
//     a number with two readings (11.11 as a price or as 11/11) gets the other as `alt`.
//
// Thread safety: pure functions over immutable tables.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace frugal::text {

enum class NumberReading {
  kAnswer,  // a model's answer: plain decimals (the quantizer's numeric check)
  kQuery,   // a user's question: values, dates and alternative readings (the cache's verifier)
};

struct Number {
  std::string value;  // "1299", "24.9", "15000"; kQuery also "2024-03-05", "d11/11"
  std::string alt;    // kQuery: "" or the other reading ("11.11" -> "d11/11"); kAnswer: ""
  // What the number was read from, in bytes: of `text` (kAnswer) or of NormalizeText(text)
  // (kQuery, text/tokens.h).
  size_t begin = 0, end = 0;
  // kQuery: the tokens the number consumed (a date's 月 and 日, an ordinal's "th"), as byte
  // ranges of NormalizeText(text): one run, except where a month name follows digits and
  // Chinese multipliers ("3千万 march" reads as March 3 and consumes "3" and "march" only; kept
  // as the cache has always read it).
  std::vector<std::pair<size_t, size_t>> consumed;
};

std::vector<Number> ExtractNumbers(std::string_view text, NumberReading reading);

// The values alone, in order.
std::vector<std::string> NumberValues(const std::vector<Number>& numbers);

}  // namespace frugal::text
