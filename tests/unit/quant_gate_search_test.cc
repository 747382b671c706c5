// `frugal quantize`'s gate and its search, model-free: ValidateCandidate (quant/candidate_gate.h)
// and RunGateSearch (quant/gate_search.h) against a fake evaluator and a fake candidate source.
// What passes ships, what fails a clause is refused with that clause's reason, the search's
// raise order and stop rule, the callbacks, the candidate file's lifetime and error propagation.
// The real evaluator and source (an EvalReference, a QuantizedModel) are exercised end to end
// by tests/python/test_quantize*.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "quant/candidate_gate.h"
#include "quant/gate.h"
#include "quant/gate_search.h"
#include "testing/temp_files.h"

namespace frugal {
namespace {

using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

EvalReport TextReport(double ppl, double kld, double ppl_ref = 10.0) {
  EvalReport r;
  r.ppl_ref = ppl_ref;
  r.ppl = ppl;
  r.kld_mean = kld;
  r.kld_p99 = 10 * kld;
  r.top1_agreement = 0.95;
  r.tokens_scored = 128;
  return r;  // numeric_fidelity NaN, probes 0: the text alone
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Hands out one prepared text report per ScoreText call (the last one again when they run out)
// and fills the probe fields from `probes_matched` of `probes`.
class FakeEvaluator : public CandidateEvaluator {
 public:
  explicit FakeEvaluator(std::vector<EvalReport> text) : text_(std::move(text)) {}

  StatusOr<EvalReport> ScoreText(const std::string& candidate,
                                 const EvalProgress& progress) override {
    scored.push_back(candidate);
    candidate_existed.push_back(fs::exists(candidate));
    if (progress) progress("logits", 1, 1);
    if (static_cast<int>(scored.size()) == fail_text_at) return Internal("scoring broke");
    return text_[std::min(scored.size(), text_.size()) - 1];
  }
  Status AddProbes(const std::string& candidate, EvalReport& report,
                   const EvalProgress& progress) override {
    probed.push_back(candidate);
    if (progress) progress("probes", 1, 1);
    if (!probe_error.ok()) return probe_error;
    if (probes > 0) {
      report.probes = probes;
      report.probes_matched = probes_matched;
      report.numeric_fidelity = static_cast<double>(probes_matched) / static_cast<double>(probes);
    }
    return Status::Ok();
  }

  int64_t probes = 10, probes_matched = 9;
  int fail_text_at = -1;  // the ScoreText call (1-based) that fails
  Status probe_error = Status::Ok();
  Strings scored, probed;
  std::vector<bool> candidate_existed;

 private:
  std::vector<EvalReport> text_;
};

// Candidates are small files naming their raises; Ship moves them to `output`.
class FakeSource : public CandidateSource {
 public:
  FakeSource(std::vector<std::pair<std::string, TensorType>> order, std::string output)
      : order_(std::move(order)), output_(std::move(output)) {}

  std::vector<std::pair<std::string, TensorType>> RaiseOrder() const override { return order_; }
  size_t Bytes(const Raise& raise) const override { return 1000 + 100 * raise.size(); }
  Status WriteCandidate(const std::string& path, const Raise& raise) override {
    written.push_back(raise);
    if (!write_error.ok()) return write_error;
    std::ofstream out(path, std::ios::binary);
    for (const auto& [name, type] : raise) out << name << "\n";
    out << "candidate " << written.size() << "\n";
    return Status::Ok();
  }
  Status Ship(const std::string& candidate, const Raise& raise) override {
    shipped.push_back(raise);
    if (!ship_error.ok()) {
      fs::remove(candidate);
      return ship_error;
    }
    fs::rename(candidate, output_);
    return Status::Ok();
  }

  Status write_error = Status::Ok(), ship_error = Status::Ok();
  std::vector<Raise> written, shipped;

 private:
  std::vector<std::pair<std::string, TensorType>> order_;
  std::string output_;
};

Gate MustParse(const std::string& spec) {
  auto g = ParseGate(spec);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return *g;
}

Strings Messages(const std::vector<GateFailure>& failures) {
  Strings m;
  for (const GateFailure& f : failures) m.push_back(f.message);
  return m;
}

// ---------------------------------------------------------------------------------------------
// ValidateCandidate

TEST(CandidateGateTest, PassingCandidateIsScoredOnTextThenProbes) {
  FakeEvaluator ev({TextReport(10.5, 0.02)});
  auto v = ValidateCandidate(ev, "c.gguf", MustParse(kDefaultGate));
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->passed()) << Messages(v->failures)[0];
  EXPECT_EQ(ev.scored, Strings{"c.gguf"});
  EXPECT_EQ(ev.probed, Strings{"c.gguf"});
  EXPECT_DOUBLE_EQ(v->report.numeric_fidelity, 0.9);
  EXPECT_TRUE(v->not_measured.empty());
}

TEST(CandidateGateTest, TextFailureLeavesTheProbesUnmeasured) {
  FakeEvaluator ev({TextReport(10.5, 0.2)});
  auto v = ValidateCandidate(ev, "c.gguf", MustParse("ppl<+10%,kld<0.10,numeric>=0.30"));
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->passed());
  EXPECT_EQ(Messages(v->failures), Strings{"kld<0.10: kld_mean 0.2"});
  EXPECT_EQ(v->not_measured, Strings{"numeric>=0.30"});
  EXPECT_TRUE(ev.probed.empty());  // the costly part is skipped
  EXPECT_TRUE(std::isnan(v->report.numeric_fidelity));
}

TEST(CandidateGateTest, GateWithoutNumericNeverAnswersProbes) {
  FakeEvaluator ev({TextReport(10.5, 0.02)});
  auto v = ValidateCandidate(ev, "c.gguf", MustParse("ppl<+10%,kld<0.1"));
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->passed());
  EXPECT_TRUE(ev.probed.empty());
  EXPECT_TRUE(v->not_measured.empty());
}

