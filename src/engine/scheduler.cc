#include "engine/scheduler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "engine/text_stream.h"

namespace frugal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Weight of a new measurement in the latency moving averages.
constexpr double kEmaAlpha = 0.2;

}  // namespace

struct Scheduler::Sequence {
  Sequence(InferenceRequest r, InferenceCallback cb, const Tokenizer& tok)
      : req(std::move(r)), on_event(std::move(cb)), sampler(req.sampling), text(tok, req.stop) {}

  InferenceRequest req;
  InferenceCallback on_event;
  std::shared_ptr<InferenceHandle> handle = std::make_shared<InferenceHandle>();
  Sampler sampler;
  TextStream text;
  std::unique_ptr<KvCache> kv;   // paged; made at admission
  std::vector<int32_t> history;  // prompt + generated, for the sampler's penalty
  int64_t prefilled = 0;         // prompt tokens already in the cache
  // Prompt tokens the prefix cache holds: estimated at Submit, taken at admission.
  int64_t prefix_hit = 0;
  int64_t generated = 0;
  int32_t pending = -1;  // sampled token still to be run (decode phase)
  bool done = false;
  Clock::time_point submitted, admitted, first_token;

  int64_t prompt_left() const {
    return static_cast<int64_t>(req.prompt.size()) - std::max(prefilled, prefix_hit);
  }
  int64_t decode_left() const { return req.max_tokens - generated; }
};

Scheduler::Scheduler(std::unique_ptr<ModelRunner> runner, const SchedulerOptions& options)
    : runner_(std::move(runner)), opt_(options) {}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Start(Engine& engine,
                                                      const SchedulerOptions& given) {
  SchedulerOptions options = given;
  std::unique_ptr<ModelRunner> runner;
  if (options.simulation) {
    if (options.simulation->max_batch > 0) options.max_batch = options.simulation->max_batch;
    FRUGAL_ASSIGN_OR_RETURN(runner, MakeSimulatedRunner(engine, *options.simulation));
  } else {
    FRUGAL_ASSIGN_OR_RETURN(runner, MakeEngineRunner(engine));
  }
  return Start(std::move(runner), options);
}

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Start(std::unique_ptr<ModelRunner> runner,
                                                      const SchedulerOptions& options) {
  if (!runner) return InvalidArgument("no model runner");
  if (options.max_batch < 1) return InvalidArgument("max batch must be >= 1");
  if (options.max_queue < 0) return InvalidArgument("max queue must be >= 0");
  if (options.prefill_chunk < 1) return InvalidArgument("prefill chunk must be >= 1");
  if (options.kv_block_tokens < 4 || options.kv_block_tokens % 4 != 0) {
    return InvalidArgument("KV block size must be a positive multiple of 4 tokens");
  }
  if (options.kv_blocks < 0) return InvalidArgument("KV blocks must be >= 0");
  auto s = std::unique_ptr<Scheduler>(new Scheduler(std::move(runner), options));
  ModelRunner& r = *s->runner_;
  s->n_ctx_ = r.context_length();
  const int64_t bt = options.kv_block_tokens;
  int64_t blocks = options.kv_blocks;
  const size_t block_bytes = KvBlockPool::BlockBytes(r.kv_layers(), r.kv_dim(), bt, r.kv_type());
  if (blocks == 0) {
    const int64_t per_seq = (s->n_ctx_ + bt - 1) / bt;
    const double ram =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
    const auto cap = static_cast<int64_t>(0.25 * ram / static_cast<double>(block_bytes));
    blocks = std::max<int64_t>(per_seq, std::min<int64_t>(per_seq * options.max_batch, cap));
  }
  s->pool_ = std::make_unique<KvBlockPool>(r.kv_layers(), r.kv_dim(), bt, blocks, r.kv_type());
  double prefill_ms = 0, decode_ms = 0;
  FRUGAL_RETURN_IF_ERROR(r.Warmup(*s->pool_, &prefill_ms, &decode_ms));
  {
    MutexLock lock(s->mu_);
    s->kv_free_ = blocks;
    s->prefill_ms_ = prefill_ms;
    s->decode_ms_ = decode_ms;
  }
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

Scheduler::~Scheduler() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  runner_->Interrupt();
  if (thread_.joinable()) thread_.join();
}

int64_t Scheduler::CachedPrefix(std::span<const int32_t> prompt) const {
  if (!opt_.prefix_cache || prompt.size() < 2) return 0;
  return pool_->MatchPositions(prompt.first(prompt.size() - 1));
}

double Scheduler::EstimateMs(std::span<const int32_t> prompt, int64_t max_tokens) const {
  const auto prefill = static_cast<int64_t>(prompt.size()) - CachedPrefix(prompt);
  MutexLock lock(mu_);
  return static_cast<double>(prefill) * prefill_ms_ + static_cast<double>(max_tokens) * decode_ms_;
}

