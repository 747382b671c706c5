// The continuous-batching scheduler without a model: a fake ModelRunner records every planned
// step and answers greedy-decodable logits, so admission, chunked prefill, KV waits,
// cancellation and the finish reasons are checked step by step.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "testing/letter_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace frugal {
namespace {

using namespace std::chrono_literals;

using frugal::testing::LetterTokenizer;  // id 0 ends generation, ids 1..26 are a..z

// What a step looked like, for the assertions.
struct SeenStep {
  int64_t prefill_tokens = 0, decode_sequences = 0;
  std::map<const KvCache*, std::vector<int64_t>> positions;  // per sequence, in order
};

// The token after position p is the letter (p + 1) mod 26; at `eos_after` positions it is EOS.
class FakeRunner final : public ModelRunner {
 public:
  explicit FakeRunner(int64_t n_ctx = 256) : n_ctx_(n_ctx), tok_(LetterTokenizer()) {}

  int64_t context_length() const override { return n_ctx_; }
  int64_t n_vocab() const override { return tok_->vocab_size(); }
  int64_t kv_layers() const override { return 1; }
  int64_t kv_dim() const override { return 1; }
  KvType kv_type() const override { return KvType::kF16; }
  const Tokenizer& tokenizer() const override { return *tok_; }
  Status Warmup(KvBlockPool&, double* prefill_ms, double* decode_ms) override {
    *prefill_ms = 0.5;
    *decode_ms = 2;
    return Status::Ok();
  }

  Status Step(const StepPlan& plan, std::vector<float>* logits) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (held_) {
      cv_.wait(lock, [&] { return interrupted_ || allowed_ > 0; });
      if (allowed_ > 0) --allowed_;
    }
    SeenStep seen{plan.prefill_tokens, plan.decode_sequences, {}};
    logits->clear();
    for (const auto& it : plan.items) {
      seen.positions[it.kv].push_back(it.pos);
      if (!it.logits) continue;
      std::vector<float> row(static_cast<size_t>(n_vocab()), 0.f);
      const int64_t next = it.pos + 1;
      row[eos_after_ > 0 && next >= eos_after_ ? 0 : static_cast<size_t>(1 + next % 26)] = 10.f;
      logits->insert(logits->end(), row.begin(), row.end());
    }
    steps_.push_back(std::move(seen));
    ++step_count_;
    cv_.notify_all();
    return fail_ ? Internal("the fake model failed") : Status::Ok();
  }

  void Interrupt() override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
    cv_.notify_all();
  }

  // Steps wait for Allow() from now on.
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Allow(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ += n;
    cv_.notify_all();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    allowed_ = 1 << 30;
    cv_.notify_all();
  }
  // Waits until `n` steps have run in all.
  bool WaitSteps(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return step_count_ >= n; });
  }
  std::vector<SeenStep> steps() {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  void set_eos_after(int64_t n) { eos_after_ = n; }
  void set_fail(bool f) { fail_ = f; }

 private:
  const int64_t n_ctx_;
  std::unique_ptr<Tokenizer> tok_;
  int64_t eos_after_ = 0;
  bool fail_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, interrupted_ = false;
  int allowed_ = 0, step_count_ = 0;
  std::vector<SeenStep> steps_;
};

// Collects one request's events; Wait blocks until kDone.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  std::string text;
  bool done = false;
  InferenceEvent last;
  InferenceCallback Callback() {
    return [this](const InferenceEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (ev.kind == InferenceEvent::Kind::kText) {
        text += ev.text;
      } else {
        last = ev;
        done = true;
        cv.notify_all();
      }
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return done; });
  }
  bool IsDone() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
};

InferenceRequest Request(int64_t prompt_tokens, int32_t max_tokens) {
  InferenceRequest r;
  r.prompt.assign(static_cast<size_t>(prompt_tokens), 1);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;  // greedy: the fake's one-hot rows decide
  return r;
}

struct Started {
  FakeRunner* runner;
  std::unique_ptr<Scheduler> scheduler;
};

