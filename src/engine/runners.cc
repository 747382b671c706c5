// The two ModelRunners of the engine: its decoder, and the simulation (engine/model_runner.h).
#include <algorithm>
#include <chrono>
#include <mutex>

#include "common/thread_annotations.h"
#include "engine/engine_impl.h"
#include "engine/model_runner.h"

namespace frugal {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class EngineRunner final : public ModelRunner {
 public:
  explicit EngineRunner(EngineAccess::Impl& e) : e_(e) {}

  int64_t context_length() const override { return e_.n_ctx; }
  int64_t n_vocab() const override { return e_.llama->hparams().n_vocab; }
  int64_t kv_layers() const override { return e_.llama->hparams().n_layer; }
  int64_t kv_dim() const override { return e_.llama->kv_dim(); }
  KvType kv_type() const override { return e_.llama->kv_type(); }
  const Tokenizer& tokenizer() const override { return *e_.tokenizer; }

  Status Warmup(KvBlockPool& pool, double* prefill_ms, double* decode_ms) override {
    KvCache kv(pool);
    const int64_t n = std::min<int64_t>(32, e_.n_ctx - 4);
    if (n <= 0 || !kv.Reserve(n + 4)) return Status::Ok();  // no room: the first steps measure
    std::vector<int32_t> toks(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      toks[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 13) % n_vocab());
    }
    std::vector<float> logits;
    std::lock_guard<std::mutex> lock(e_.mu);
    auto t0 = Clock::now();
    FRUGAL_RETURN_IF_ERROR(e_.llama->Forward(toks, kv, *e_.pool, &logits, false));
    *prefill_ms = MsSince(t0) / static_cast<double>(n);
    t0 = Clock::now();
    for (int i = 0; i < 4; ++i) {
      FRUGAL_RETURN_IF_ERROR(e_.llama->Forward(std::span<const int32_t>(toks.data(), 1), kv,
                                               *e_.pool, &logits, false));
    }
    *decode_ms = MsSince(t0) / 4;
    return Status::Ok();
  }

  Status Step(const StepPlan& plan, std::vector<float>* logits) override {
    std::lock_guard<std::mutex> lock(e_.mu);
    return e_.llama->Step(plan.items, *e_.pool, logits);
  }

 private:
  EngineAccess::Impl& e_;
};

class SimulatedRunner final : public ModelRunner {
 public:
  SimulatedRunner(EngineAccess::Impl& e, const SimulationSpec& spec, std::vector<int32_t> canned)
      : e_(e), spec_(spec), model_(spec), canned_(std::move(canned)) {}

  int64_t context_length() const override { return e_.n_ctx; }
  int64_t n_vocab() const override { return e_.llama->hparams().n_vocab; }
  int64_t kv_layers() const override { return 1; }
  int64_t kv_dim() const override { return 1; }
  KvType kv_type() const override { return KvType::kF32; }
  const Tokenizer& tokenizer() const override { return *e_.tokenizer; }

  // What the warm-up would measure is what the spec says.
  Status Warmup(KvBlockPool&, double* prefill_ms, double* decode_ms) override {
    *prefill_ms = spec_.prefill_ms;
    *decode_ms = spec_.decode_ms;
    return Status::Ok();
  }

  Status Step(const StepPlan& plan, std::vector<float>* logits) override {
    logits->clear();
    const double ms = model_.StepMs(plan.prefill_tokens, plan.decode_sequences);
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double, std::milli>(ms));
    // A wait, not a sleep: shutting down does not sit out a long modelled step.
    MutexLock lock(mu_);
    while (!interrupted_ && cv_.WaitUntil(mu_, until)) {
    }
    return Status::Ok();
  }

  // A one-hot row would make the sampler pick this very token, after a pass over the whole
  // vocabulary that a fleet of simulated workers on a few cores cannot spare.
  std::optional<int32_t> ScriptedToken(int64_t index) const override {
    return canned_[static_cast<size_t>(index) % canned_.size()];
  }

  void Interrupt() override {
    {
      MutexLock lock(mu_);
      interrupted_ = true;
    }
    cv_.NotifyAll();
  }

 private:
  EngineAccess::Impl& e_;
  const SimulationSpec spec_;
  StepTimeModel model_;  // Step only (one thread)
  const std::vector<int32_t> canned_;
  Mutex mu_;
  CondVar cv_;
  bool interrupted_ FRUGAL_GUARDED_BY(mu_) = false;
};

}  // namespace

StatusOr<std::unique_ptr<ModelRunner>> MakeEngineRunner(Engine& engine) {
  EngineAccess::Impl& e = EngineAccess::Of(engine);
  if (!e.llama) return InvalidArgument("the model is an embedder: it cannot generate text");
  return std::unique_ptr<ModelRunner>(new EngineRunner(e));
}

StatusOr<std::unique_ptr<ModelRunner>> MakeSimulatedRunner(Engine& engine,
                                                           const SimulationSpec& spec) {
  EngineAccess::Impl& e = EngineAccess::Of(engine);
  if (!e.llama) return InvalidArgument("the model is an embedder: it cannot generate text");
  auto canned =
      e.tokenizer->Encode(kSimulatedAnswer, /*add_special=*/false, /*parse_special=*/false);
  if (canned.empty()) return Internal("the tokenizer encodes the simulated answer to no tokens");
  return std::unique_ptr<ModelRunner>(new SimulatedRunner(e, spec, std::move(canned)));
}

}  // namespace frugal
