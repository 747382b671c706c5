#include "engine/simulate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace frugal {
namespace {

TEST(SimulationSpecTest, EmptyMeansDefaults) {
  auto s = ParseSimulationSpec("");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, SimulationSpec{});
  EXPECT_DOUBLE_EQ(s->prefill_ms, 0.1);
  EXPECT_DOUBLE_EQ(s->decode_ms, 20);
  EXPECT_DOUBLE_EQ(s->batch_slowdown, 0.01);
  EXPECT_EQ(s->max_batch, 0);
  EXPECT_DOUBLE_EQ(s->jitter, 0);
  EXPECT_EQ(s->seed, 0u);
}

TEST(SimulationSpecTest, ReadsEveryKey) {
  auto s = ParseSimulationSpec(
      "prefill_ms=0.25, decode_ms = 12.5,batch_slowdown=0,max_batch=64,jitter=0.3,seed=42");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->prefill_ms, 0.25);
  EXPECT_DOUBLE_EQ(s->decode_ms, 12.5);
  EXPECT_DOUBLE_EQ(s->batch_slowdown, 0);
  EXPECT_EQ(s->max_batch, 64);
  EXPECT_DOUBLE_EQ(s->jitter, 0.3);
  EXPECT_EQ(s->seed, 42u);
}

TEST(SimulationSpecTest, KeysNotGivenKeepTheirDefaults) {
  auto s = ParseSimulationSpec("decode_ms=5");
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimulationSpec want;
  want.decode_ms = 5;
  EXPECT_EQ(*s, want);
}

TEST(SimulationSpecTest, RefusesBadSpecsWithOneLine) {
  for (const char* bad : {"decode_ms",       "decode_ms=",        "decode_ms=fast",
                          "decode_ms=20ms",  "decode_ms=nan",     "decode_ms=inf",
                          "prefill_ms=-0.1", "batch_slowdown=-1", "jitter=1",
                          "jitter=1.5",      "jitter=-0.1",       "max_batch=0",
                          "max_batch=2.5",   "max_batch=5000",    "seed=-1",
                          "seed=x",          "speed=3",           "decode_ms=20,decode_ms=30",
                          "decode_ms=20,",   ",decode_ms=20"}) {
    auto s = ParseSimulationSpec(bad);
    ASSERT_FALSE(s.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos) << bad;
    EXPECT_NE(s.status().message().find("simulation spec"), std::string::npos)
        << s.status().message();
  }
}

TEST(SimulationSpecTest, UnknownKeyMessageListsTheKeys) {
  auto s = ParseSimulationSpec("speed=3");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'speed'"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("decode_ms"), std::string::npos) << s.status().message();
}

TEST(SimulationSpecTest, FormatReadsBackToTheSameSpec) {
  for (const char* text : {"", "decode_ms=20,prefill_ms=0.2",
                           "prefill_ms=0.1234567891,max_batch=7,jitter=0.5,seed=9"}) {
    auto s = ParseSimulationSpec(text);
    ASSERT_TRUE(s.ok()) << text;
    const std::string formatted = FormatSimulationSpec(*s);
    auto back = ParseSimulationSpec(formatted);
    ASSERT_TRUE(back.ok()) << formatted << ": " << back.status().message();
    EXPECT_EQ(*back, *s) << formatted;
  }
  EXPECT_EQ(FormatSimulationSpec(SimulationSpec{}),
            "prefill_ms=0.1,decode_ms=20,batch_slowdown=0.01,jitter=0");
}

TEST(SimulationStepTimeTest, PrefillPerTokenDecodePerStep) {
  SimulationSpec spec;
  spec.prefill_ms = 0.5;
  spec.decode_ms = 20;
  spec.batch_slowdown = 0.1;
  StepTimeModel m(spec);
  EXPECT_DOUBLE_EQ(m.StepMs(0, 0), 0);
  EXPECT_DOUBLE_EQ(m.StepMs(10, 0), 5);
  EXPECT_DOUBLE_EQ(m.StepMs(0, 1), 20);
  // The batch decodes in parallel: 8 sequences cost one step, 70% slower, not 8 steps.
  EXPECT_DOUBLE_EQ(m.StepMs(0, 8), 34);
  EXPECT_DOUBLE_EQ(m.StepMs(10, 8), 39);
}

TEST(SimulationStepTimeTest, JitterStaysInItsBandAndFollowsTheSeed) {
  SimulationSpec spec;
  spec.prefill_ms = 0;
  spec.decode_ms = 10;
  spec.batch_slowdown = 0;
  spec.jitter = 0.2;
  spec.seed = 7;
  StepTimeModel a(spec), b(spec);
  double lo = 1e9, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    const double ms = a.StepMs(0, 1);
    EXPECT_EQ(ms, b.StepMs(0, 1));
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
  }
  EXPECT_GE(lo, 8.0);
  EXPECT_LE(hi, 12.0);
  // 2000 uniform draws cover most of the band.
  EXPECT_LT(lo, 8.1);
  EXPECT_GT(hi, 11.9);
}

}  // namespace
}  // namespace frugal