struct ThresholdCase {
  const char* gate;
  EvalReport report;
  const char* reason;
};

TEST(CandidateGateTest, EachThresholdRefusesWithItsReason) {
  EvalReport top1 = TextReport(10, 0.01);
  top1.top1_agreement = 0.85;
  const ThresholdCase cases[] = {
      {"ppl<21", TextReport(22, 0.01), "ppl<21: ppl 22.0000"},
      {"ppl<+0.5", TextReport(17, 0.01, 16),
       "ppl<+0.5: ppl 17.0000 is +1.0000 over ppl_ref 16.0000"},
      {"ppl<+3%", TextReport(10.5, 0.01), "ppl<+3%: ppl 10.5000 is +5.000% over ppl_ref 10.0000"},
      {"kld<0.05", TextReport(10, 0.06), "kld<0.05: kld_mean 0.06"},
      {"kld_p99<0.5", TextReport(10, 0.07), "kld_p99<0.5: kld_p99 0.7"},
      {"top1>=0.9", top1, "top1>=0.9: top1 0.8500"},
      {"numeric>=0.98", TextReport(10, 0.01), "numeric>=0.98: numeric 0.9000 (9/10)"},
  };
  for (const ThresholdCase& c : cases) {
    SCOPED_TRACE(c.gate);
    FakeEvaluator ev({c.report});
    auto v = ValidateCandidate(ev, "c.gguf", MustParse(c.gate));
    ASSERT_TRUE(v.ok());
    EXPECT_FALSE(v->passed());
    EXPECT_EQ(Messages(v->failures), Strings{c.reason});
  }
}

TEST(CandidateGateTest, NumericClauseFailsWithoutProbes) {
  FakeEvaluator ev({TextReport(10, 0.01)});
  ev.probes = 0;  // the probes gave nothing: fidelity stays NaN
  auto v = ValidateCandidate(ev, "c.gguf", MustParse("kld<0.1,numeric>=0.5"));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Messages(v->failures), Strings{"numeric>=0.5: numeric n/a (no probes)"});
}

