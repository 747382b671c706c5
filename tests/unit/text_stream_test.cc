// TextStream (engine/text_stream.h): what a client sees of generated tokens with stop strings,
// checked against a brute-force rule on random letter streams, and its cost with long stop
// strings (linear in the text, not quadratic in a stop string's length).
#include "engine/text_stream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "testing/letter_tokenizer.h"

namespace frugal {
namespace {

using frugal::testing::LetterTokenizer;  // id 0 is a control token, ids 1..26 are a..z

int32_t Id(char c) { return c - 'a' + 1; }

// What must have been shown after `text` (no stop yet): everything but the longest suffix that
// is a proper prefix of a stop string; with a stop string in it, everything before the earliest.
std::string Expected(const std::string& text, const std::vector<std::string>& stops, bool* stop) {
  size_t cut = std::string::npos;
  for (const auto& s : stops) cut = std::min(cut, text.find(s));
  *stop = cut != std::string::npos;
  if (*stop) return text.substr(0, cut);
  size_t hold = 0;
  for (const auto& s : stops) {
    for (size_t len = 1; len < s.size() && len <= text.size(); ++len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) hold = std::max(hold, len);
    }
  }
  return text.substr(0, text.size() - hold);
}

TEST(TextStreamTest, MatchesTheBruteForceRuleOnRandomStreams) {
  auto tok = LetterTokenizer();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    // A small alphabet makes overlaps and partial matches common.
    auto word = [&](int max_len) {
      std::string w(1 + rng() % max_len, 'a');
      for (auto& c : w) c = static_cast<char>('a' + rng() % 3);
      return w;
    };
    std::vector<std::string> stops;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) stops.push_back(word(5));
    TextStream ts(*tok, stops);
    std::string text, shown;
    bool stopped = false;
    for (int i = 0; i < 30 && !stopped; ++i) {
      const char c = static_cast<char>('a' + rng() % 3);
      text += c;
      shown += ts.Push(Id(c), &stopped);
      bool want_stop = false;
      const std::string want = Expected(text, stops, &want_stop);
      ASSERT_EQ(stopped, want_stop) << "text " << text;
      ASSERT_EQ(shown, want) << "text " << text << " stops " << stops[0];
    }
    if (!stopped) {
      EXPECT_EQ(shown + ts.Finish(), text);
    }
  }
}

TEST(TextStreamTest, ControlTokensAndEmptyStopsAreIgnored) {
  auto tok = LetterTokenizer();
  TextStream ts(*tok, {"", "cd"});
  bool stopped = false;
  std::string shown = ts.Push(Id('a'), &stopped);
  shown += ts.Push(0, &stopped);  // a control token: no text
  shown += ts.Push(Id('c'), &stopped);
  EXPECT_EQ(shown, "a");  // "c" held: it may start "cd"
  shown += ts.Push(Id('d'), &stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(shown, "a");
  EXPECT_EQ(ts.Push(Id('e'), &stopped), "");  // nothing after a stop
}

// A long stop string whose prefixes keep almost matching: "a" x 6000, "b", "a" x 6000 against
// a run of "a", then "b" and "a"s until it completes. While the held-back text grows past the
// "b", checking every suffix length with a comparison that runs thousands of bytes before it
// fails cost O(L^2) per token: 3.4 s for this on a Zen 5 core even with a vectorised memcmp.
TEST(TextStreamTest, LongStopStringsCostLinearTime) {
  auto tok = LetterTokenizer();
  const std::string half(6000, 'a');
  TextStream ts(*tok, {half + "b" + half});
  bool stopped = false;
  std::string shown;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 16000; ++i) shown += ts.Push(Id('a'), &stopped);
  EXPECT_FALSE(stopped);
  EXPECT_EQ(shown, std::string(10000, 'a'));  // the last 6000 may still start the stop string
  shown += ts.Push(Id('b'), &stopped);
  for (int i = 0; i < 6000 && !stopped; ++i) shown += ts.Push(Id('a'), &stopped);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(stopped);
  EXPECT_EQ(shown, std::string(10000, 'a'));
  // Linear is milliseconds; a bound far from both, so a loaded machine cannot fail it.
  EXPECT_LT(s, 1.0);
}

}  // namespace
}  // namespace frugal