Started Start(SchedulerOptions o, int64_t n_ctx = 256) {
  auto runner = std::make_unique<FakeRunner>(n_ctx);
  FakeRunner* raw = runner.get();
  auto s = Scheduler::Start(std::move(runner), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return {raw, s.ok() ? std::move(s).value() : nullptr};
}

template <typename Pred>
bool Eventually(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(SchedulerTest, AnswersWithTheModelsTokensAndCountsThem) {
  auto [runner, s] = Start({});
  ASSERT_TRUE(s);
  Outcome out;
  ASSERT_TRUE(s->Submit(Request(3, 5), out.Callback()).ok());
  ASSERT_TRUE(out.Wait());
  // Positions 0..2 are the prompt; the tokens after positions 2..6 are letters 3..7: d e f g h.
  EXPECT_EQ(out.text, "defgh");
  EXPECT_EQ(out.last.finish_reason, "length");
  EXPECT_EQ(out.last.prompt_tokens, 3);
  EXPECT_EQ(out.last.completion_tokens, 5);
  EXPECT_TRUE(out.last.status.ok());
}

TEST(SchedulerTest, BusySecondsCountTheTimeInModelStepsOnly) {
  auto [runner, s] = Start({});
  ASSERT_TRUE(s);
  std::this_thread::sleep_for(30ms);  // idle: not busy
  EXPECT_EQ(s->Load().busy_seconds, 0);
  runner->Hold();
  Outcome out;
  ASSERT_TRUE(s->Submit(Request(3, 2), out.Callback()).ok());
  std::this_thread::sleep_for(60ms);  // the first step runs (held) all this time
  runner->Release();
  ASSERT_TRUE(out.Wait());
  const double busy = s->Load().busy_seconds;
  EXPECT_GE(busy, 0.05);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(s->Load().busy_seconds, busy);  // idle again
}

TEST(SchedulerTest, EndOfGenerationAndStopStringsEndWithStop) {
  auto [runner, s] = Start({});
  ASSERT_TRUE(s);
  runner->set_eos_after(6);  // the token after position 5 is EOS
  Outcome eos;
  ASSERT_TRUE(s->Submit(Request(3, 50), eos.Callback()).ok());
  ASSERT_TRUE(eos.Wait());
  EXPECT_EQ(eos.text, "def");
  EXPECT_EQ(eos.last.finish_reason, "stop");
  EXPECT_EQ(eos.last.completion_tokens, 3);

  runner->set_eos_after(0);
  Outcome stop;
  InferenceRequest r = Request(3, 50);
  r.stop = {"fg"};
  ASSERT_TRUE(s->Submit(std::move(r), stop.Callback()).ok());
  ASSERT_TRUE(stop.Wait());
  EXPECT_EQ(stop.text, "de");  // the text ends before the stop string, which is never shown
  EXPECT_EQ(stop.last.finish_reason, "stop");
}

TEST(SchedulerTest, PromptsArePrefilledInChunksNextToOthersDecoding) {
  SchedulerOptions o;
  o.prefill_chunk = 8;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b;
  ASSERT_TRUE(s->Submit(Request(2, 30), a.Callback()).ok());
  runner->Allow(2);  // a's prompt, then one decode step
  ASSERT_TRUE(runner->WaitSteps(2));
  ASSERT_TRUE(s->Submit(Request(20, 2), b.Callback()).ok());
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());

  // Every step's prompt tokens stay within the chunk; b's 20 take three steps (8, 8, 4), each
  // next to a's decode token, and its positions run on without a gap.
  const auto steps = runner->steps();
  std::vector<int64_t> b_chunks;
  std::vector<int64_t> b_positions;
  for (const auto& st : steps) {
    EXPECT_LE(st.prefill_tokens, 8);
    if (st.prefill_tokens > 0 && st.positions.size() == 2) {
      EXPECT_EQ(st.decode_sequences, 1) << "a decodes while b prefills";
      b_chunks.push_back(st.prefill_tokens);
    }
  }
  EXPECT_EQ(b_chunks, (std::vector<int64_t>{8, 8, 4}));
  EXPECT_EQ(a.last.finish_reason, "length");
  EXPECT_EQ(b.last.finish_reason, "length");
  EXPECT_EQ(b.last.completion_tokens, 2);
}

TEST(SchedulerTest, AdmissionIsFirstComeFirstServedUpToTheBatch) {
  SchedulerOptions o;
  o.max_batch = 2;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b, c;
  ASSERT_TRUE(s->Submit(Request(4, 20), a.Callback()).ok());
  ASSERT_TRUE(s->Submit(Request(4, 20), b.Callback()).ok());
  ASSERT_TRUE(s->Submit(Request(4, 20), c.Callback()).ok());
  // Admission happens between steps: let them run one at a time until both slots are taken.
  ASSERT_TRUE(Eventually([&] {
    if (s->Load().running == 2) return true;
    runner->Allow(1);
    return false;
  }));
  EXPECT_EQ(s->Load().waiting, 1);
  EXPECT_GT(s->Load().backlog_ms, 0);
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  ASSERT_TRUE(c.Wait());
  for (const auto& st : runner->steps()) EXPECT_LE(st.positions.size(), 2u);
  EXPECT_GT(c.last.queue_seconds, 0);
  EXPECT_EQ(c.last.finish_reason, "length");
  EXPECT_TRUE(Eventually([&] { return s->Load().running == 0 && s->Load().backlog_ms == 0; }))
      << s->Load().running << " running, backlog " << s->Load().backlog_ms << " ms";
}

TEST(SchedulerTest, ARequestWaitsForKvBlocksWithoutPreemptingAnother) {
  SchedulerOptions o;
  o.kv_block_tokens = 4;
  o.kv_blocks = 4;  // 16 positions
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  Outcome a, b;
  runner->Hold();
  ASSERT_TRUE(s->Submit(Request(4, 8), a.Callback()).ok());  // 12 positions: 3 blocks
  ASSERT_TRUE(s->Submit(Request(4, 4), b.Callback()).ok());  // 8 positions: 2 blocks
  ASSERT_TRUE(Eventually([&] { return s->Load().running == 1; }));
  EXPECT_EQ(s->Load().waiting, 1);
  EXPECT_EQ(s->Load().kv_blocks_free, 1);
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  // a ran to its end; b never shared a step with it.
  EXPECT_EQ(a.last.finish_reason, "length");
  EXPECT_EQ(a.last.completion_tokens, 8);
  EXPECT_EQ(b.last.finish_reason, "length");
  for (const auto& st : runner->steps()) EXPECT_EQ(st.positions.size(), 1u);
  EXPECT_TRUE(Eventually([&] { return s->Load().kv_blocks_free == 4; }));

  // One that could never fit is refused at once, not queued forever.
  Outcome never;
  auto too_big = s->Submit(Request(4, 13), never.Callback());
  EXPECT_EQ(too_big.status().code(), StatusCode::kOutOfRange);
}

TEST(SchedulerTest, CancellingRunningOrWaitingRequestsFreesTheirBlocks) {
  SchedulerOptions o;
  o.max_batch = 1;
  o.kv_block_tokens = 4;
  o.kv_blocks = 8;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome running, waiting;
  auto h1 = s->Submit(Request(4, 20), running.Callback());
  auto h2 = s->Submit(Request(4, 20), waiting.Callback());
  ASSERT_TRUE(h1.ok() && h2.ok());
  runner->Allow(2);
  ASSERT_TRUE(runner->WaitSteps(2));
  EXPECT_EQ(s->Load().waiting, 1);
  (*h2)->Cancel();
  (*h1)->Cancel();
  runner->Release();
  ASSERT_TRUE(running.Wait());
  ASSERT_TRUE(waiting.Wait());
  EXPECT_EQ(running.last.finish_reason, "cancelled");
  EXPECT_EQ(waiting.last.finish_reason, "cancelled");
  EXPECT_EQ(waiting.last.completion_tokens, 0);
  EXPECT_LT(running.last.completion_tokens, 20);
  EXPECT_TRUE(Eventually([&] { return s->Load().kv_blocks_free == 8 && s->Load().running == 0; }));
  // The waiting one never reached the model: every step had the first request only.
  for (const auto& st : runner->steps()) EXPECT_EQ(st.positions.size(), 1u);
}

TEST(SchedulerTest, AFullQueueAndABacklogOverTheLimitAreRefused) {
  SchedulerOptions o;
  o.max_batch = 1;
  o.max_queue = 1;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b, c;
  ASSERT_TRUE(s->Submit(Request(4, 10), a.Callback()).ok());
  ASSERT_TRUE(Eventually([&] { return s->Load().running == 1; }));
  ASSERT_TRUE(s->Submit(Request(4, 10), b.Callback()).ok());
  auto refused = s->Submit(Request(4, 10), c.Callback());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());

  SchedulerOptions limited;
  limited.max_backlog_ms = 30;  // the fake's warm-up says 0.5 ms per prompt token, 2 per decode
  auto [runner2, s2] = Start(limited);
  ASSERT_TRUE(s2);
  runner2->Hold();
  Outcome first, second;
  // Nothing ahead: taken even though its own estimate (2 + 40 ms) is over the limit.
  ASSERT_TRUE(s2->Submit(Request(4, 20), first.Callback()).ok());
  auto over = s2->Submit(Request(4, 1), second.Callback());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  runner2->Release();
  ASSERT_TRUE(first.Wait());
}

