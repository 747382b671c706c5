#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <map>

namespace frugal {
namespace {

TEST(SamplerTest, GreedyPicksArgmax) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s(p);
  std::vector<float> logits = {0.1f, 2.0f, 1.9f};
  EXPECT_EQ(s.Sample(logits, {}), 1);
}

TEST(SamplerTest, RepetitionPenaltyDemotesSeenTokens) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 1.5f;
  Sampler s(p);
  std::vector<float> logits = {0.1f, 2.0f, 1.9f};
  const int32_t history[] = {1};
  EXPECT_EQ(s.Sample(logits, history), 2);
}

TEST(SamplerTest, SameSeedSameDraws) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0;
  p.seed = 1234;
  Sampler a(p), b(p);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> l1 = {1, 1, 1, 1, 1}, l2 = l1;
    EXPECT_EQ(a.Sample(l1, {}), b.Sample(l2, {}));
  }
}

TEST(SamplerTest, TopKAndTopPRestrictTheSupport) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 2;
  p.top_p = 1.0f;
  p.min_p = 0;
  p.seed = 7;
  Sampler s(p);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 300; ++i) {
    std::vector<float> l = {3, 2.9f, 0, 0, 0};
    ++seen[s.Sample(l, {})];
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);

  p.top_k = 0;
  p.top_p = 0.5f;  // the first token alone holds more than half the mass
  Sampler nucleus(p);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> l = {5, 1, 1, 1, 1};
    EXPECT_EQ(nucleus.Sample(l, {}), 0);
  }
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.5f;
  p.seed = 3;
  Sampler s(p);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> l = {2, 0, 0, 2};  // tokens 1 and 2 have e^-2 of the top probability
    const int32_t t = s.Sample(l, {});
    EXPECT_TRUE(t == 0 || t == 3);
  }
}

}  // namespace
}  // namespace frugal
