// Prefix caching on the real default model (label `model`; skipped when models/ has not been
// fetched): every logits row a request gets with the prefix cache, shared, concurrent, evicted
// under memory pressure or left by a cancelled creator, equals bit for bit the row it gets with
// every prompt computed from its first token. scripts/test.sh runs it at each CPU level.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "frugal/engine.h"

namespace frugal {
namespace {

using namespace std::chrono_literals;

const char* kModel =
    FRUGAL_SOURCE_DIR "/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";

// The engine's decoder, keeping every logits row by request id.
class Recorder final : public ModelRunner {
 public:
  explicit Recorder(std::unique_ptr<ModelRunner> inner) : inner_(std::move(inner)) {}
  int64_t context_length() const override { return inner_->context_length(); }
  int64_t n_vocab() const override { return inner_->n_vocab(); }
  int64_t kv_layers() const override { return inner_->kv_layers(); }
  int64_t kv_dim() const override { return inner_->kv_dim(); }
  KvType kv_type() const override { return inner_->kv_type(); }
  const Tokenizer& tokenizer() const override { return inner_->tokenizer(); }
  Status Warmup(KvBlockPool& pool, double* prefill_ms, double* decode_ms) override {
    return inner_->Warmup(pool, prefill_ms, decode_ms);
  }
  Status Step(const StepPlan& plan, std::vector<float>* logits) override {
    Status st = inner_->Step(plan, logits);
    if (!st.ok()) return st;
    const auto v = static_cast<size_t>(n_vocab());
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t r = 0; r < plan.logit_requests.size(); ++r) {
      rows_[plan.logit_requests[r]].emplace_back(logits->begin() + static_cast<long>(r * v),
                                                 logits->begin() + static_cast<long>((r + 1) * v));
    }
    return st;
  }
  void Interrupt() override { inner_->Interrupt(); }
  std::map<uint64_t, std::vector<std::vector<float>>> rows() {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_;
  }

 private:
  std::unique_ptr<ModelRunner> inner_;
  std::mutex mu_;
  std::map<uint64_t, std::vector<std::vector<float>>> rows_;
};

struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  std::string text;
  bool done = false, any_text = false;
  InferenceEvent last;
  InferenceCallback Callback() {
    return [this](const InferenceEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (ev.kind == InferenceEvent::Kind::kText) {
        text += ev.text;
        any_text = true;
      } else {
        last = ev;
        done = true;
      }
      cv.notify_all();
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 120s, [&] { return done; });
  }
  bool WaitText() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 120s, [&] { return any_text || done; });
  }
};

struct Recorded {
  std::map<uint64_t, std::vector<std::vector<float>>> rows;
  std::map<uint64_t, std::string> text;
  SchedulerLoad load;
};

// The store's system prompt and the questions of a support conversation.
const char* kSystem =
    "You are the customer-service assistant of a small online shop. Shipping within the country "
    "costs 4.90 and is free from 49.00; parcels leave within two working days. Returns are "
    "accepted within 30 days of delivery if the item is unused; refunds reach the card within 5 "
    "to 7 days. Answer briefly and politely.\n";

