#include "server/worker.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/openai.h"
#include "api/openai_response.h"
#include "common/metrics.h"
#include "common/thread_annotations.h"
#include "http/auth.h"
#include "http/json_limits.h"

namespace frugal::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using api::CompletionParams;
using api::NewCompletionId;
using api::ParseCompletionRequest;
using api::ParseEmbeddingRequest;

int HttpStatusFor(const Status& st) {
  switch (st.code()) {
    case StatusCode::kResourceExhausted:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kInternal:
    case StatusCode::kIoError:
      return 500;
    default:
      return 400;
  }
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Base64Floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // x86-64: little-endian, as OpenAI's format
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const auto b0 = static_cast<uint8_t>(bytes[i]);
    const auto b1 = i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) : 0;
    const auto b2 = i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0;
    out += kAlphabet[b0 >> 2];
    out += kAlphabet[((b0 & 3) << 4) | (b1 >> 4)];
    out += i + 1 < bytes.size() ? kAlphabet[((b1 & 15) << 2) | (b2 >> 6)] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[b2 & 63] : '=';
  }
  return out;
}

// One thread for blocking engine calls that do not go through the scheduler (embeddings).
class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { Loop(); }) {}
  ~SerialExecutor() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    thread_.join();
  }
  // False when `limit` tasks are already waiting.
  bool Post(std::function<void()> f, int64_t limit) {
    {
      MutexLock lock(mu_);
      if (static_cast<int64_t>(q_.size()) >= limit) return false;
      q_.push_back(std::move(f));
    }
    cv_.NotifyOne();
    return true;
  }
  int64_t waiting() const {
    MutexLock lock(mu_);
    return static_cast<int64_t>(q_.size());
  }
  int64_t running() const { return running_.load(); }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> f;
      {
        MutexLock lock(mu_);
        while (!stop_ && q_.empty()) cv_.Wait(mu_);
        if (q_.empty()) return;  // stop_ with nothing left
        f = std::move(q_.front());
        q_.pop_front();
        running_ = 1;
      }
      f();
      running_ = 0;
    }
  }
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> q_ FRUGAL_GUARDED_BY(mu_);
  bool stop_ FRUGAL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> running_{0};
  std::thread thread_;
};

}  // namespace

struct Worker::Impl {
  Engine& engine;
  WorkerOptions opt;
  std::string model_name;
  int64_t created = UnixSeconds();
  std::unique_ptr<Scheduler> scheduler;      // decoder models
  std::unique_ptr<SerialExecutor> embedder;  // encoder models
  std::unique_ptr<http::Server> http;
  std::atomic<bool> ready{false};
  bool simulated = false;  // --simulate: a test instrument, labelled as such in every answer
  http::KeyRing keys;      // --api-key-file: wanted on every path but /health
  http::AuthFailureThrottle auth_throttle;

  MetricsRegistry metrics;
  MetricsRegistry::Counter* requests = nullptr;
  MetricsRegistry::Counter* prompt_tokens = nullptr;
  MetricsRegistry::Counter* prefix_queries = nullptr;
  MetricsRegistry::Counter* prefix_hits = nullptr;
  MetricsRegistry::Counter* generation_tokens = nullptr;
  MetricsRegistry::Histogram* ttft = nullptr;
  MetricsRegistry::Histogram* tpot = nullptr;
  MetricsRegistry::Histogram* e2e = nullptr;
  MetricsRegistry::Histogram* queue_time = nullptr;

  explicit Impl(Engine& e) : engine(e) {}

  void SetUpMetrics();
  void Handle(const http::Request& req, const std::shared_ptr<http::Responder>& res);
  void Error(http::Responder& res, int status, const std::string& message,
             const std::string& code = {}, http::Headers headers = {});
  void Json(http::Responder& res, const json& body);
  void Completion(const http::Request& req, const std::shared_ptr<http::Responder>& res, bool chat);
  void Embeddings(const http::Request& req, const std::shared_ptr<http::Responder>& res);
  void QueueDepth(const http::Request& req, http::Responder& res);
  void Tokenize(const http::Request& req, http::Responder& res);
  SchedulerLoad Load() const;
};

