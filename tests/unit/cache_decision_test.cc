// The learned hit decision's model file, features and thresholds (cache/decision.h), without
// model weights: the shipped files parse, a corrupt file is refused with a clear error, the
// target precision moves the threshold monotonically, and the overlap features are those the
// training script computes. tests/golden/cache_decision_model_test.cc runs the decision on real
// e5 vectors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cache/decision.h"
#include "cache_decisions.h"

namespace frugal::cache {
namespace {

std::string ShippedText() {
  EXPECT_NE(kCacheDecisionJson[0], nullptr) << "data/cache_decision holds the default's model";
  return kCacheDecisionJson[0] != nullptr ? kCacheDecisionJson[0] : "";
}

TEST(CacheDecisionTest, ShippedModelsParseAndAreFoundByFingerprint) {
  int n = 0;
  for (const char* const* p = kCacheDecisionJson; *p != nullptr; ++p, ++n) {
    auto m = ParseDecisionModel(*p);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_FALSE(m->fingerprint.empty());
    EXPECT_GT(m->recall_threshold, 0.5f);
    EXPECT_LT(m->recall_threshold, 1.0f);
    EXPECT_EQ(m->inputs(), 2 * m->dim + 1 + kNumOverlapFeatures);
    EXPECT_NE(FindDecisionModel(m->fingerprint), nullptr);
    // The default target is reachable in both languages: the decision is not off by default.
    EXPECT_LT(m->ThresholdFor(DecisionLang::kEn, 0.95), 1.0);
    EXPECT_LT(m->ThresholdFor(DecisionLang::kZh, 0.95), 1.0);
  }
  EXPECT_GE(n, 1);
  EXPECT_EQ(FindDecisionModel(""), nullptr);
  EXPECT_EQ(FindDecisionModel("sha256-4m:none:1"), nullptr);
}

TEST(CacheDecisionTest, ACorruptFileIsRefusedWithAClearError) {
  const std::string text = ShippedText();
  auto expect_refused = [](const std::string& t, const std::string& says) {
    auto m = ParseDecisionModel(t);
    ASSERT_FALSE(m.ok()) << "accepted a file that " << says;
    EXPECT_NE(m.status().message().find(says), std::string::npos) << m.status().message();
  };
  expect_refused(text.substr(0, text.size() / 2), "not a JSON object");
  expect_refused("", "not a JSON object");
  nlohmann::json j = nlohmann::json::parse(text);
  {
    auto k = j;
    k["w1"].erase(k["w1"].size() - 1);
    expect_refused(k.dump(), "'w1' has");
  }
  {
    auto k = j;
    k["b1"][0] = "x";
    expect_refused(k.dump(), "cache decision");
  }
  {
    auto k = j;
    k["sd"][3] = 0.0;
    expect_refused(k.dump(), "'sd' holds a value <= 0");
  }
  {
    auto k = j;
    k["kind"] = "svm";
    expect_refused(k.dump(), "kind is not 'mlp'");
  }
  {
    auto k = j;
    std::swap(k["calibration"]["en"][0], k["calibration"]["en"][1]);
    expect_refused(k.dump(), "must ascend");
  }
  {
    auto k = j;
    k["overlap_features"][1] = "han_trigram_jaccard";
    expect_refused(k.dump(), "overlap feature 1");
  }
  {
    auto k = j;
    k.erase("mu");
    expect_refused(k.dump(), "mu");
  }
}

TEST(CacheDecisionTest, TargetPrecisionMovesTheThresholdMonotonically) {
  auto m = ParseDecisionModel(ShippedText());
  ASSERT_TRUE(m.ok());
  auto shared = std::make_shared<DecisionModel>(*m);
  for (DecisionLang lang : {DecisionLang::kEn, DecisionLang::kZh}) {
    double last = 0;
    for (int t = 50; t <= 100; ++t) {
      const LearnedVerifier v(shared, t / 100.0);
      EXPECT_GE(v.threshold(lang), last) << "target " << t / 100.0;
      last = v.threshold(lang);
    }
    // A stricter target never gives a lower threshold, and an unreachable one switches hits off.
    EXPECT_LT(LearnedVerifier(shared, 0.6).threshold(lang),
              LearnedVerifier(shared, 0.99).threshold(lang) + 1e-12);
    EXPECT_EQ(LearnedVerifier(shared, 1.0).threshold(lang) <= 1.0, true);
  }
  // A hand-made curve: the lowest threshold from which precision stays at the target.
  DecisionModel h;
  h.calibration[0] = {{0.5, 0.80, 0.9}, {0.6, 0.92, 0.7}, {0.7, 0.90, 0.6}, {0.8, 0.97, 0.3}};
  EXPECT_DOUBLE_EQ(h.ThresholdFor(DecisionLang::kEn, 0.80), 0.5);
  EXPECT_DOUBLE_EQ(h.ThresholdFor(DecisionLang::kEn, 0.90), 0.6);
  EXPECT_DOUBLE_EQ(h.ThresholdFor(DecisionLang::kEn, 0.91), 0.8);  // 0.7 dips below
  EXPECT_DOUBLE_EQ(h.ThresholdFor(DecisionLang::kEn, 0.99), 1.0);
}

TEST(CacheDecisionTest, OverlapFeaturesMatchTheTrainingScript) {
  const std::vector<float> u = {1, 0, 0}, v = {0.6f, 0.8f, 0};
  const auto x = DecisionFeatures(u, v, "How do I pay?", "how do i pay back");
  ASSERT_EQ(x.size(), 2 * 3 + 1 + static_cast<size_t>(kNumOverlapFeatures));
  EXPECT_FLOAT_EQ(x[0], 0.4f);          // |u - v|
  EXPECT_FLOAT_EQ(x[3], 0.6f);          // u * v
  EXPECT_FLOAT_EQ(x[6], 0.6f);          // cosine
  EXPECT_FLOAT_EQ(x[7], 0.8f);          // words: 4 shared of 5
  EXPECT_FLOAT_EQ(x[8], 0.0f);          // no Han bigrams in English
  EXPECT_FLOAT_EQ(x[9], 0.0f);          // not Chinese
  EXPECT_FLOAT_EQ(x[10], 4.0f / 5.0f);  // length ratio
  // Chinese by character, whatever the segmentation: 运费怎么算 / 运费是怎么计算的.
  const auto z = DecisionFeatures(u, u, "运费怎么算？", "运费是怎么计算的？");
  EXPECT_FLOAT_EQ(z[6], 1.0f);
  EXPECT_FLOAT_EQ(z[7], 5.0f / 8.0f);
  EXPECT_FLOAT_EQ(z[8], 2.0f / 9.0f);  // 运费, 怎么 of 9 bigrams
  EXPECT_FLOAT_EQ(z[9], 1.0f);
  EXPECT_FLOAT_EQ(z[10], 5.0f / 8.0f);
  EXPECT_EQ(LangOf("运费怎么算", "shipping"), DecisionLang::kZh);
  EXPECT_EQ(LangOf("shipping fee", "how much is shipping"), DecisionLang::kEn);
}

TEST(CacheDecisionTest, DecisionKindsParse) {
  EXPECT_EQ(*ParseDecisionKind("learned"), DecisionKind::kLearned);
  EXPECT_EQ(*ParseDecisionKind("rules"), DecisionKind::kRules);
  auto bad = ParseDecisionKind("cosine");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'learned' or 'rules'"), std::string::npos);
}

}  // namespace
}  // namespace frugal::cache