Recorded Conversation(Engine& engine, bool prefix_cache, int64_t kv_blocks,
                      int64_t prefill_chunk = 256) {
  auto inner = MakeEngineRunner(engine);
  EXPECT_TRUE(inner.ok()) << inner.status().ToString();
  auto recorder = std::make_unique<Recorder>(std::move(inner).value());
  Recorder* rec = recorder.get();
  SchedulerOptions o;
  o.prefix_cache = prefix_cache;
  o.kv_block_tokens = 16;
  o.kv_blocks = kv_blocks;
  o.prefill_chunk = prefill_chunk;
  auto started = Scheduler::Start(std::move(recorder), o);
  EXPECT_TRUE(started.ok()) << started.status().ToString();
  Scheduler& s = **started;
  Recorded run;

  auto tokens = [&](const std::string& text) { return engine.EncodePrompt(text, false); };
  auto request = [&](uint64_t id, const std::string& text, int32_t max_tokens) {
    InferenceRequest r;
    r.id = id;
    r.prompt = tokens(text);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0;
    return r;
  };
  std::map<uint64_t, std::unique_ptr<Outcome>> out;
  auto submit = [&](uint64_t id, const std::string& text, int32_t max_tokens) {
    out[id] = std::make_unique<Outcome>();
    auto h = s.Submit(request(id, text, max_tokens), out[id]->Callback());
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return h.ok() ? *h : nullptr;
  };

  // A conversation: the follow-up turn carries the first answer (its blocks were published as
  // they filled) and ends mid-block.
  const std::string turn1 = std::string(kSystem) + "User: How much is shipping?\nAssistant:";
  submit(1, turn1, 12);
  EXPECT_TRUE(out[1]->Wait());
  submit(2, turn1 + out[1]->text + "\nUser: And to Austria?\nAssistant:", 12);
  EXPECT_TRUE(out[2]->Wait());

  // Three at once sharing a system prompt nobody has sent before, each with its own question:
  // the later ones take its blocks from the first as it computes them.
  for (uint64_t id : {3, 4, 5}) {
    submit(id,
           "Today is a public holiday, so parcels leave one day later.\n" + std::string(kSystem) +
               "User: question number " + std::to_string(id) + " about my refund?\nAssistant:",
           10);
  }
  for (uint64_t id : {3, 4, 5}) EXPECT_TRUE(out[id]->Wait());

  // A sharer of a running sequence's blocks, whose creator is then cancelled.
  const std::string long_q = std::string(kSystem) + "User: Can I return shoes I wore once?\n";
  auto creator = submit(6, long_q, 40);
  EXPECT_TRUE(out[6]->WaitText());  // its prompt is in the cache now
  submit(7, long_q, 12);
  EXPECT_TRUE(out[7]->WaitText());
  if (creator) creator->Cancel();
  EXPECT_TRUE(out[6]->Wait());
  EXPECT_TRUE(out[7]->Wait());

  // The first conversation again: with a small pool, some of its blocks were evicted meanwhile.
  submit(8, turn1, 12);
  EXPECT_TRUE(out[8]->Wait());

  run.rows = rec->rows();
  for (auto& [id, o] : out) run.text[id] = o->text;
  run.load = s.Load();
  return run;
}

void ExpectSameRows(const Recorded& ref, const Recorded& got, const char* what) {
  for (const auto& [id, rows] : ref.rows) {
    SCOPED_TRACE(std::string(what) + ", request " + std::to_string(id));
    ASSERT_TRUE(got.rows.count(id));
    const auto& g = got.rows.at(id);
    // The cancelled creator (6) stops after a timing-dependent number of tokens.
    const size_t n = id == 6 ? std::min(rows.size(), g.size()) : rows.size();
    if (id != 6) {
      ASSERT_EQ(g.size(), rows.size());
      EXPECT_EQ(got.text.at(id), ref.text.at(id));
    }
    ASSERT_GE(n, 1u);
    for (size_t r = 0; r < n; ++r) {
      ASSERT_EQ(g[r].size(), rows[r].size());
      ASSERT_EQ(0, std::memcmp(g[r].data(), rows[r].data(), rows[r].size() * sizeof(float)))
          << "logits row " << r;
    }
  }
}

TEST(PrefixCacheModelTest, ReuseChangesNoLogitsRow) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "run scripts/get-models.sh first";
  EngineOptions eo;
  eo.model_path = kModel;
  eo.threads = 2;
  eo.context_length = 1024;
  auto engine = Engine::Open(eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();

  const Recorded ref = Conversation(**engine, /*prefix_cache=*/false, /*kv_blocks=*/64);
  EXPECT_EQ(ref.load.prefix_cache_hits, 0);
  ASSERT_EQ(ref.rows.size(), 8u);

  const Recorded roomy = Conversation(**engine, true, 64);
  // The cache did its work: the follow-up turn, the sharers and the repeated conversation found
  // most of their prompts in it.
  EXPECT_GT(roomy.load.prefix_cache_hits, roomy.load.prefix_cache_queries / 3);
  EXPECT_EQ(roomy.load.kv_blocks_evicted, 0);
  ExpectSameRows(ref, roomy, "64 blocks");

  // 14 blocks: the three concurrent requests share the system prompt's blocks to fit, and new
  // prompts evict the least recently used chains. Prefill chunks of 32 tokens: the concurrent
  // ones take the system prompt's blocks from the first as it computes them (catching up).
  const Recorded tight = Conversation(**engine, true, 14, 32);
  EXPECT_GT(tight.load.prefix_cache_hits, 0);
  EXPECT_GT(tight.load.kv_blocks_evicted, 0);
  ExpectSameRows(ref, tight, "14 blocks");
}

}  // namespace
}  // namespace frugal
