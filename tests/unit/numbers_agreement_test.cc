// The two former readers of numbers, now one module (text/numbers.h): the quantizer's numeric
// check (the answer reading) and the cache's verifier (the query reading, through
// cache::AnalyzeText) read the same quantities from the same text. The hard cases of both old
// test files are here; where the readings differ by design or by a known quirk, the table says
// what each reads, so a change to either shows up here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cache/text_signals.h"
#include "text/numbers.h"
#include "text/tokens.h"

namespace frugal::text {
namespace {

using Strings = std::vector<std::string>;

Strings AnswerPath(std::string_view text) {
  return NumberValues(ExtractNumbers(text, NumberReading::kAnswer));
}

// What the cache's verifier compares: the values of cache::AnalyzeText.
Strings CachePath(std::string_view text) {
  Strings out;
  for (const auto& n : cache::AnalyzeText(text).numbers) out.push_back(n.value);
  return out;
}

TEST(NumbersAgreementTest, BothPathsReadTheSameQuantities) {
  for (const char* text : {
           "一万二千",     "1.2万",       "3,000",        "３０",
           "50%",          "￥199",       "$1,299.00",    "１，２９９",
           "０.５",        "1.5万元",     "两千五百元",   "三百元",
           "一千零五",     "十一件",      "三万五",       "两天",
           "十分钟",       "库存为零。",  "千万",         "一起",
           "-5 degrees",   "3到5天",      "订单号 48213", "price 1299",
           "共3件",        "12.5 or 125", "１２．５０",   "总价三百二十五元",
           "一万零五百元", "两千五",
       }) {
    EXPECT_EQ(CachePath(text), AnswerPath(text)) << text;
  }
  // Signs are not part of a number on either path.
  EXPECT_EQ(AnswerPath("-5"), Strings{"5"});
  EXPECT_EQ(CachePath("-5"), Strings{"5"});
}

TEST(NumbersAgreementTest, TheCachePathIsTheQueryReading) {
  for (const char* text : {"二〇二四年5月3日", "11.11", "双十一", "May 3", "twenty five dollars",
                           "3-5天", "1万2千", "百分之十", "the 30th of November"}) {
    const std::vector<Number> q = ExtractNumbers(text, NumberReading::kQuery);
    const cache::TextSignals s = cache::AnalyzeText(text);
    ASSERT_EQ(q.size(), s.numbers.size()) << text;
    for (size_t i = 0; i < q.size(); ++i) {
      EXPECT_EQ(q[i].value, s.numbers[i].value) << text;
      EXPECT_EQ(q[i].alt, s.numbers[i].alt) << text;
    }
  }
}

// Where the readings part, each side as it reads today. A question keeps dates, times and ranges
// whole (11月11日 and 11.11 may be one date), an answer is compared digit run by digit run; the
// rest are the query reading's quirks, kept so the cache decides as it always has.
TEST(NumbersAgreementTest, KnownDifferencesBetweenTheReadings) {
  struct Case {
    const char* text;
    Strings answer, query;
  };
  for (const Case& c : std::vector<Case>{
           // Dates, times and ranges: one value in a question.
           {"5月3日", {"5", "3"}, {"d5/3"}},
           {"2024-03-05", {"2024", "3", "5"}, {"2024-03-05"}},
           {"10:30", {"10", "30"}, {"10:30"}},
           {"3-5天", {"3", "5"}, {"3-5"}},
           {"双十一", {"11"}, {"d11/11"}},
           // English number words are read in questions only.
           {"twenty five", {}, {"25"}},
           // The answer reading's Chinese comma rule, amounts and formal numerals.
           {"12，300件", {"12", "300"}, {"12300"}},
           {"三元五角", {"3.5"}, {"3", "5"}},
           {"壹佰元", {"100"}, {}},
           {"第一", {"1"}, {}},
           // The query reading's quirks (candidates for a later, deliberate change).
           {"二〇二四年5月3日", {"2024", "5", "3"}, {"24", "d5/3"}},
           {"1万2千", {"12000"}, {"10000", "2000"}},
           {"2千克", {"2"}, {"2000"}},
           {"一点五万", {"15000"}, {"50000"}},
           {"二点五", {"2.5"}, {"2", "5"}},
           {"百分之十", {"10"}, {"100", "10"}},
           {"七八天", {}, {"78"}},
       }) {
    EXPECT_EQ(AnswerPath(c.text), c.answer) << c.text;
    EXPECT_EQ(CachePath(c.text), c.query) << c.text;
  }
  // Where a value has two readings, the question keeps the other.
  const std::vector<Number> q = ExtractNumbers("11.11", NumberReading::kQuery);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].value, "11.11");
  EXPECT_EQ(q[0].alt, "d11/11");
  EXPECT_EQ(AnswerPath("11.11"), Strings{"11.11"});
}

TEST(NumbersAgreementTest, SpansPointAtTheNumber) {
  const std::string answer = "总价 1,299元，共３件";
  const std::vector<Number> a = ExtractNumbers(answer, NumberReading::kAnswer);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(answer.substr(a[0].begin, a[0].end - a[0].begin), "1,299");
  EXPECT_EQ(answer.substr(a[1].begin, a[1].end - a[1].begin), "３");
  // A question's spans are in its normalized text, and cover what the number consumed.
  const std::string query = "the 30th of November";
  const std::vector<Number> q = ExtractNumbers(query, NumberReading::kQuery);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].value, "d11/30");
  const std::string norm = NormalizeText(query);
  EXPECT_EQ(norm.substr(q[0].begin, q[0].end - q[0].begin), "30th of november");
  ASSERT_EQ(q[0].consumed.size(), 1u);
}

}  // namespace
}  // namespace frugal::text
