// frugal eval's model-free parts: the gate grammar and checker, number extraction for numeric
// fidelity, the KL divergence math (exact and through the stored half-precision form), the
// percentile, and the probes file parser.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "quant/eval.h"
#include "quant/gate.h"

namespace frugal {
namespace {

using Strings = std::vector<std::string>;

// What the numeric check compares: the answer reading's values (text/numbers.h).
Strings AnswerNumbers(std::string_view text) {
  return text::NumberValues(text::ExtractNumbers(text, text::NumberReading::kAnswer));
}

// ---------------------------------------------------------------------------------------------
// Gate grammar

TEST(GateParseTest, ParsesTheIssueExample) {
  auto g = ParseGate("ppl<+3%,kld<0.05,numeric>=0.98");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->clauses.size(), 3u);
  EXPECT_EQ(g->clauses[0].metric, GateMetric::kPpl);
  EXPECT_EQ(g->clauses[0].cmp, GateCmp::kLt);
  EXPECT_EQ(g->clauses[0].kind, GateValueKind::kPercent);
  EXPECT_DOUBLE_EQ(g->clauses[0].value, 3);
  EXPECT_EQ(g->clauses[0].text, "ppl<+3%");
  EXPECT_EQ(g->clauses[1].metric, GateMetric::kKldMean);
  EXPECT_EQ(g->clauses[1].kind, GateValueKind::kAbsolute);
  EXPECT_DOUBLE_EQ(g->clauses[1].value, 0.05);
  EXPECT_EQ(g->clauses[2].metric, GateMetric::kNumeric);
  EXPECT_EQ(g->clauses[2].cmp, GateCmp::kGe);
  EXPECT_DOUBLE_EQ(g->clauses[2].value, 0.98);
  EXPECT_TRUE(g->uses_numeric());
}

TEST(GateParseTest, AllMetricsComparatorsAndValueForms) {
  auto g = ParseGate(
      " ppl < +0.5 , ppl<=21.0,ppl > +1 %, kld_mean<=5e-2, kld_p99<0.5 ,top1>=0.9,"
      "top1_agreement>0.5,numeric_fidelity>=1,kld>0");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->clauses.size(), 9u);
  EXPECT_EQ(g->clauses[0].kind, GateValueKind::kDelta);
  EXPECT_DOUBLE_EQ(g->clauses[0].value, 0.5);
  EXPECT_EQ(g->clauses[0].text, "ppl < +0.5");
  EXPECT_EQ(g->clauses[1].cmp, GateCmp::kLe);
  EXPECT_EQ(g->clauses[1].kind, GateValueKind::kAbsolute);
  EXPECT_DOUBLE_EQ(g->clauses[1].value, 21.0);
  EXPECT_EQ(g->clauses[2].cmp, GateCmp::kGt);
  EXPECT_EQ(g->clauses[2].kind, GateValueKind::kPercent);
  EXPECT_DOUBLE_EQ(g->clauses[2].value, 1);
  EXPECT_EQ(g->clauses[3].metric, GateMetric::kKldMean);
  EXPECT_DOUBLE_EQ(g->clauses[3].value, 0.05);
  EXPECT_EQ(g->clauses[4].metric, GateMetric::kKldP99);
  EXPECT_EQ(g->clauses[5].metric, GateMetric::kTop1);
  EXPECT_EQ(g->clauses[6].metric, GateMetric::kTop1);
  EXPECT_EQ(g->clauses[6].cmp, GateCmp::kGt);
  EXPECT_EQ(g->clauses[7].metric, GateMetric::kNumeric);
  EXPECT_EQ(g->clauses[8].metric, GateMetric::kKldMean);
  EXPECT_FALSE(ParseGate("ppl<+3%")->uses_numeric());
}

