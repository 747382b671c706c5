// The learned hit decision on the default embedder's real vectors (label `model`; skipped when
// models/ has not been fetched): through the library's public API it accepts a paraphrase and
// refuses another number, a negation and another object, by itself and inside the cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cache/cache.h"
#include "cache/cache_config.h"
#include "cache/decision.h"
#include "cache/embedder.h"
#include "cache/vector_index.h"

namespace frugal::cache {
namespace {

const char* kE5 = FRUGAL_SOURCE_DIR "/models/multilingual-e5-small/e5-small-q4.bin";

std::shared_ptr<Embedder> E5() {
  static std::shared_ptr<Embedder> e = [] {
    auto o = OpenEngineEmbedder(kE5, 2);
    return o.ok() ? *o : nullptr;
  }();
  return e;
}

Verdict Decide(const HitVerifier& v, Embedder& e, const std::string& query,
               const std::string& cached) {
  auto q = e.Embed(query), c = e.Embed(cached);
  EXPECT_TRUE(q.ok() && c.ok());
  return v.VerifyWithVectors(query, cached, Similarity(*q, *c), e, PairVectors{*q, *c});
}

TEST(CacheDecisionModelTest, AcceptsAParaphraseAndRefusesNumbersNegationAndObjects) {
  if (!std::filesystem::exists(kE5)) GTEST_SKIP() << "run scripts/get-models.sh first";
  auto e = E5();
  ASSERT_NE(e, nullptr);
  const auto v = DefaultVerifier(*e);  // the default: learned, target precision 0.95
  ASSERT_STREQ(v->name(), "learned");
  EXPECT_TRUE(
      Decide(*v, *e, "How do I change my card PIN?", "how can i change the pin on my card").accept);
  // The same question typed again in Chinese, with fillers: a hit by the strict reading, whatever
  // the score.
  const Verdict typed_again = Decide(*v, *e, "请问运费怎么算呢", "运费怎么算？");
  EXPECT_TRUE(typed_again.accept);
  EXPECT_TRUE(typed_again.same_content);
  EXPECT_TRUE(Decide(*v, *e, "how can i change the pin on my card", "How do I change my card PIN?")
                  .same_content);
  const Verdict reworded_pin =
      Decide(*v, *e, "I want a new PIN for my card", "How do I change my card PIN?");
  EXPECT_TRUE(reworded_pin.accept);         // p 0.986 against the 0.83 English threshold
  EXPECT_FALSE(reworded_pin.same_content);  // other words: the score decided
  const Verdict numbers =
      Decide(*v, *e, "Can I withdraw 500 dollars a day?", "Can I withdraw 5000 dollars a day?");
  EXPECT_FALSE(numbers.accept);
  EXPECT_STREQ(numbers.reason, "numbers");
  const Verdict negation =
      Decide(*v, *e, "Why was my transfer declined?", "Why wasn't my transfer declined?");
  EXPECT_FALSE(negation.accept);
  EXPECT_STREQ(negation.reason, "negation");
  // A negation in one of two free rewordings is no veto: the model decides (whatever it says).
  for (auto [q, c] : {std::pair{"Why didn't my loan get approved?",
                                "What is the reason my loan application was rejected?"},
                      {"借款审核没通过是什么原因", "为什么我申请借款被拒绝了"}}) {
    const Verdict reworded = Decide(*v, *e, q, c);
    EXPECT_STRNE(reworded.reason, "negation") << q << " / " << c;
    EXPECT_GT(reworded.p_same, 0.0) << q << " / " << c;
  }
  EXPECT_FALSE(
      Decide(*v, *e, "How do I activate my new card?", "How do I cancel my new card?").accept);
  EXPECT_FALSE(Decide(*v, *e, "怎么申请退货", "怎么申请发票").accept);
  // Without the vectors the verifier embeds both texts itself, to the same verdict.
  const Verdict again =
      v->Verify("How do I change my card PIN?", "how can i change the pin on my card", 0.9f, *e);
  EXPECT_TRUE(again.accept);
}

TEST(CacheDecisionModelTest, TheCacheServesAParaphraseThroughTheLearnedDecision) {
  if (!std::filesystem::exists(kE5)) GTEST_SKIP() << "run scripts/get-models.sh first";
  auto e = E5();
  ASSERT_NE(e, nullptr);
  CacheConfig config;  // the defaults: learned, target precision 0.95, embedded backend
  auto cache = OpenCache(e, config);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  const std::string scope = ScopeKey({"t", "m", "", "t=0"});
  ASSERT_TRUE((*cache)->Insert(scope, "t", "How do I change my card PIN?", "Settings > PIN.").ok());
  auto hit = (*cache)->Lookup(scope, "t", "how can i change the pin on my card");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit) << hit->refusal << " at cosine " << hit->similarity;
  auto miss = (*cache)->Lookup(scope, "t", "How do I change my card PIN 5 times?");
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->hit);
  // The previous decision stays available.
  config.decision = DecisionKind::kRules;
  auto rules = OpenCache(e, config);
  ASSERT_TRUE(rules.ok());
}

}  // namespace
}  // namespace frugal::cache