void Worker::Impl::SetUpMetrics() {
  requests = &metrics.AddCounter(
      "frugal_requests", "HTTP requests answered, by status code (499: the client went away)",
      "status");
  prompt_tokens =
      &metrics.AddCounter("frugal_prompt_tokens", "Prompt tokens of finished generation requests");
  generation_tokens = &metrics.AddCounter("frugal_generation_tokens", "Tokens generated");
  // vLLM's names: prompt tokens looked up in the prefix cache, and of them those found.
  prefix_queries = &metrics.AddCounter("frugal_prefix_cache_queries",
                                       "Prompt tokens of finished requests looked up in the "
                                       "prefix cache");
  prefix_hits = &metrics.AddCounter("frugal_prefix_cache_hits",
                                    "Prompt tokens of finished requests whose KV was reused from "
                                    "the prefix cache");
  const auto b = MetricsRegistry::LatencyBuckets();
  ttft = &metrics.AddHistogram("frugal_time_to_first_token_seconds",
                               "Arrival to first generated token", b);
  tpot = &metrics.AddHistogram("frugal_time_per_output_token_seconds",
                               "Mean time per output token after the first, per request", b);
  e2e = &metrics.AddHistogram("frugal_request_duration_seconds",
                              "Arrival to the last token of generation requests", b);
  queue_time = &metrics.AddHistogram("frugal_request_queue_seconds",
                                     "Arrival to admission into the running batch", b);
  metrics.AddGauge("frugal_requests_waiting", "Requests queued, not yet running",
                   [this] { return static_cast<double>(Load().waiting); });
  metrics.AddGauge("frugal_requests_running", "Sequences in the running batch",
                   [this] { return static_cast<double>(Load().running); });
  metrics.AddGauge("frugal_backlog_seconds",
                   "Estimated time to finish all waiting and running work",
                   [this] { return Load().backlog_ms / 1e3; });
  metrics.AddGauge("frugal_prefill_seconds_per_token",
                   "Moving average of prefill time per prompt token",
                   [this] { return Load().prefill_ms_per_token / 1e3; });
  metrics.AddGauge("frugal_decode_seconds_per_token",
                   "Moving average of decode time per generated token",
                   [this] { return Load().decode_ms_per_token / 1e3; });
  metrics.AddGauge("frugal_engine_busy_seconds",
                   "Seconds spent running model steps since start (only grows: its rate is the "
                   "share of time the engine was busy)",
                   [this] { return Load().busy_seconds; });
  metrics.AddGauge("frugal_kv_cache_blocks_free", "Free KV cache blocks",
                   [this] { return static_cast<double>(Load().kv_blocks_free); });
  metrics.AddGauge("frugal_kv_cache_blocks_total", "KV cache blocks in the pool",
                   [this] { return static_cast<double>(Load().kv_blocks_total); });
  metrics.AddGauge("frugal_kv_cache_blocks_cached",
                   "KV cache blocks in the prefix index (shared or evictable)",
                   [this] { return static_cast<double>(Load().kv_blocks_cached); });
  metrics.AddGauge("frugal_kv_cache_blocks_evicted",
                   "Cached KV blocks evicted from the prefix index for room, since start",
                   [this] { return static_cast<double>(Load().kv_blocks_evicted); });
  metrics.AddGauge("frugal_kv_cache_usage_ratio", "Share of KV cache blocks in use (0 to 1)",
                   [this] {
                     const SchedulerLoad l = Load();
                     return l.kv_blocks_total > 0 ? 1.0 - static_cast<double>(l.kv_blocks_free) /
                                                              static_cast<double>(l.kv_blocks_total)
                                                  : 0.0;
                   });
  metrics.AddGauge(
      "frugal_simulated",
      "1 when this worker is a test instrument (frugal serve --simulate): no model runs",
      [this] { return simulated ? 1.0 : 0.0; });
  metrics.AddGauge("frugal_auth_throttled",
                   "attempts refused with 429 while their address had failed too often",
                   [this] { return static_cast<double>(auth_throttle.refused()); });
  http::AddConnectionMetrics(metrics, "frugal", [this] { return http.get(); });
}

SchedulerLoad Worker::Impl::Load() const {
  if (scheduler) return scheduler->Load();
  SchedulerLoad l;
  if (embedder) {
    l.waiting = embedder->waiting();
    l.running = embedder->running();
  }
  l.max_queue = opt.max_embedding_queue;
  return l;
}

