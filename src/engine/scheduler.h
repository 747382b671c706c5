// Continuous batching for the worker: one scheduler thread runs the decoder step by step.
//
// Each step runs, as one batched pass (LlamaModel::Step), one decode token of every running
// sequence plus up to `prefill_chunk` prompt tokens of sequences still prefilling, so a long
// prompt never stalls the others' decoding. New requests join between steps. KV memory comes
// from a paged pool (KvBlockPool); a request is admitted when blocks for its prompt plus
// max_tokens are free (first come, first served; it waits otherwise, never failing others).
//
// Prefix caching (on unless SchedulerOptions::prefix_cache is false): every full block a
// sequence has computed (prompt or answer) is published in the pool's prefix index after the
// step that filled it, and a new request starts from the longest published chain matching its
// prompt, prefilling only the rest (at least its last token, whose logits it needs). Shared
// blocks count once in admission: a request needs free blocks only for what it does not share.
// Unreferenced cached blocks are evicted least-recently-used when a request needs room. The
// keys and values reused are the ones the request would have computed (each row of a step is
// computed alone, bit for bit), so answers and logits do not change.
//
// The load the gateway balances on is measured here: per-token prefill and decode latencies
// (moving averages of measured steps) and the backlog: the estimated milliseconds to finish all
// waiting and running work at those latencies.
//
// The scheduler plans each step; a ModelRunner (engine/model_runner.h) runs it: the engine's
// decoder, or with a simulation spec (engine/simulate.h) a runner that waits the modelled time
// and answers a canned text, so batching, admission and the measured latencies stay real.
//
// Thread safety: Submit, Load and Cancel may be called from any thread. Event callbacks run on
// the scheduler thread and must return quickly (post the work elsewhere).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "engine/simulate.h"
#include "frugal/engine.h"
#include "frugal/status.h"
#include "models/kv_cache.h"

namespace frugal {

struct SchedulerOptions {
  int max_batch = 16;            // sequences running at once
  int64_t max_queue = 500;       // requests waiting; beyond it Submit answers Unavailable
  double max_backlog_ms = 0;     // Unavailable when work ahead + this request's estimate would
                                 // exceed it (never when nothing is ahead); 0 = off
  int64_t prefill_chunk = 256;   // prompt tokens per step, over all prefilling sequences
  int64_t kv_block_tokens = 16;  // positions per KV block (a multiple of 4)
  int64_t kv_blocks = 0;  // blocks in the pool; 0 = max_batch full contexts, capped at 1/4 of RAM
  bool prefix_cache = true;  // reuse the KV of earlier prompts' full blocks (--no-prefix-cache)
  // A test instrument: the model's tokenizer and context are used, its weights never. Its
  // max_batch, when given, replaces the one above.
  std::optional<SimulationSpec> simulation;
};

// A generation request in tokens: what the engine loop sees (no JSON, no HTTP).
struct InferenceRequest {
  uint64_t id = 0;                // the caller's, passed to the runner with each logits row
  std::vector<int32_t> prompt;    // token ids, BOS included (Engine::EncodePrompt)
  int32_t max_tokens = 256;       // prompt + max_tokens must fit the context
  std::vector<std::string> stop;  // generation ends before any of these strings
  SamplingParams sampling;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Delivered on the scheduler thread, in order: any number of kText, then exactly one kDone.
struct InferenceEvent {
  enum class Kind { kText, kDone };
  Kind kind = Kind::kText;
  std::string text;  // kText: the next piece of the answer
  // kDone:
  std::string finish_reason;  // "stop", "length", "cancelled", "timeout", "error"
  Status status;              // not ok for "timeout" (DeadlineExceeded) and "error"
  int64_t prompt_tokens = 0;
  bool admitted = false;      // it reached the running batch (its prompt was looked up)
  int64_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  int64_t completion_tokens = 0;
  double queue_seconds = 0;  // submit -> admitted
  double ttft_seconds = 0;   // submit -> first token sampled (0 if none)
  double total_seconds = 0;  // submit -> done
};
using InferenceCallback = std::function<void(const InferenceEvent&)>;

// Cancels its request (a client that went away): the sequence leaves within one step and its
// KV blocks go back to the pool; the callback still gets kDone with "cancelled".
class InferenceHandle {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

struct SchedulerLoad {
  int64_t waiting = 0;              // requests queued, not yet admitted
  int64_t running = 0;              // sequences in the batch
  double backlog_ms = 0;            // estimated time to finish all waiting and running work
  double prefill_ms_per_token = 0;  // moving averages of measured steps
  double decode_ms_per_token = 0;   // machine time per generated token at the current batch
  int64_t kv_blocks_free = 0;       // free or evictable (cached, unreferenced)
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_cached = 0;   // in the prefix index, referenced or not
  int64_t kv_blocks_evicted = 0;  // cached blocks evicted for room since start
  int64_t kv_block_tokens = 0;
  // Prefix cache, in prompt tokens since start (vLLM's prefix_cache_queries / _hits): tokens of
  // admitted prompts, and of them those whose KV was reused.
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  int64_t max_queue = 0;
  // Wall time spent in model steps since start: the machine time the answers cost (the rest of
  // the time the worker idled). Answers per busy second compare configurations on the same
  // traffic whatever the offered rate.
  double busy_seconds = 0;
};

class Scheduler {
 public:
  // Starts the scheduler thread on a loaded decoder engine (which must outlive it): its decoder,
  // or the simulation when options.simulation is set. Measures the per-token latencies once with
  // a short warm-up so the first load reports are not zero.
  static StatusOr<std::unique_ptr<Scheduler>> Start(Engine& engine,
                                                    const SchedulerOptions& options);
  // The same on any runner (the tests' fakes).
  static StatusOr<std::unique_ptr<Scheduler>> Start(std::unique_ptr<ModelRunner> runner,
                                                    const SchedulerOptions& options);
  // Stops the thread; requests still queued or running end with "cancelled".
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Unavailable when the queue is full or the backlog estimate is over
  // max_backlog_ms (answer 503 + Retry-After); InvalidArgument / OutOfRange when the request can
  // never run (empty prompt, prompt + max_tokens beyond the context).
  StatusOr<std::shared_ptr<InferenceHandle>> Submit(InferenceRequest request,
                                                    InferenceCallback on_event);