double Scheduler::BacklogMsLocked() const {
  return static_cast<double>(pending_prefill_tokens_) * prefill_ms_ +
         static_cast<double>(pending_decode_tokens_) * decode_ms_;
}

StatusOr<std::shared_ptr<InferenceHandle>> Scheduler::Submit(InferenceRequest req,
                                                             InferenceCallback on_event) {
  const auto n_prompt = static_cast<int64_t>(req.prompt.size());
  if (n_prompt == 0) return InvalidArgument("the prompt is empty");
  if (req.max_tokens < 1) return InvalidArgument("max_tokens must be at least 1");
  if (n_prompt + req.max_tokens > n_ctx_) {
    return OutOfRange("this model's context is " + std::to_string(n_ctx_) +
                      " tokens; the prompt has " + std::to_string(n_prompt) +
                      " and max_tokens asks for " + std::to_string(req.max_tokens) + " more");
  }
  for (const auto& s : req.stop) {
    if (s.empty()) return InvalidArgument("stop strings must not be empty");
  }
  const int64_t need_blocks =
      (n_prompt + req.max_tokens + opt_.kv_block_tokens - 1) / opt_.kv_block_tokens;
  if (need_blocks > pool_->total_blocks()) {
    return OutOfRange("the request needs " + std::to_string(need_blocks) +
                      " KV blocks; the pool has " + std::to_string(pool_->total_blocks()));
  }
  const Tokenizer& tok = runner_->tokenizer();
  const int64_t cached = CachedPrefix(req.prompt);
  auto seq = std::make_unique<Sequence>(std::move(req), std::move(on_event), tok);
  seq->submitted = Clock::now();
  seq->prefix_hit = cached;
  std::shared_ptr<InferenceHandle> handle = seq->handle;
  {
    MutexLock lock(mu_);
    if (stop_) return ResourceExhausted("the server is shutting down");
    // max_queue bounds the requests that wait; one that would run at once never waits.
    const bool would_wait = !waiting_.empty() || running_count_ >= opt_.max_batch;
    if (static_cast<int64_t>(waiting_.size()) >= opt_.max_queue && would_wait) {
      return ResourceExhausted("the queue is full (" + std::to_string(opt_.max_queue) +
                               " requests waiting)");
    }
    const double cost =
        static_cast<double>(n_prompt - cached) * prefill_ms_ + seq->req.max_tokens * decode_ms_;
    // With nothing ahead a request is always taken: refusing it could never clear on retry.
    const double ahead = BacklogMsLocked();
    if (opt_.max_backlog_ms > 0 && ahead > 0 && ahead + cost > opt_.max_backlog_ms) {
      return ResourceExhausted("the estimated backlog would exceed " +
                               std::to_string(static_cast<int64_t>(opt_.max_backlog_ms)) + " ms");
    }
    pending_prefill_tokens_ += n_prompt - cached;
    pending_decode_tokens_ += seq->req.max_tokens;
    waiting_.push_back(std::move(seq));
  }
  cv_.NotifyOne();
  return handle;
}

SchedulerLoad Scheduler::Load() const {
  MutexLock lock(mu_);
  SchedulerLoad l;
  l.waiting = static_cast<int64_t>(waiting_.size());
  l.running = running_count_;
  l.backlog_ms = BacklogMsLocked();
  l.prefill_ms_per_token = prefill_ms_;
  l.decode_ms_per_token = decode_ms_;
  l.kv_blocks_free = kv_free_;
  l.kv_blocks_total = pool_->total_blocks();
  l.kv_blocks_cached = pool_->cached_blocks();
  l.kv_blocks_evicted = pool_->evicted_blocks();
  l.kv_block_tokens = opt_.kv_block_tokens;
  l.prefix_cache_queries = prefix_queries_;
  l.prefix_cache_hits = prefix_hits_;
  l.max_queue = opt_.max_queue;
  l.busy_seconds = busy_ms_ / 1e3;
  return l;
}

void Scheduler::Finish(Sequence& s, const std::string& reason, Status status) {
  if (s.done) return;
  s.done = true;
  const bool admitted = s.admitted != Clock::time_point{};
  if (s.kv) {
    // Its last, partly filled block stays cached for the next turn (KvCache::PublishTail).
    if (opt_.prefix_cache) s.kv->PublishTail(s.history);
    s.kv->Release();
  }
  InferenceEvent ev;
  ev.kind = InferenceEvent::Kind::kText;
  if (reason == "stop" || reason == "length") {
    ev.text = s.text.Finish();
    if (!ev.text.empty()) s.on_event(ev);
  }
  const auto now = Clock::now();
  ev.kind = InferenceEvent::Kind::kDone;
  ev.text.clear();
  ev.finish_reason = reason;
  ev.status = std::move(status);
  ev.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
  ev.admitted = admitted;
  ev.cached_tokens = admitted ? s.prefix_hit : 0;
  ev.completion_tokens = s.generated;
  ev.queue_seconds = Seconds(s.submitted, admitted ? s.admitted : now);
  ev.ttft_seconds = s.first_token != Clock::time_point{} ? Seconds(s.submitted, s.first_token) : 0;
  ev.total_seconds = Seconds(s.submitted, now);
  {
    MutexLock lock(mu_);
    pending_prefill_tokens_ -= s.prompt_left();
    pending_decode_tokens_ -= s.decode_left();
  }
  s.on_event(ev);
}