TEST(CandidateGateTest, EvaluatorErrorsAreReturned) {
  FakeEvaluator text({TextReport(10, 0.01)});
  text.fail_text_at = 1;
  auto v = ValidateCandidate(text, "c.gguf", MustParse("kld<0.1"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "scoring broke");

  FakeEvaluator probes({TextReport(10, 0.01)});
  probes.probe_error = NotFound("no probes file");
  v = ValidateCandidate(probes, "c.gguf", MustParse("kld<0.1,numeric>=0.5"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------------------------
// RunGateSearch

class GateSearchTest : public ::testing::Test {
 protected:
  GateSearchOptions Options(bool raise_until_pass = false, int max_raises = 16) const {
    GateSearchOptions o;
    o.candidate_path = candidate;
    o.raise_until_pass = raise_until_pass;
    o.max_raises = max_raises;
    return o;
  }
  Strings Files() const {
    Strings names;
    for (const auto& e : fs::directory_iterator(tmp.dir())) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  testing::TempDir tmp{"gate_search"};
  const std::string candidate = (tmp.dir() / "out.gguf.candidate").string();
  const std::string output = (tmp.dir() / "out.gguf").string();
  const std::vector<std::pair<std::string, TensorType>> order = {
      {"blk.3.ffn_down.weight", TensorType::kF16},
      {"blk.0.attn_v.weight", TensorType::kF16},
      {"blk.7.ffn_up.weight", TensorType::kF16}};
};

TEST_F(GateSearchTest, PassingCandidateShips) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(10.2, 0.01)});
  auto r = RunGateSearch(src, ev, MustParse("kld<0.05"), {}, Options(true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->shipped());
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_TRUE(r->steps[0].raised.empty());
  EXPECT_EQ(r->steps[0].bytes, 1000u);
  EXPECT_DOUBLE_EQ(r->steps[0].ppl, 10.2);
  EXPECT_DOUBLE_EQ(r->steps[0].kld_mean, 0.01);
  EXPECT_TRUE(r->steps[0].passed);
  EXPECT_EQ(ev.scored, Strings{candidate});
  EXPECT_EQ(ev.candidate_existed, std::vector<bool>{true});
  EXPECT_EQ(src.shipped.size(), 1u);
  EXPECT_EQ(Files(), Strings{"out.gguf"});  // the candidate became the output
  EXPECT_EQ(ReadFile(output), "candidate 1\n");
}

TEST_F(GateSearchTest, FailingCandidateIsRefusedAndRemoved) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(12, 0.3)});
  auto r = RunGateSearch(src, ev, MustParse("ppl<+10%,kld<0.1"), {}, Options(false));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->shipped());
  EXPECT_EQ(
      Messages(r->verdict.failures),
      (Strings{"ppl<+10%: ppl 12.0000 is +20.000% over ppl_ref 10.0000", "kld<0.1: kld_mean 0.3"}));
  EXPECT_EQ(r->steps.size(), 1u);
  EXPECT_FALSE(r->steps[0].passed);
  EXPECT_EQ(src.written.size(), 1u);  // no raises without raise_until_pass
  EXPECT_TRUE(src.shipped.empty());
  EXPECT_TRUE(Files().empty());  // nothing left behind
}

TEST_F(GateSearchTest, RaisesTheMostSensitiveFirstUntilThePass) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(11, 0.3), TextReport(10.8, 0.2), TextReport(10.4, 0.05)});
  auto r = RunGateSearch(src, ev, MustParse("kld<0.1"), {}, Options(true));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->shipped());
  const Raise want = {{"blk.3.ffn_down.weight", TensorType::kF16},
                      {"blk.0.attn_v.weight", TensorType::kF16}};
  ASSERT_EQ(src.written.size(), 3u);
  EXPECT_TRUE(src.written[0].empty());
  EXPECT_EQ(src.written[1], (Raise{order[0]}));
  EXPECT_EQ(src.written[2], want);
  EXPECT_EQ(r->raised, want);
  EXPECT_EQ(src.shipped, std::vector<Raise>{want});
  ASSERT_EQ(r->steps.size(), 3u);
  EXPECT_EQ(r->steps[1].raised, Strings{"blk.3.ffn_down.weight"});
  // Names sorted, as the report lists them.
  EXPECT_EQ(r->steps[2].raised, (Strings{"blk.0.attn_v.weight", "blk.3.ffn_down.weight"}));
  EXPECT_EQ(r->steps[0].bytes, 1000u);
  EXPECT_EQ(r->steps[2].bytes, 1200u);
  EXPECT_FALSE(r->steps[0].passed || r->steps[1].passed);
  EXPECT_TRUE(r->steps[2].passed);
  EXPECT_DOUBLE_EQ(r->steps[1].kld_mean, 0.2);
  EXPECT_EQ(ReadFile(output), "blk.0.attn_v.weight\nblk.3.ffn_down.weight\ncandidate 3\n");
}