void Worker::Impl::Error(http::Responder& res, int status, const std::string& message,
                         const std::string& code, http::Headers headers) {
  requests->Add(1, std::to_string(status));
  res.Send(status, "application/json", http::OpenAiErrorBody(status, message, code),
           std::move(headers));
}

void Worker::Impl::Json(http::Responder& res, const json& body) {
  res.Send(200, "application/json", body.dump());
}

void Worker::Impl::QueueDepth(const http::Request& req, http::Responder& res) {
  const SchedulerLoad l = Load();
  if (req.Header("accept").find("application/json") == std::string::npos) {
    res.Send(200, "text/plain; charset=utf-8", std::to_string(l.waiting) + "\n");
    return;
  }
  json j = {{"waiting", l.waiting},
            {"running", l.running},
            {"backlog_ms", l.backlog_ms},
            {"prefill_ms_per_token", l.prefill_ms_per_token},
            {"decode_ms_per_token", l.decode_ms_per_token},
            {"kv_blocks_free", l.kv_blocks_free},
            {"kv_blocks_total", l.kv_blocks_total},
            {"kv_blocks_cached", l.kv_blocks_cached},
            {"kv_blocks_evicted", l.kv_blocks_evicted},
            {"kv_block_tokens", l.kv_block_tokens},
            {"prefix_cache_queries", l.prefix_cache_queries},
            {"prefix_cache_hits", l.prefix_cache_hits},
            {"max_queue", l.max_queue},
            {"busy_seconds", l.busy_seconds},
            {"ready", ready.load()},
            {"simulated", simulated}};
  Json(res, j);
}

void Worker::Impl::Handle(const http::Request& req, const std::shared_ptr<http::Responder>& res) {
  struct Route {
    const char* path;
    const char* method;
  };
  static const Route kRoutes[] = {{"/v1/chat/completions", "POST"},
                                  {"/v1/completions", "POST"},
                                  {"/v1/embeddings", "POST"},
                                  {"/v1/models", "GET"},
                                  {"/tokenize", "POST"},
                                  {"/health", "GET"},
                                  {"/ready", "GET"},
                                  {"/queue_depth", "GET"},
                                  {"/metrics", "GET"}};
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (req.path == r.path) route = &r;
  }
  if (!route) {
    Error(*res, 404, "no route for " + req.method + " " + req.path);
    return;
  }
  if (req.method != route->method) {
    Error(*res, 405, req.path + " takes " + route->method + ", not " + req.method, {},
          {{"Allow", route->method}});
    return;
  }
  const std::string& p = req.path;
  // With --api-key-file, every path but /health wants a key (the gateway sends it on its polls).
  if (!keys.empty() && p != "/health") {
    const auto now = std::chrono::steady_clock::now();
    if (const auto wait = auth_throttle.Blocked(req.remote, now)) {
      Error(
          *res, 429, "too many failed authentication attempts from this address",
          "too_many_auth_failures",
          {{"Retry-After", std::to_string(std::max<int64_t>(1, std::llround(std::ceil(*wait))))}});
      return;
    }
    const std::string& a = req.Header("authorization");
    constexpr std::string_view kBearer = "Bearer ";
    const std::string_view token = std::string_view(a).starts_with(kBearer)
                                       ? std::string_view(a).substr(kBearer.size())
                                       : std::string_view();
    if (keys.Find(token) == nullptr) {
      auth_throttle.Failed(req.remote, now);
      Error(*res, 401,
            token.empty() ? "missing API key: send Authorization: Bearer <key>" : "invalid API key",
            "invalid_api_key");
      return;
    }
  }
  if (p == "/health") {
    Json(*res, {{"status", "ok"}});
  } else if (p == "/ready") {
    if (ready) {
      Json(*res, {{"status", "ready"}, {"model", model_name}});
    } else {
      Error(*res, 503, "not accepting requests (starting or shutting down)");
    }
  } else if (p == "/queue_depth") {
    QueueDepth(req, *res);
  } else if (p == "/metrics") {
    res->Send(200, "text/plain; version=0.0.4; charset=utf-8", metrics.Render());
  } else if (p == "/v1/models") {
    json m = {{"id", model_name},
              {"object", "model"},
              {"created", created},
              {"owned_by", "frugal"},
              {"max_model_len", engine.info().context_length}};
    if (simulated) m["simulated"] = true;
    Json(*res, {{"object", "list"}, {"data", json::array({m})}});
  } else if (p == "/tokenize") {
    Tokenize(req, *res);
  } else if (p == "/v1/embeddings") {
    Embeddings(req, res);
  } else {
    Completion(req, res, p == "/v1/chat/completions");
  }
}