TEST(GateParseTest, ErrorsNameTheBadClause) {
  struct Case {
    const char* spec;
    const char* clause;  // must appear in the message
    const char* why;     // and this
  };
  const Case cases[] = {
      {"ppl<+3%,kld=0.05", "kld=0.05", "comparator"},
      {"ppl<+3%,perplexity<20", "perplexity<20", "unknown metric"},
      {"kld<+0.01", "kld<+0.01", "ppl only"},
      {"kld<5%", "kld<5%", "ppl only"},
      {"ppl<3%", "ppl<3%", "+3%"},
      {"top1>=90", "top1>=90", "[0, 1]"},
      {"numeric>=1.5", "numeric>=1.5", "[0, 1]"},
      {"kld<-1", "kld<-1", "non-negative"},
      {"kld<abc", "kld<abc", "not a non-negative number"},
      {"ppl<+3%%", "ppl<+3%%", "not a non-negative number"},
      {"kld<nan", "kld<nan", "finite"},
      {"kld<inf", "kld<inf", "finite"},
      {"kld<0.05x", "kld<0.05x", "not a non-negative number"},
      {"ppl<", "ppl<", "expected a number"},
      {"ppl<+", "ppl<+", "expected a number"},
      {"ppl", "ppl", "comparator"},
      {"<3", "<3", "metric"},
      {"kld<0.05,,top1>0.9", "clause 2", "empty"},
      {"kld<0.05,", "clause 2", "empty"},
      {"=>0.5", "=>0.5", "metric"},
      {"kld=>0.5", "kld=>0.5", "comparator"},
  };
  for (const Case& c : cases) {
    auto g = ParseGate(c.spec);
    ASSERT_FALSE(g.ok()) << c.spec;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(g.status().message().find(c.clause), std::string::npos)
        << c.spec << ": " << g.status().message();
    EXPECT_NE(g.status().message().find(c.why), std::string::npos)
        << c.spec << ": " << g.status().message();
  }
  EXPECT_FALSE(ParseGate("").ok());
  EXPECT_FALSE(ParseGate("  ").ok());
}

EvalReport Report() {
  EvalReport r;
  r.ppl_ref = 10;
  r.ppl = 10.4;  // +0.4, +4 %
  r.kld_mean = 0.04;
  r.kld_p99 = 0.2;
  r.top1_agreement = 0.95;
  r.probes = 50;
  r.probes_matched = 49;
  r.numeric_fidelity = 0.98;
  return r;
}

Strings Failed(const EvalReport& r, const char* spec) {
  auto g = ParseGate(spec);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().message();
  Strings out;
  if (!g.ok()) return out;
  for (const auto& f : CheckGate(r, *g)) out.push_back(f.clause.text);
  return out;
}

TEST(GateCheckTest, ReturnsTheFailedClausesInOrder) {
  const EvalReport r = Report();
  EXPECT_EQ(Failed(r, "ppl<+5%,ppl<+0.5,ppl<10.5,kld<0.05,kld_p99<0.5,top1>=0.9,numeric>=0.98"),
            Strings{});
  EXPECT_EQ(
      Failed(r, "ppl<+3%,kld<0.05,kld_p99<0.1,top1>=0.96,numeric>0.98,ppl<+0.3,ppl<10.3"),
      (Strings{"ppl<+3%", "kld_p99<0.1", "top1>=0.96", "numeric>0.98", "ppl<+0.3", "ppl<10.3"}));
}

