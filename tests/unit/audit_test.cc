// The cache audit's pieces with no proxy (gateway/audit.h): the comparison of two answers
// (numbers, then meaning through a bag-of-words embedder), the sampler, the audit's request body,
// the buffering Responder and the Wilson interval. tests/unit/proxy_test.cc runs an audit through
// the proxy with fake workers.
#include "gateway/audit.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/bow_embedder.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;

TEST(CompareAnswers, TheSameAnswerAgrees) {
  cache::BagOfWordsEmbedder e;
  const auto c =
      CompareAnswers("The capital of France is Paris.", "The capital of France is Paris.", e, 0.85);
  EXPECT_EQ(c.result, AuditResult::kAgree);
  ASSERT_TRUE(c.similarity);
  EXPECT_NEAR(*c.similarity, 1.0, 1e-5);
}

TEST(CompareAnswers, OtherNumbersDisagreeWithoutAnEmbedding) {
  cache::BagOfWordsEmbedder e;
  EXPECT_EQ(CompareAnswers("It costs 12.50 dollars.", "It costs 12.5 dollars and 3 cents.", e, 0.85)
                .result,
            AuditResult::kDisagreeNumbers);
  EXPECT_EQ(CompareAnswers("Mars has 2 moons.", "Mars has no moon.", e, 0.85).result,
            AuditResult::kDisagreeNumbers);
  EXPECT_EQ(e.calls.load(), 0);
}

TEST(CompareAnswers, TheSameNumbersInAnotherOrderAreTheSameNumbers) {
  cache::BagOfWordsEmbedder e;
  EXPECT_EQ(CompareAnswers("between 3 and 7", "between 7 and 3", e, 0.85).result,
            AuditResult::kAgree);
  // A multiset: a number said twice is not the same as said once.
  EXPECT_EQ(CompareAnswers("3 and 3", "3", e, 0.0).result, AuditResult::kDisagreeNumbers);
}

TEST(CompareAnswers, TheSameNumbersWithAnotherMeaningDisagreeOnMeaning) {
  cache::BagOfWordsEmbedder e;
  const auto c = CompareAnswers("Paris has about 2 million people.",
                                "Bananas ripen in 2 weeks on the shelf.", e, 0.85);
  EXPECT_EQ(c.result, AuditResult::kDisagreeMeaning);
  ASSERT_TRUE(c.similarity);
  EXPECT_LT(*c.similarity, 0.85);
  // The threshold decides: at 0 any answer with the same numbers agrees.
  EXPECT_EQ(CompareAnswers("Paris has about 2 million people.",
                           "Bananas ripen in 2 weeks on the shelf.", e, 0.0)
                .result,
            AuditResult::kAgree);
}

TEST(AuditSampler, RateZeroNeverRateOneAlways) {
  AuditSampler never(0, 1), always(1, 1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(never.Sample());
    EXPECT_TRUE(always.Sample());
  }
}

TEST(AuditSampler, ARateIsItsShareAndASeedRepeats) {
  AuditSampler a(0.1, 42), b(0.1, 42);
  int n = 0;
  for (int i = 0; i < 20000; ++i) {
    const bool x = a.Sample();
    EXPECT_EQ(x, b.Sample());
    n += x;
  }
  EXPECT_NEAR(n / 20000.0, 0.1, 0.01);
}

TEST(AuditRequestBody, IsNeverStreamed) {
  const auto b = AuditRequestBody(
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0})");
  ASSERT_TRUE(b);
  const json j = json::parse(*b);
  EXPECT_EQ(j["stream"], false);
  EXPECT_FALSE(j.contains("stream_options"));
  EXPECT_EQ(j["temperature"], 0);
  EXPECT_EQ(j["model"], "m");
  EXPECT_FALSE(AuditRequestBody("[1, 2]"));
  EXPECT_FALSE(AuditRequestBody("not json"));
}

TEST(BufferingResponder, KeepsTheStatusAndACappedBody) {
  BufferingResponder r(/*max_body=*/5);
  r.Send(200, "application/json", "0123456789", {});
  EXPECT_EQ(r.status(), 200);
  EXPECT_EQ(r.body(), "01234");
  EXPECT_TRUE(r.ended());
  BufferingResponder s(/*max_body=*/5);
  s.StartStream(200, "text/event-stream", {});
  s.Write("abc");
  s.Write("defg");
  EXPECT_FALSE(s.ended());
  s.End();
  EXPECT_EQ(s.body(), "abcde");
  EXPECT_TRUE(s.ended());
}

TEST(WilsonInterval, BracketsTheRateAndNarrowsWithMoreAudits) {
  const auto [lo0, hi0] = WilsonInterval(0, 0);
  EXPECT_EQ(lo0, 0);
  EXPECT_EQ(hi0, 1);
  const auto [lo1, hi1] = WilsonInterval(0, 10);
  EXPECT_EQ(lo1, 0);
  EXPECT_NEAR(hi1, 0.2775, 1e-3);  // no disagreement in 10 audits: still up to ~28%
  const auto [lo2, hi2] = WilsonInterval(5, 100);
  EXPECT_NEAR(lo2, 0.0215, 1e-3);
  EXPECT_NEAR(hi2, 0.1118, 1e-3);
  const auto [lo3, hi3] = WilsonInterval(50, 1000);
  EXPECT_LT(hi3 - lo3, hi2 - lo2);
  EXPECT_LT(lo3, 0.05);
  EXPECT_GT(hi3, 0.05);
}

}  // namespace
}  // namespace frugal::gateway