  SchedulerLoad Load() const;
  // Estimated cost of a request at the current latencies, in milliseconds: only the prompt
  // tokens it would prefill (those past its longest cached prefix now) count.
  double EstimateMs(std::span<const int32_t> prompt, int64_t max_tokens) const;
  int64_t context_length() const { return n_ctx_; }

 private:
  struct Sequence;
  Scheduler(std::unique_ptr<ModelRunner> runner, const SchedulerOptions& options);
  void Loop();
  // The next step: decode tokens of the running sequences, then prompt chunks within the prefill
  // budget; `logit_owner` gets the sequence of each logits row.
  StepPlan PlanStep(std::vector<Sequence*>* logit_owner) const;
  // One step over the running sequences; false when there was nothing to run.
  bool RunStep();
  void Admit();
  void Finish(Sequence& s, const std::string& reason, Status status);
  double BacklogMsLocked() const FRUGAL_REQUIRES(mu_);
  // Prompt tokens whose KV the prefix cache holds now (whole blocks, never the last token).
  int64_t CachedPrefix(std::span<const int32_t> prompt) const;
  void UpdateLatencies(int64_t prefill_tokens, int64_t decode_tokens, double ms);

  const std::unique_ptr<ModelRunner> runner_;
  const SchedulerOptions opt_;
  int64_t n_ctx_ = 0;
  // Made at Start. Its bookkeeping locks itself (Submit asks MatchLength); caches and block
  // contents are the scheduler thread's.
  std::unique_ptr<KvBlockPool> pool_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::unique_ptr<Sequence>> waiting_ FRUGAL_GUARDED_BY(mu_);
  bool stop_ FRUGAL_GUARDED_BY(mu_) = false;
  // Work still to do per phase, in tokens, for the backlog estimate.
  int64_t pending_prefill_tokens_ FRUGAL_GUARDED_BY(mu_) = 0;
  int64_t pending_decode_tokens_ FRUGAL_GUARDED_BY(mu_) = 0;
  // Copies for Load.
  int64_t running_count_ FRUGAL_GUARDED_BY(mu_) = 0;
  int64_t kv_free_ FRUGAL_GUARDED_BY(mu_) = 0;
  double prefill_ms_ FRUGAL_GUARDED_BY(mu_) = 0;
  double decode_ms_ FRUGAL_GUARDED_BY(mu_) = 0;
  int64_t prefix_queries_ FRUGAL_GUARDED_BY(mu_) = 0;
  int64_t prefix_hits_ FRUGAL_GUARDED_BY(mu_) = 0;
  double busy_ms_ FRUGAL_GUARDED_BY(mu_) = 0;

  std::vector<std::unique_ptr<Sequence>> running_;  // scheduler thread only
  std::thread thread_;
};

}  // namespace frugal