TEST(GateCheckTest, MeasuredValuesAreInTheClausesTerms) {
  const EvalReport r = Report();
  auto g = ParseGate("ppl<+3%,ppl<+0.3,ppl<10,kld_p99<0.1");
  ASSERT_TRUE(g.ok());
  auto f = CheckGate(r, *g);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_NEAR(f[0].measured, 4.0, 1e-9);   // percent over ppl_ref
  EXPECT_NEAR(f[1].measured, 0.4, 1e-9);   // delta
  EXPECT_NEAR(f[2].measured, 10.4, 1e-9);  // ppl itself
  EXPECT_NEAR(f[3].measured, 0.2, 1e-12);
  EXPECT_NE(f[0].message.find("ppl<+3%"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("+4.000%"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("10.0000"), std::string::npos) << f[0].message;
  EXPECT_NE(f[3].message.find("kld_p99 0.2"), std::string::npos) << f[3].message;
}

TEST(GateCheckTest, BoundariesAndNaN) {
  EvalReport r = Report();
  r.ppl = r.ppl_ref;
  EXPECT_EQ(Failed(r, "ppl<=+0%,ppl<=+0"), Strings{});
  EXPECT_EQ(Failed(r, "ppl<+0%,ppl<+0"), (Strings{"ppl<+0%", "ppl<+0"}));
  r.top1_agreement = 1;
  EXPECT_EQ(Failed(r, "top1>=1,top1>1"), Strings{"top1>1"});
  // No probes: numeric is not measured, so any clause on it fails (with n/a in the message).
  r.numeric_fidelity = std::nan("");
  r.probes = r.probes_matched = 0;
  auto g = ParseGate("numeric>=0,kld<1");
  ASSERT_TRUE(g.ok());
  auto f = CheckGate(r, *g);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(std::isnan(f[0].measured));
  EXPECT_NE(f[0].message.find("n/a"), std::string::npos) << f[0].message;
}

// ---------------------------------------------------------------------------------------------
// Numbers

TEST(ExtractNumbersTest, NormalisesHowAValueIsWritten) {
  EXPECT_EQ(AnswerNumbers("The total is $1,299.00 for 3 items."), (Strings{"1299", "3"}));
  EXPECT_EQ(AnswerNumbers("$12.50"), Strings{"12.5"});
  EXPECT_EQ(AnswerNumbers("12.50"), AnswerNumbers("12.5"));
  EXPECT_EQ(AnswerNumbers("1,299.00"), AnswerNumbers("1299"));
  EXPECT_EQ(AnswerNumbers("USD 1299"), AnswerNumbers("$1,299"));
  EXPECT_EQ(AnswerNumbers("12,345,678.90 units"), Strings{"12345678.9"});
  EXPECT_EQ(AnswerNumbers("0.50"), Strings{"0.5"});
  EXPECT_EQ(AnswerNumbers("0.0 and 0"), (Strings{"0", "0"}));
  EXPECT_EQ(AnswerNumbers("007"), Strings{"7"});
  EXPECT_EQ(AnswerNumbers("3.0 kg"), Strings{"3"});
  EXPECT_EQ(AnswerNumbers("12.050"), Strings{"12.05"});
  EXPECT_EQ(AnswerNumbers("a 15% discount"), Strings{"15"});
  EXPECT_EQ(AnswerNumbers("It costs 42."), Strings{"42"});
  EXPECT_EQ(AnswerNumbers("no digits here"), Strings{});
  EXPECT_EQ(AnswerNumbers(""), Strings{});
}

TEST(ExtractNumbersTest, IdsDatesAndTimesSplitIntoDigitRuns) {
  EXPECT_EQ(AnswerNumbers("Order #A-48213-77 has shipped"), (Strings{"48213", "77"}));
  EXPECT_EQ(AnswerNumbers("on 2024-03-05 at 10:30"), (Strings{"2024", "3", "5", "10", "30"}));
  EXPECT_EQ(AnswerNumbers("2024-03-05"), AnswerNumbers("2024/3/5"));
  EXPECT_EQ(AnswerNumbers("5/12/2024"), (Strings{"5", "12", "2024"}));
  EXPECT_EQ(AnswerNumbers("-5 degrees"), Strings{"5"});
  EXPECT_EQ(AnswerNumbers("1,2,3"), (Strings{"1", "2", "3"}));  // a list, not thousands
  EXPECT_EQ(AnswerNumbers("1,2345"), (Strings{"1", "2345"}));
  EXPECT_EQ(AnswerNumbers("1, 299"), (Strings{"1", "299"}));
  EXPECT_EQ(AnswerNumbers("version 1.2.3"), (Strings{"1.2", "3"}));
  EXPECT_EQ(AnswerNumbers("SKU-00412"), Strings{"412"});
}

TEST(ExtractNumbersTest, ChineseAndFullWidthDigits) {
  EXPECT_EQ(AnswerNumbers("订单号 48213，总价 1299元，共3件"), (Strings{"48213", "1299", "3"}));
  EXPECT_EQ(AnswerNumbers("价格是１２９９元"), Strings{"1299"});
  EXPECT_EQ(AnswerNumbers("１２．５０"), Strings{"12.5"});
  EXPECT_EQ(AnswerNumbers("2024年3月5日"), (Strings{"2024", "3", "5"}));
  EXPECT_EQ(AnswerNumbers("2024年3月5日"), AnswerNumbers("2024-03-05"));
}

TEST(ExtractNumbersTest, DifferentValuesDiffer) {
  EXPECT_NE(AnswerNumbers("item 1299"), AnswerNumbers("item 1300"));
  EXPECT_NE(AnswerNumbers("$12.5"), AnswerNumbers("$12.05"));
  EXPECT_NE(AnswerNumbers("12.5"), AnswerNumbers("125"));
  EXPECT_NE(AnswerNumbers("1,299"), AnswerNumbers("1.299"));
  EXPECT_NE(AnswerNumbers("#A-48213-77"), AnswerNumbers("#A-48213-78"));
  EXPECT_NE(AnswerNumbers("3 then 5"), AnswerNumbers("5 then 3"));         // order matters
  EXPECT_NE(AnswerNumbers("3 items"), AnswerNumbers("3 items, 3 boxes"));  // so does the count
}

// ---------------------------------------------------------------------------------------------
// KL divergence

std::vector<float> Logits(std::initializer_list<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::vector<uint16_t> Stored(const std::vector<float>& logits) {
  std::vector<uint16_t> out(logits.size());
  LogSoftmaxToF16(logits, out);
  return out;
}

TEST(EvalKlTest, IdenticalDistributionsGiveExactlyZero) {
  const std::vector<float> l = {1.5f, -2.0f, 0.25f, 3.0f, -7.5f};
  EXPECT_EQ(KlDivergence(l, l), 0.0);
  EXPECT_EQ(KlDivergenceF16(Stored(l), Stored(l)), 0.0);
  // Logits are defined up to a constant.
  std::vector<float> shifted = l;
  for (float& x : shifted) x += 11.0f;
  EXPECT_NEAR(KlDivergence(l, shifted), 0.0, 1e-12);
}

TEST(EvalKlTest, KnownTwoTokenValue) {
  // KL((0.5, 0.5) || (0.9, 0.1)) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1) = 0.5 ln(25/9)
  const double expected = 0.5 * std::log(25.0 / 9.0);
  const auto p = Logits({0.5, 0.5});
  const auto q = Logits({0.9, 0.1});
  EXPECT_NEAR(KlDivergence(p, q), expected, 1e-6);  // float logits: log(0.9) has float rounding
  EXPECT_NEAR(KlDivergenceF16(Stored(p), Stored(q)), expected, 1e-3);
  // Not symmetric: KL((0.9, 0.1) || (0.5, 0.5)) = 0.9 ln 1.8 + 0.1 ln 0.2
  const double reverse = 0.9 * std::log(1.8) + 0.1 * std::log(0.2);
  EXPECT_NEAR(KlDivergence(q, p), reverse, 1e-6);
  EXPECT_NEAR(KlDivergenceF16(Stored(q), Stored(p)), reverse, 1e-3);
}

TEST(EvalKlTest, ThreeTokenValueAndZeroProbabilities) {
  const auto p = Logits({0.7, 0.2, 0.1});
  const auto q = Logits({0.5, 0.3, 0.2});
  const double expected =
      0.7 * std::log(0.7 / 0.5) + 0.2 * std::log(0.2 / 0.3) + 0.1 * std::log(0.1 / 0.2);
  EXPECT_NEAR(KlDivergence(p, q), expected, 1e-6);
  EXPECT_NEAR(KlDivergenceF16(Stored(p), Stored(q)), expected, 1e-3);
  // A token the reference never produces contributes nothing, however likely under q.
  const std::vector<float> p0 = {0.0f, -INFINITY};
  const std::vector<float> q0 = {0.0f, 0.0f};
  EXPECT_NEAR(KlDivergence(p0, q0), std::log(2.0), 1e-12);
}

// The reference keeps its distributions as half-precision log-probabilities (200 MB instead of
// 400 MB for 2040 positions of a 49152-token vocabulary); on realistic logits the KL through that
// form must be close to the exact one.
TEST(EvalKlTest, KlF16CloseToExact) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> logit(0.0f, 3.0f), noise(0.0f, 1.0f);
  const size_t n = 49152;
  for (float noise_scale : {0.02f, 0.1f, 0.5f}) {
    for (float peak : {0.0f, 15.0f}) {  // flat-ish, and one token far ahead (a confident model)
      std::vector<float> p(n), q(n);
      for (size_t v = 0; v < n; ++v) {
        p[v] = logit(rng);
        q[v] = p[v] + noise_scale * noise(rng);
      }
      p[7] += peak;
      q[7] += peak;
      const double exact = KlDivergence(p, q);
      const double half = KlDivergenceF16(Stored(p), Stored(q));
      EXPECT_GT(exact, 0);
      // Measured: +0.7..3e-6 nats at KL 1.4e-4..5e-3, +4e-5 (0.03 %) at KL 0.14: a small
      // positive bias from the rounding noise on the tail's log-probabilities.
      EXPECT_NEAR(half, exact, 5e-6 + 2e-3 * exact) << "noise " << noise_scale << " peak " << peak;
    }
  }
}

TEST(EvalPercentileTest, NearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(PercentileNearestRank(v, 99), 99);
  EXPECT_EQ(PercentileNearestRank(v, 100), 100);
  EXPECT_EQ(PercentileNearestRank(v, 50), 50);
  EXPECT_EQ(PercentileNearestRank({1, 2, 3}, 99), 3);
  EXPECT_EQ(PercentileNearestRank({1, 2, 3, 4}, 50), 2);
  EXPECT_EQ(PercentileNearestRank({5}, 99), 5);
  EXPECT_TRUE(std::isnan(PercentileNearestRank({}, 99)));
}

// ---------------------------------------------------------------------------------------------
// Probes

TEST(EvalProbesTest, ParsesPromptsMessagesAndIds) {
  auto p = ParseProbes(
      "{\"id\": \"p1\", \"prompt\": \"Item 1299 costs $12.50. Price?\", \"answer\": \"12.50\"}\n"
      "\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
      "\"content\": \"2+2?\"}]}\r\n"
      "{\"id\": 7, \"prompt\": \"x\"}",
      "probes.jsonl");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].id, "p1");
  EXPECT_EQ((*p)[0].prompt, "Item 1299 costs $12.50. Price?");
  EXPECT_TRUE((*p)[0].messages.empty());
  EXPECT_EQ((*p)[1].id, "line 3");
  ASSERT_EQ((*p)[1].messages.size(), 2u);
  EXPECT_EQ((*p)[1].messages[1].role, "user");
  EXPECT_EQ((*p)[1].messages[1].content, "2+2?");
  EXPECT_EQ((*p)[2].id, "7");
}