void Scheduler::Admit() {
  const auto now = Clock::now();
  std::vector<std::unique_ptr<Sequence>> dropped;
  {
    MutexLock lock(mu_);
    // Cancelled or expired requests leave the queue wherever they stand.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if ((*it)->handle->cancelled() || now > (*it)->req.deadline) {
        dropped.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    // First come, first served: the head waits for blocks rather than being overtaken.
    while (!waiting_.empty() && static_cast<int>(running_.size()) < opt_.max_batch) {
      Sequence& s = *waiting_.front();
      s.kv = std::make_unique<KvCache>(*pool_);
      const auto n_prompt = static_cast<int64_t>(s.req.prompt.size());
      // The longest cached prefix, never the last prompt token: its logits are needed. Shared
      // blocks are referenced first, so Reserve asks the pool only for the rest.
      const int64_t hit =
          opt_.prefix_cache
              ? s.kv->AdoptPrefix(
                    std::span<const int32_t>(s.req.prompt).first(static_cast<size_t>(n_prompt - 1)))
              : 0;
      if (!s.kv->Reserve(n_prompt + s.req.max_tokens)) {
        s.kv.reset();  // the shared blocks' references go back
        break;
      }
      pending_prefill_tokens_ -= hit - s.prefix_hit;  // the estimate made at Submit, corrected
      s.prefix_hit = hit;
      s.prefilled = hit;
      prefix_queries_ += n_prompt;
      prefix_hits_ += hit;
      s.admitted = now;
      s.history = s.req.prompt;
      running_.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
  }
  for (auto& s : dropped) {
    if (s->handle->cancelled()) {
      Finish(*s, "cancelled", Status::Ok());
    } else {
      Finish(*s, "timeout", DeadlineExceeded("the request waited past its deadline"));
    }
  }
}

void Scheduler::UpdateLatencies(int64_t prefill_tokens, int64_t decode_tokens, double ms) {
  MutexLock lock(mu_);
  busy_ms_ += ms;
  auto ema = [](double& avg, double x) {
    avg = avg > 0 ? (1 - kEmaAlpha) * avg + kEmaAlpha * x : x;
  };
  if (prefill_tokens == 0 && decode_tokens > 0) {
    ema(decode_ms_, ms / static_cast<double>(decode_tokens));
  } else if (prefill_tokens > 0) {
    // Mixed steps: what the decode tokens did not take is the prefill's.
    const double rest = ms - static_cast<double>(decode_tokens) * decode_ms_;
    if (rest > 0) ema(prefill_ms_, rest / static_cast<double>(prefill_tokens));
  }
}

StepPlan Scheduler::PlanStep(std::vector<Sequence*>* logit_owner) const {
  StepPlan plan;
  for (const auto& s : running_) {
    if (s->pending >= 0) {
      plan.items.push_back({s->pending, s->kv.get(), s->kv->size(), true});
      logit_owner->push_back(s.get());
      plan.logit_requests.push_back(s->req.id);
      ++plan.decode_sequences;
    }
  }
  int64_t budget = opt_.prefill_chunk;
  for (const auto& s : running_) {
    if (budget == 0) break;
    if (s->pending >= 0 || s->prompt_left() == 0) continue;
    const int64_t c = std::min(budget, s->prompt_left());
    for (int64_t i = 0; i < c; ++i) {
      const bool last = s->prefilled + i + 1 == static_cast<int64_t>(s->req.prompt.size());
      plan.items.push_back({s->req.prompt[static_cast<size_t>(s->prefilled + i)], s->kv.get(),
                            s->kv->size() + i, last});
      if (last) {
        logit_owner->push_back(s.get());
        plan.logit_requests.push_back(s->req.id);
      }
    }
    budget -= c;
    plan.prefill_tokens += c;
  }
  return plan;
}

bool Scheduler::RunStep() {
  const auto now = Clock::now();
  // Cancelled, expired: out before the step, blocks back to the pool.
  for (auto& s : running_) {
    if (s->handle->cancelled()) {
      Finish(*s, "cancelled", Status::Ok());
    } else if (now > s->req.deadline) {
      Finish(*s, "timeout", DeadlineExceeded("the request ran past its deadline"));
    }
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });

  // A sequence still to prefill whose next blocks another one has just published (several
  // conversations starting at once with the same system prompt: the first one's chunks) takes
  // them instead of computing them again.
  if (opt_.prefix_cache) {
    for (auto& s : running_) {
      if (s->pending >= 0 || s->prompt_left() <= 1) continue;
      const auto n_prompt = static_cast<size_t>(s->req.prompt.size());
      const int64_t gained =
          s->kv->ExtendPrefix(std::span<const int32_t>(s->req.prompt).first(n_prompt - 1));
      if (gained == 0) continue;
      s->prefix_hit += gained;
      MutexLock lock(mu_);
      pending_prefill_tokens_ -= gained;
      s->prefilled += gained;
      prefix_hits_ += gained;
    }
  }
  std::vector<Sequence*> logit_owner;  // per logits row
  const StepPlan plan = PlanStep(&logit_owner);
  {
    MutexLock lock(mu_);
    running_count_ = static_cast<int64_t>(running_.size());
    kv_free_ = pool_->free_blocks();
  }
  if (plan.items.empty()) return false;

  std::vector<float> logits;
  const auto t0 = Clock::now();
  const Status st = runner_->Step(plan, &logits);
  if (!st.ok()) {
    for (auto& s : running_) Finish(*s, "error", st);
    running_.clear();
    return true;
  }
  UpdateLatencies(plan.prefill_tokens, plan.decode_sequences, 1e3 * Seconds(t0, Clock::now()));
  // Positions advance: decode tokens by one, prefilling sequences by their chunk.
  for (const auto& it : plan.items) it.kv->set_size(it.pos + 1);
  // Blocks this step filled join the prefix index (history holds the token at each position).
  if (opt_.prefix_cache) {
    for (auto& s : running_) s->kv->PublishFullBlocks(s->history);
  }
  {
    MutexLock lock(mu_);
    for (auto& s : running_) {
      if (s->pending < 0) {
        pending_prefill_tokens_ -= s->kv->size() - s->prefilled;
        s->prefilled = s->kv->size();
      }
    }
  }

  const Tokenizer& tok = runner_->tokenizer();
  const int64_t n_vocab = runner_->n_vocab();
  for (size_t r = 0; r < logit_owner.size(); ++r) {
    Sequence& s = *logit_owner[r];
    if (s.first_token == Clock::time_point{}) s.first_token = Clock::now();
    int32_t next = 0;
    if (auto scripted = runner_->ScriptedToken(s.generated)) {
      next = *scripted;
    } else {
      if (logits.size() < (r + 1) * static_cast<size_t>(n_vocab)) {
        Finish(s, "error", Internal("the model runner returned fewer logits rows than asked for"));
        continue;
      }
      std::span<float> row(logits.data() + r * static_cast<size_t>(n_vocab),
                           static_cast<size_t>(n_vocab));
      next = s.sampler.Sample(row, s.history);
    }
    s.pending = -1;
    if (tok.IsEndOfGeneration(next)) {
      Finish(s, "stop", Status::Ok());
      continue;
    }
    s.history.push_back(next);
    ++s.generated;
    {
      MutexLock lock(mu_);
      --pending_decode_tokens_;
    }
    bool stopped = false;
    InferenceEvent ev;
    ev.text = s.text.Push(next, &stopped);
    if (!ev.text.empty()) s.on_event(ev);
    if (stopped) {
      Finish(s, "stop", Status::Ok());
    } else if (s.generated >= s.req.max_tokens) {
      Finish(s, "length", Status::Ok());
    } else {
      s.pending = next;  // runs through the model in the next step
    }
  }
  std::erase_if(running_, [](const auto& s) { return s->done; });
  {
    MutexLock lock(mu_);
    running_count_ = static_cast<int64_t>(running_.size());
    kv_free_ = pool_->free_blocks();
  }
  return true;
}

void Scheduler::Loop() {
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stop_) break;
      if (running_.empty()) {
        // Idle, or the queue head waits for blocks: sleep until a submit, at most 20 ms
        // (cancellations and deadlines of waiting requests are checked on wake-up).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
        while (!stop_ && waiting_.empty() && cv_.WaitUntil(mu_, deadline)) {
        }
        if (stop_) break;
      }
    }
    Admit();
    RunStep();
  }
  // Shutting down: everything still here ends as cancelled.
  std::deque<std::unique_ptr<Sequence>> rest;
  {
    MutexLock lock(mu_);
    rest.swap(waiting_);
  }
  for (auto& s : rest) Finish(*s, "cancelled", Status::Ok());
  for (auto& s : running_) Finish(*s, "cancelled", Status::Ok());
  running_.clear();
}

}  // namespace frugal
