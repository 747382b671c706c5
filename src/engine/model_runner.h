// What the scheduler asks of a model, so that planning (which sequences, which tokens, how much
// KV) is apart from execution (the batched pass). The scheduler plans a step; a ModelRunner runs
// it. Three implement it: the real decoder of an Engine, the simulation of `frugal serve
// --simulate` (engine/simulate.h), and the unit tests' fakes, so admission, chunked prefill, KV
// waits and cancellation are tested without weights.
//
// Thread safety: the scheduler calls Warmup and Step from one thread at a time; Interrupt may be
// called from any thread while a Step runs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/simulate.h"
#include "frugal/engine.h"
#include "frugal/status.h"
#include "models/kv_cache.h"
#include "models/llama.h"

namespace frugal {

class Tokenizer;

using StepItem = LlamaModel::StepItem;

// One step as the scheduler planned it: decode tokens of running sequences first, then prompt
// chunks within the step's prefill budget.
struct StepPlan {
  std::vector<StepItem> items;
  int64_t prefill_tokens = 0;    // prompt tokens in items
  int64_t decode_sequences = 0;  // sequences decoding one token in items
  // The InferenceRequest::id of each logits row, in order (for runners that trace requests).
  std::vector<uint64_t> logit_requests;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual int64_t context_length() const = 0;
  virtual int64_t n_vocab() const = 0;
  // The storage one position needs in a KV block: layers x floats per layer (1 x 1 for a runner
  // that never reads the cache, so a big pool only counts blocks).
  virtual int64_t kv_layers() const = 0;
  virtual int64_t kv_dim() const = 0;
  // How the pool's blocks store keys and values.
  virtual KvType kv_type() const = 0;
  // Turns tokens into text for the stream and says which tokens end generation.
  virtual const Tokenizer& tokenizer() const = 0;

  // Seeds the per-token latency estimates, in milliseconds: measured on a short prefill and a
  // few decode steps (scratch KV from `pool`), or the figures of a model of the machine.
  virtual Status Warmup(KvBlockPool& pool, double* prefill_ms, double* decode_ms) = 0;
  // Runs the plan: writes each item's keys/values and, for each item that asks for logits, in
  // order, one row of n_vocab() floats into *logits (left empty by a scripted runner).
  virtual Status Step(const StepPlan& plan, std::vector<float>* logits) = 0;
  // A scripted runner's answer: the token a sequence gets as its `index`-th generated token,
  // instead of sampling logits. nullopt: sample.
  virtual std::optional<int32_t> ScriptedToken(int64_t index) const {
    (void)index;
    return std::nullopt;
  }
  // Cuts a Step in progress short (the scheduler is stopping) and every later one; a runner
  // whose step cannot be interrupted ignores it.
  virtual void Interrupt() {}
};

// The engine's decoder (InvalidArgument for an embedder). The engine must outlive the runner;
// each step holds the engine's lock.
StatusOr<std::unique_ptr<ModelRunner>> MakeEngineRunner(Engine& engine);
// The simulation: the engine's tokenizer and context, never its weights; each step waits the
// modelled time and the answer is kSimulatedAnswer, cycled.
StatusOr<std::unique_ptr<ModelRunner>> MakeSimulatedRunner(Engine& engine,
                                                           const SimulationSpec& spec);

}  // namespace frugal