namespace {

// The state of one generation request, shared by the HTTP side and the scheduler's callback.
struct Generation {
  std::shared_ptr<http::Responder> res;
  Worker::Impl* worker = nullptr;
  bool chat = false, stream = false, include_usage = false;
  std::string id, model, fingerprint;
  int64_t created = 0;
  Mutex mu;
  bool started FRUGAL_GUARDED_BY(mu) = false;               // the stream's headers are out
  std::vector<InferenceEvent> early FRUGAL_GUARDED_BY(mu);  // events before the start
  std::string text;                                         // non-streaming: the answer so far

  api::ResponseHead Head() const { return {chat, id, model, created, fingerprint}; }
  static std::string Usage(const InferenceEvent& ev) {
    return api::UsageJson(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens);
  }

  // Once started (or for non-streaming requests).
  void Deliver(const InferenceEvent& ev) FRUGAL_REQUIRES(mu);
};

}  // namespace

void Generation::Deliver(const InferenceEvent& ev) {
  Worker::Impl& w = *worker;
  if (ev.kind == InferenceEvent::Kind::kText) {
    if (stream) {
      res->Write(api::PieceEvent(Head(), ev.text));
    } else {
      text += ev.text;
    }
    return;
  }
  // Done: metrics first, then the end of the response.
  int status = 200;
  if (ev.finish_reason == "cancelled") status = 499;
  if (!ev.status.ok()) status = HttpStatusFor(ev.status);
  w.requests->Add(1, std::to_string(status));
  w.prompt_tokens->Add(static_cast<double>(ev.prompt_tokens));
  if (ev.admitted) {
    w.prefix_queries->Add(static_cast<double>(ev.prompt_tokens));
    w.prefix_hits->Add(static_cast<double>(ev.cached_tokens));
  }
  w.generation_tokens->Add(static_cast<double>(ev.completion_tokens));
  w.queue_time->Observe(ev.queue_seconds);
  if (ev.ttft_seconds > 0) w.ttft->Observe(ev.ttft_seconds);
  if (ev.completion_tokens > 1 && ev.ttft_seconds > 0) {
    w.tpot->Observe((ev.total_seconds - ev.ttft_seconds) /
                    static_cast<double>(ev.completion_tokens - 1));
  }
  if (status == 200) w.e2e->Observe(ev.total_seconds);

  if (stream) {
    if (status == 200) {
      std::string events = api::FinishEvent(Head(), ev.finish_reason);
      if (include_usage) events += api::UsageEvent(Head(), Usage(ev));
      res->Write(std::move(events));
    } else if (status != 499) {
      // Headers went out long ago: the error becomes an event, never a silent truncation.
      res->Write(api::ErrorEvent(status, ev.status.message(), status == 504 ? "timeout" : ""));
    }
    res->Write(std::string(api::kDoneEvent));
    res->End();
    return;
  }
  if (status != 200) {
    res->Send(status, "application/json",
              http::OpenAiErrorBody(status, status == 499 ? "cancelled" : ev.status.message(),
                                    status == 504 ? "timeout" : ""));
    return;
  }
  res->Send(200, "application/json",
            api::CompletionJson(Head(), text, ev.finish_reason, Usage(ev)));
}