TEST_F(GateSearchTest, StopsAfterMaxRaises) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(11, 0.3)});
  auto r = RunGateSearch(src, ev, MustParse("kld<0"), {}, Options(true, 2));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->shipped());
  ASSERT_EQ(r->steps.size(), 3u);  // 0, 1 and 2 raised
  EXPECT_EQ(r->steps[2].raised.size(), 2u);
  EXPECT_EQ(r->raised.size(), 2u);
  EXPECT_TRUE(Files().empty());
}

TEST_F(GateSearchTest, StopsWhenNothingIsLeftToRaise) {
  FakeSource src({order[0]}, output);
  FakeEvaluator ev({TextReport(11, 0.3)});
  auto r = RunGateSearch(src, ev, MustParse("kld<0"), {}, Options(true, 16));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->shipped());
  EXPECT_EQ(r->steps.size(), 2u);
  FakeSource none({}, output);
  r = RunGateSearch(none, ev, MustParse("kld<0"), {}, Options(true, 16));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps.size(), 1u);
}

TEST_F(GateSearchTest, InitialRaisesAreEvaluatedAndShipped) {
  // --max-size's raises: the one candidate is written with them.
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(10, 0.01)});
  const Raise initial = {{"blk.9.ffn_gate.weight", TensorType::kQ8_0}};
  auto r = RunGateSearch(src, ev, MustParse("kld<0.05"), initial, Options(false));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->shipped());
  EXPECT_EQ(src.written, std::vector<Raise>{initial});
  EXPECT_EQ(src.shipped, std::vector<Raise>{initial});
  EXPECT_EQ(r->steps[0].raised, Strings{"blk.9.ffn_gate.weight"});
  EXPECT_EQ(r->steps[0].bytes, 1100u);
}

TEST_F(GateSearchTest, CallbacksSeeEveryStepAndTheEvaluatorsProgress) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(11, 0.3), TextReport(10, 0.01)});
  GateSearchOptions o = Options(true);
  Strings stages;
  o.progress = [&](std::string_view stage, int64_t, int64_t) { stages.emplace_back(stage); };
  std::vector<std::pair<size_t, bool>> seen;  // raised, passed
  Strings reasons;
  o.on_step = [&](const GateStep& s, const GateVerdict& v) {
    seen.emplace_back(s.raised.size(), s.passed);
    EXPECT_EQ(s.passed, v.passed());
    reasons.push_back(v.passed() ? "passes" : v.failures.front().message);
    // Called before the search goes on: the file being judged is still there.
    EXPECT_TRUE(fs::exists(candidate));
  };
  auto r = RunGateSearch(src, ev, MustParse("kld<0.1,numeric>=0.5"), {}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(seen, (std::vector<std::pair<size_t, bool>>{{0, false}, {1, true}}));
  EXPECT_EQ(reasons, (Strings{"kld<0.1: kld_mean 0.3", "passes"}));
  // Step 0 fails on the text (no probes); step 1 passes it and answers the probes.
  EXPECT_EQ(stages, (Strings{"logits", "logits", "probes"}));
  EXPECT_EQ(r->verdict.not_measured, Strings{});
}

TEST_F(GateSearchTest, EvaluationErrorRemovesTheCandidate) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(11, 0.3)});
  ev.fail_text_at = 2;
  auto r = RunGateSearch(src, ev, MustParse("kld<0.1"), {}, Options(true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "scoring broke");
  EXPECT_EQ(src.written.size(), 2u);
  EXPECT_TRUE(src.shipped.empty());
  EXPECT_TRUE(Files().empty());
}

TEST_F(GateSearchTest, WriteAndShipErrorsAreReturned) {
  FakeSource unwritable(order, output);
  unwritable.write_error = IoError("disk full");
  FakeEvaluator ev({TextReport(10, 0.01)});
  auto r = RunGateSearch(unwritable, ev, MustParse("kld<0.1"), {}, Options(true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "disk full");
  EXPECT_TRUE(ev.scored.empty());

  FakeSource unshippable(order, output);
  unshippable.ship_error = IoError("cannot rename");
  r = RunGateSearch(unshippable, ev, MustParse("kld<0.1"), {}, Options(true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cannot rename");
  EXPECT_TRUE(Files().empty());
}

TEST_F(GateSearchTest, NeedsACandidatePath) {
  FakeSource src(order, output);
  FakeEvaluator ev({TextReport(10, 0.01)});
  GateSearchOptions o;
  auto r = RunGateSearch(src, ev, MustParse("kld<0.1"), {}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(src.written.empty());
}

}  // namespace
}  // namespace frugal