TEST(SchedulerTest, AModelErrorEndsTheRunningRequestsWithError) {
  auto [runner, s] = Start({});
  ASSERT_TRUE(s);
  runner->set_fail(true);
  Outcome a, b;
  // Whether both are in the failing step or the second comes in a later one, each ends with
  // "error" and nothing stays admitted.
  ASSERT_TRUE(s->Submit(Request(4, 5), a.Callback()).ok());
  ASSERT_TRUE(s->Submit(Request(4, 5), b.Callback()).ok());
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  EXPECT_EQ(a.last.finish_reason, "error");
  EXPECT_EQ(b.last.finish_reason, "error");
  EXPECT_FALSE(a.last.status.ok());
  EXPECT_TRUE(Eventually([&] { return s->Load().running == 0; }));
}

TEST(SchedulerTest, DeadlinesEndRequestsWithTimeout) {
  auto [runner, s] = Start({});
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome out;
  InferenceRequest r = Request(4, 100);
  r.deadline = std::chrono::steady_clock::now() + 50ms;
  ASSERT_TRUE(s->Submit(std::move(r), out.Callback()).ok());
  runner->Allow(3);
  ASSERT_TRUE(runner->WaitSteps(3));
  std::this_thread::sleep_for(60ms);
  runner->Release();
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.last.finish_reason, "timeout");
  EXPECT_EQ(out.last.status.code(), StatusCode::kDeadlineExceeded);
}