TEST(EvalProbesTest, BadLinesNameFileAndLine) {
  struct Case {
    const char* text;
    const char* where;
    const char* why;
  };
  const Case cases[] = {
      {"{\"prompt\": \"a\"}\n{oops", "f.jsonl:2", "not valid JSON"},
      {"[1, 2]", "f.jsonl:1", "JSON object"},
      {"{\"prompt\": \"a\", \"messages\": []}", "f.jsonl:1", "exactly one"},
      {"{\"id\": \"x\"}", "f.jsonl:1", "exactly one"},
      {"{\"prompt\": \"\"}", "f.jsonl:1", "non-empty string"},
      {"{\"prompt\": 5}", "f.jsonl:1", "non-empty string"},
      {"{\"messages\": []}", "f.jsonl:1", "non-empty array"},
      {"{\"messages\": [{\"role\": \"user\"}]}", "f.jsonl:1", "role"},
      {"{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}", "f.jsonl:1", "unknown role"},
      {"{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"a\", \"prompt\": \"y\"}", "f.jsonl:2",
       "duplicate id"},
      {"{\"id\": 1.5, \"prompt\": \"x\"}", "f.jsonl:1", "\"id\""},
      {"", "f.jsonl", "no probes"},
      {"\n \n", "f.jsonl", "no probes"},
  };
  for (const Case& c : cases) {
    auto p = ParseProbes(c.text, "f.jsonl");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(c.where), std::string::npos)
        << c.text << ": " << p.status().message();
    EXPECT_NE(p.status().message().find(c.why), std::string::npos)
        << c.text << ": " << p.status().message();
  }
  auto missing = LoadProbes("/nonexistent/probes.jsonl");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/probes.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace frugal