void Worker::Impl::Completion(const http::Request& req, const std::shared_ptr<http::Responder>& res,
                              bool chat) {
  const auto arrived = Clock::now();
  if (!scheduler) {
    Error(*res, 400,
          "the loaded model '" + model_name + "' is an embedding model: it cannot generate text",
          "model_not_supported");
    return;
  }
  auto parsed = ParseCompletionRequest(req.body, chat, opt.limits);
  if (!parsed.ok()) {
    Error(*res, 400, parsed.status().message());
    return;
  }
  CompletionParams& p = *parsed;
  if (!p.model.empty() && p.model != model_name) {
    Error(*res, 404,
          "The model '" + p.model + "' does not exist; this worker serves '" + model_name + "'",
          "model_not_found");
    return;
  }
  InferenceRequest ir;
  if (chat) {
    // Control tokens come only from the template: a message cannot open a turn of its own.
    auto ids = engine.EncodeChat(p.messages, p.continue_final_message);
    if (!ids.ok()) {
      Error(*res, 400, ids.status().message());
      return;
    }
    ir.prompt = *std::move(ids);
  } else {
    // A raw prompt is the client's own text in the model's format, markup and all (as
    // llama.cpp's and vLLM's /v1/completions read it).
    ir.prompt = engine.EncodePrompt(p.prompt, /*parse_special=*/true);
  }
  const int64_t n_ctx = scheduler->context_length();
  const auto n_prompt = static_cast<int64_t>(ir.prompt.size());
  if (n_prompt >= n_ctx) {
    Error(*res, 400,
          "This model's maximum context length is " + std::to_string(n_ctx) +
              " tokens; the prompt has " + std::to_string(n_prompt),
          "context_length_exceeded");
    return;
  }
  const int64_t room = n_ctx - n_prompt;
  if (p.max_tokens && *p.max_tokens > room) {
    Error(*res, 400,
          "This model's maximum context length is " + std::to_string(n_ctx) +
              " tokens; the prompt has " + std::to_string(n_prompt) + " and max_tokens asks for " +
              std::to_string(*p.max_tokens) + " more",
          "context_length_exceeded");
    return;
  }
  ir.max_tokens =
      static_cast<int32_t>(p.max_tokens ? *p.max_tokens : std::min(room, opt.default_max_tokens));
  ir.stop = p.stop;
  ir.sampling = p.sampling;
  ir.deadline = arrived + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(opt.request_timeout_s));

  auto g = std::make_shared<Generation>();
  g->res = res;
  g->worker = this;
  g->chat = chat;
  g->stream = p.stream;
  g->include_usage = p.include_usage;
  g->id = NewCompletionId(chat);
  g->model = model_name;
  g->fingerprint = simulated ? "frugal-simulated" : "frugal";
  g->created = UnixSeconds();
  auto submitted = scheduler->Submit(std::move(ir), [g](const InferenceEvent& ev) {
    MutexLock lock(g->mu);
    if (g->stream && !g->started) {
      g->early.push_back(ev);
    } else {
      g->Deliver(ev);
    }
  });
  if (!submitted.ok()) {
    const int status = HttpStatusFor(submitted.status());
    http::Headers h;
    if (status == 503) {
      const double backlog_s = scheduler->Load().backlog_ms / 1e3;
      h.emplace_back("Retry-After", std::to_string(std::max<int64_t>(
                                        1, static_cast<int64_t>(std::ceil(backlog_s)))));
    }
    Error(*res, status, submitted.status().message(), status == 503 ? "overloaded" : "",
          std::move(h));
    return;
  }
  std::shared_ptr<InferenceHandle> handle = *submitted;
  res->OnClose([handle] { handle->Cancel(); });
  if (res->closed()) handle->Cancel();
  if (g->stream) {
    MutexLock lock(g->mu);
    res->StartStream(200, "text/event-stream", {{"X-Accel-Buffering", "no"}});
    res->Write(api::OpenEvent(g->Head()));
    g->started = true;
    for (const auto& ev : g->early) g->Deliver(ev);
    g->early.clear();
  }
}

// vLLM's /tokenize: {"messages": [...]} (with continue_final_message) or {"prompt": "..."} ->
// {"count", "max_model_len", "tokens"}, the ids exactly as a completion would see them.
void Worker::Impl::Tokenize(const http::Request& req, http::Responder& res) {
  bool chat = false;
  if (http::JsonDepthWithin(req.body)) {  // else the parser below refuses it
    const json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    chat = j.is_object() && j.contains("messages");
  }
  auto p = ParseCompletionRequest(req.body, chat, opt.limits);
  if (!p.ok()) {
    Error(res, 400, p.status().message());
    return;
  }
  if (!p->model.empty() && p->model != model_name) {
    Error(res, 404,
          "The model '" + p->model + "' does not exist; this worker serves '" + model_name + "'",
          "model_not_found");
    return;
  }
  std::vector<int32_t> ids;
  if (chat) {
    auto encoded = engine.EncodeChat(p->messages, p->continue_final_message);
    if (!encoded.ok()) {
      Error(res, 400, encoded.status().message());
      return;
    }
    ids = *std::move(encoded);
  } else {
    ids = engine.EncodePrompt(p->prompt, /*parse_special=*/true);
  }
  Json(res,
       {{"count", ids.size()}, {"max_model_len", engine.info().context_length}, {"tokens", ids}});
}