TEST(SchedulerTest, BadRequestsAndOptionsAreRefused) {
  auto [runner, s] = Start({}, /*n_ctx=*/64);
  ASSERT_TRUE(s);
  Outcome out;
  EXPECT_EQ(s->Submit(Request(0, 5), out.Callback()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Submit(Request(4, 0), out.Callback()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Submit(Request(60, 5), out.Callback()).status().code(), StatusCode::kOutOfRange);
  InferenceRequest empty_stop = Request(4, 5);
  empty_stop.stop = {""};
  EXPECT_EQ(s->Submit(std::move(empty_stop), out.Callback()).status().code(),
            StatusCode::kInvalidArgument);

  std::vector<SchedulerOptions> bad(4);
  bad[0].max_batch = 0;
  bad[1].prefill_chunk = 0;
  bad[2].kv_block_tokens = 6;
  bad[3].kv_blocks = -1;
  for (const auto& o : bad) {
    EXPECT_EQ(Scheduler::Start(std::make_unique<FakeRunner>(), o).status().code(),
              StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(Scheduler::Start(nullptr, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerTest, StoppingCancelsWhatIsQueuedOrRunning) {
  SchedulerOptions o;
  o.max_batch = 1;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b;
  ASSERT_TRUE(s->Submit(Request(4, 50), a.Callback()).ok());
  ASSERT_TRUE(s->Submit(Request(4, 50), b.Callback()).ok());
  ASSERT_TRUE(Eventually([&] { return s->Load().running == 1; }));
  s.reset();  // interrupts the held step
  ASSERT_TRUE(a.IsDone());
  ASSERT_TRUE(b.IsDone());
  EXPECT_EQ(a.last.finish_reason, "cancelled");
  EXPECT_EQ(b.last.finish_reason, "cancelled");
}

// --- Prefix caching: what a request shares with earlier ones is not computed again. ---

// A prompt of n letters (ids 1..26), starting at `first`.
InferenceRequest Letters(int64_t n, int32_t max_tokens, int first = 0) {
  InferenceRequest r = Request(n, max_tokens);
  for (int64_t i = 0; i < n; ++i) r.prompt[static_cast<size_t>(i)] = 1 + (first + i) % 26;
  return r;
}

// The positions a request's KV cache was given, over all steps, in order (`skip` of its steps
// are other requests' before it; each request here runs alone).
std::vector<int64_t> PositionsAfter(const std::vector<SeenStep>& steps, size_t first_step) {
  std::vector<int64_t> out;
  for (size_t i = first_step; i < steps.size(); ++i) {
    for (const auto& [kv, pos] : steps[i].positions) out.insert(out.end(), pos.begin(), pos.end());
  }
  return out;
}

TEST(SchedulerPrefixTest, ARepeatedPromptPrefillsOnlyWhatIsNotCached) {
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "prefix cache on" : "off");
    SchedulerOptions o;
    o.prefix_cache = cache;  // blocks of 16 positions
    auto [runner, s] = Start(o);
    ASSERT_TRUE(s);
    Outcome a, b;
    ASSERT_TRUE(s->Submit(Letters(40, 3), a.Callback()).ok());
    ASSERT_TRUE(a.Wait());
    const size_t a_steps = runner->steps().size();
    // Before b runs, its cost counts only the tokens it will prefill (1 of 40 with the cache:
    // two whole blocks and 7 positions of a's tail).
    const double other = s->EstimateMs(Letters(40, 0, 7).prompt, 0);
    const double same = s->EstimateMs(Letters(40, 0).prompt, 0);
    EXPECT_NEAR(same / other, cache ? 1.0 / 40 : 1.0, 1e-9);
    ASSERT_TRUE(s->Submit(Letters(40, 3), b.Callback()).ok());
    ASSERT_TRUE(b.Wait());
    const auto b_pos = PositionsAfter(runner->steps(), a_steps);
    ASSERT_FALSE(b_pos.empty());
    // a's KV holds positions 0..41 (40 prompt tokens, two answer tokens run): two full blocks
    // shared, and of the tail (32..41) the 7 positions up to b's last prompt token copied.
    EXPECT_EQ(b_pos.front(), cache ? 39 : 0);
    EXPECT_EQ(b.last.cached_tokens, cache ? 39 : 0);
    EXPECT_EQ(a.last.cached_tokens, 0);
    EXPECT_EQ(b.text, a.text);
    const SchedulerLoad l = s->Load();
    EXPECT_EQ(l.prefix_cache_queries, 80);
    EXPECT_EQ(l.prefix_cache_hits, cache ? 39 : 0);
    EXPECT_EQ(l.kv_blocks_cached, cache ? 3 : 0);  // two full blocks and a's tail
    // Cached blocks count as free room (the copy Load reads is made after the callback).
    EXPECT_TRUE(Eventually([&] { return s->Load().kv_blocks_free == l.kv_blocks_total; }));
  }
}

TEST(SchedulerPrefixTest, TheLastPromptTokenIsAlwaysComputed) {
  SchedulerOptions o;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  Outcome a, b;
  ASSERT_TRUE(s->Submit(Letters(32, 1), a.Callback()).ok());  // two full blocks
  ASSERT_TRUE(a.Wait());
  const size_t a_steps = runner->steps().size();
  ASSERT_TRUE(s->Submit(Letters(32, 1), b.Callback()).ok());
  ASSERT_TRUE(b.Wait());
  // Its logits are needed: the second block's first 15 positions are copied to b's own block,
  // and the last prompt token is computed there.
  EXPECT_EQ(PositionsAfter(runner->steps(), a_steps).front(), 31);
  EXPECT_EQ(b.last.cached_tokens, 31);
  EXPECT_EQ(b.text, a.text);
}

TEST(SchedulerPrefixTest, AFollowUpTurnReusesTheEarlierAnswer) {
  SchedulerOptions o;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  Outcome turn1, turn2;
  ASSERT_TRUE(s->Submit(Letters(20, 30), turn1.Callback()).ok());
  ASSERT_TRUE(turn1.Wait());
  ASSERT_EQ(turn1.last.completion_tokens, 30);
  // The next turn's prompt: the first, the answer (the fake's token after position p is letter
  // p + 1, so the letters run on), and 5 new tokens.
  InferenceRequest r = Letters(55, 4);
  for (size_t i = 50; i < 55; ++i) r.prompt[i] = 26;
  ASSERT_TRUE(s->Submit(std::move(r), turn2.Callback()).ok());
  ASSERT_TRUE(turn2.Wait());
  // The first turn's KV held 49 positions (the last answer token never ran): 3 full blocks
  // shared and its tail's one position (48) copied.
  EXPECT_EQ(turn2.last.cached_tokens, 49);
}

TEST(SchedulerPrefixTest, SharedBlocksCountOnceInAdmission) {
  for (const bool cache : {true, false}) {
    SCOPED_TRACE(cache ? "prefix cache on" : "off");
    SchedulerOptions o;
    o.prefix_cache = cache;
    o.kv_blocks = 7;  // one request of 64 + 16 positions takes 5 blocks
    auto [runner, s] = Start(o);
    ASSERT_TRUE(s);
    runner->Hold();
    Outcome a, b;
    ASSERT_TRUE(s->Submit(Letters(64, 16), a.Callback()).ok());
    runner->Allow(1);  // a's whole prompt: its four blocks are published
    ASSERT_TRUE(runner->WaitSteps(1));
    ASSERT_TRUE(s->Submit(Letters(64, 16), b.Callback()).ok());
    // b shares three blocks and needs two of its own (the first starts as a copy of 15 positions
    // of a's fourth): it joins a's batch. Without the cache it needs five and waits for a.
    bool together = false;
    ASSERT_TRUE(Eventually([&] {
      together = together || s->Load().running == 2;
      if (a.IsDone()) return true;
      runner->Allow(1);
      return false;
    }));
    runner->Release();
    ASSERT_TRUE(b.Wait());
    EXPECT_EQ(together, cache);
    EXPECT_EQ(b.text, a.text);
    EXPECT_EQ(b.last.cached_tokens, cache ? 63 : 0);
    EXPECT_TRUE(Eventually([&] { return s->Load().kv_blocks_free == 7; }));
  }
}

TEST(SchedulerPrefixTest, ConversationsStartingAtOnceComputeTheSharedPromptOnce) {
  SchedulerOptions o;
  o.prefill_chunk = 16;  // one block a step: the first takes it, the second waits its turn
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b;
  ASSERT_TRUE(s->Submit(Letters(64, 2), a.Callback()).ok());
  ASSERT_TRUE(s->Submit(Letters(64, 2), b.Callback()).ok());
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  // Both were admitted together, finding nothing; b took each block a published after the
  // step that computed it, and computed only its last block (its last token's logits).
  std::map<const KvCache*, std::vector<int64_t>> per_cache;
  for (const auto& st : runner->steps()) {
    for (const auto& [kv, pos] : st.positions) {
      per_cache[kv].insert(per_cache[kv].end(), pos.begin(), pos.end());
    }
  }
  ASSERT_EQ(per_cache.size(), 2u);
  std::vector<int64_t> firsts;
  for (const auto& [kv, pos] : per_cache) firsts.push_back(pos.front());
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 48}));
  EXPECT_EQ(a.last.cached_tokens + b.last.cached_tokens, 48);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(s->Load().prefix_cache_hits, 48);
  EXPECT_TRUE(Eventually([&] {
    const SchedulerLoad l = s->Load();
    return l.running == 0 && l.kv_blocks_free == l.kv_blocks_total;
  }));
}

TEST(SchedulerPrefixTest, CancellingTheCreatorLeavesTheSharersWhole) {
  SchedulerOptions o;
  auto [runner, s] = Start(o);
  ASSERT_TRUE(s);
  runner->Hold();
  Outcome a, b;
  auto ha = s->Submit(Letters(50, 40), a.Callback());
  ASSERT_TRUE(ha.ok());
  runner->Allow(1);
  ASSERT_TRUE(runner->WaitSteps(1));
  ASSERT_TRUE(s->Submit(Letters(50, 10), b.Callback()).ok());
  runner->Allow(1);
  ASSERT_TRUE(runner->WaitSteps(2));
  (*ha)->Cancel();
  runner->Release();
  ASSERT_TRUE(a.Wait());
  ASSERT_TRUE(b.Wait());
  EXPECT_EQ(a.last.finish_reason, "cancelled");
  EXPECT_EQ(b.last.finish_reason, "length");
  EXPECT_EQ(b.last.cached_tokens, 48);
  // Positions 50.. give letters 25, 26, 1, ... (the token after position p is letter p + 1).
  EXPECT_EQ(b.text, "yzabcdefgh");
  EXPECT_TRUE(Eventually([&] {
    const SchedulerLoad l = s->Load();
    return l.running == 0 && l.kv_blocks_free == l.kv_blocks_total;
  }));
}

}  // namespace
}  // namespace frugal