void Worker::Impl::Embeddings(const http::Request& req,
                              const std::shared_ptr<http::Responder>& res) {
  if (!embedder) {
    Error(*res, 400, "the loaded model '" + model_name + "' is not an embedding model",
          "model_not_supported");
    return;
  }
  auto parsed = ParseEmbeddingRequest(req.body);
  if (!parsed.ok()) {
    Error(*res, 400, parsed.status().message());
    return;
  }
  if (!parsed->model.empty() && parsed->model != model_name) {
    Error(
        *res, 404,
        "The model '" + parsed->model + "' does not exist; this worker serves '" + model_name + "'",
        "model_not_found");
    return;
  }
  auto task = [this, res, p = std::move(parsed).value()] {
    json data = json::array();
    int64_t tokens = 0;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (res->closed()) return;
      auto e = engine.Embed(p.inputs[i]);
      if (!e.ok()) {
        Error(*res, HttpStatusFor(e.status()), e.status().message());
        return;
      }
      auto ids = engine.Tokenize(p.inputs[i], /*add_special=*/true, /*parse_special=*/false);
      if (ids.ok()) tokens += static_cast<int64_t>(ids->size());
      json item = {{"object", "embedding"}, {"index", i}};
      if (p.base64) {
        item["embedding"] = Base64Floats(*e);
      } else {
        item["embedding"] = *e;
      }
      data.push_back(std::move(item));
    }
    requests->Add(1, "200");
    prompt_tokens->Add(static_cast<double>(tokens));
    Json(*res, {{"object", "list"},
                {"data", data},
                {"model", model_name},
                {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
  };
  if (!embedder->Post(std::move(task), opt.max_embedding_queue)) {
    Error(*res, 503, "the embedding queue is full", "overloaded", {{"Retry-After", "1"}});
  }
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Worker::~Worker() { Shutdown(std::chrono::milliseconds(0)); }

StatusOr<std::unique_ptr<Worker>> Worker::Start(Engine& engine, WorkerOptions options) {
  if (options.request_timeout_s <= 0)
    return InvalidArgument("the request timeout must be > 0 seconds");
  if (options.default_max_tokens < 1) return InvalidArgument("the default max_tokens must be >= 1");
  auto impl = std::make_unique<Impl>(engine);
  impl->opt = std::move(options);
  impl->model_name =
      impl->opt.served_model_name.empty() ? engine.info().name : impl->opt.served_model_name;
  impl->simulated = impl->opt.scheduler.simulation.has_value();
  // Every response of a test instrument says so, the HTTP layer's own errors (413, 431) included,
  // so no test result can pass for a real worker's.
  if (impl->simulated) impl->opt.http.default_headers.emplace_back("X-Frugal-Simulated", "true");
  impl->SetUpMetrics();
  if (impl->simulated && engine.info().kind != ModelKind::kDecoder) {
    return InvalidArgument(
        "a simulated worker needs a decoder model for its tokenizer and chat template; '" +
        impl->model_name + "' is an embedder");
  }
  if (engine.info().kind == ModelKind::kDecoder) {
    FRUGAL_ASSIGN_OR_RETURN(impl->scheduler, Scheduler::Start(engine, impl->opt.scheduler));
  } else {
    impl->embedder = std::make_unique<SerialExecutor>();
  }
  for (size_t i = 0; i < impl->opt.api_keys.size(); ++i)
    FRUGAL_RETURN_IF_ERROR(impl->keys.Add(impl->opt.api_keys[i], "key" + std::to_string(i + 1)));
  impl->opt.api_keys.clear();  // only the digests stay
  Impl* p = impl.get();
  FRUGAL_ASSIGN_OR_RETURN(
      impl->http,
      http::Server::Start(impl->opt.http, [p](const http::Request& req,
                                              const std::shared_ptr<http::Responder>& res) {
        p->Handle(req, res);
      }));
  impl->ready = true;
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

uint16_t Worker::port() const { return impl_->http->port(); }

void Worker::Shutdown(std::chrono::milliseconds grace) {
  impl_->ready = false;
  if (impl_->http) impl_->http->Shutdown(grace);
  // Whatever did not finish in time is cancelled; the engine threads stop.
  impl_->scheduler.reset();
  impl_->embedder.reset();
}

}  // namespace frugal::server
