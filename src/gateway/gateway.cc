#include "gateway/gateway.h"

#include <strings.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "api/openai_response.h"
#include "balancer/health_checker.h"
#include "balancer/http_load_probe.h"
#include "balancer/retry_policy.h"
#include "cache/cache.h"
#include "common/metrics.h"
#include "common/strings.h"
#include "gateway/rate_limit.h"
#include "gateway/request.h"
#include "gateway/stats.h"
#include "gateway_status_page.h"  // generated from status_page.html
#include "http/auth.h"
#include "http/client.h"
#include "http/json_limits.h"
#include "http/server.h"

// GCC 12 reports a false -Wrestrict overlap in "literal" + std::string (GCC bug 105329);
// clang has no such warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace frugal::gateway {
namespace {

namespace net = boost::asio;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string ErrorBody(int status, std::string_view message, std::string_view code = {}) {
  return http::OpenAiErrorBody(status, message, code);
}

// What a client is told of a failed attempt: the kind of failure, never the worker's address
// or the transport's own text (which names host:port); the full text goes to the worker's
// last_error, which only the admin API and an authorized status page show.
std::string PublicReason(const Status& st) {
  switch (st.code()) {
    case StatusCode::kDeadlineExceeded:
      return "the worker did not answer in time";
    case StatusCode::kIoError:
      return "the connection to the worker failed";
    default:
      return "the worker failed";
  }
}

// The bearer token of an Authorization header, or "".
std::string BearerToken(const http::Request& r) {
  const std::string& a = r.Header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (a.size() > kBearer.size() && std::string_view(a).substr(0, kBearer.size()) == kBearer)
    return a.substr(kBearer.size());
  return "";
}

// Prometheus label value: quotes, backslashes and newlines escaped.
std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// An answer worth caching ended by itself or at the request's own max_tokens (part of the scope,
// so the same request would get the same text again); never one cut by an error or a cancel.
bool Complete(const std::string& finish_reason) {
  return finish_reason == "stop" || finish_reason == "length";
}

}  // namespace

// One client request, from acceptance to its one response. Upstream callbacks for one attempt
// run one after another; OnClose may run concurrently (atomics and `mu`).
struct Call {
  Gateway::Impl* gw = nullptr;
  std::shared_ptr<http::Responder> out;
  std::string path;
  bool chat = true, stream = false, include_usage = false;
  std::string body, model;
  RequestCost cost;
  RequestPrefix prefix;  // for prefix-aware routing
  Clock::time_point start = Clock::now();
  Clock::time_point deadline;  // start + the gateway's request_timeout_s
  // Cache.
  bool cacheable = false;
  std::string scope, ns, query;
  std::optional<cache::LookupResult>
      looked_up;  // the miss's lookup: its vector is reused on insert
  // Routing.
  std::vector<std::string> tried;
  int retries = 0;
  std::string last_error;  // for the client: the worker's name and a reason, no address
  std::atomic<bool> client_gone{false};
  std::atomic<bool> finished{false};
  Mutex mu;
  Lease lease FRUGAL_GUARDED_BY(mu);
  std::optional<uint64_t> upstream_id FRUGAL_GUARDED_BY(mu);
  // The current attempt.
  int status = 0;
  http::Headers up_headers;
  std::string buffer;      // a non-streamed response
  bool streaming = false;  // the client's stream has started: no retry any more
  bool sent_any = false;   // a body byte went to the client
  http::SseParser sse;
  // The answer relayed so far (every attempt of a continued stream), its id, end and usage.
  api::StreamNotes notes;
  bool saw_done = false;
  std::string pending;  // the start of an SSE event not complete yet: held back from the client
  // Continuing a stream whose worker broke: this attempt's events are rewritten into the stream
  // the client already has (its id, no second role delta, usage over the whole answer).
  bool continuing = false;
  int continuations = 0;
  int64_t prefix_tokens = 0;  // notes.pieces relayed before the current attempt
};

struct Gateway::Impl {
  GatewayConfig cfg;
  std::unique_ptr<Policy> policy;
  WorkerPool pool;
  RetryPolicy retry;
  std::unique_ptr<cache::Cache> cache;
  // API keys as digests (http::KeyRing), each name with its config and token bucket.
  http::KeyRing key_ring;
  struct Key {
    ApiKeyConfig cfg;  // its `key` cleared: the ring holds the digest only
    std::unique_ptr<TokenBucket> bucket;
  };
  std::unordered_map<std::string, Key> keys;  // by name
  http::AuthFailureThrottle auth_throttle;    // repeated 401s from one address
  MetricsRegistry::Counter* auth_failures = nullptr;
  MetricsRegistry::Counter* bad_cache_entries = nullptr;

  MetricsRegistry metrics;
  MetricsRegistry::Counter* requests = nullptr;
  MetricsRegistry::Counter* responses = nullptr;
  MetricsRegistry::Counter* retries = nullptr;
  MetricsRegistry::Counter* cache_lookups = nullptr;
  MetricsRegistry::Counter* stream_errors = nullptr;
  MetricsRegistry::Counter* timeouts = nullptr;
  MetricsRegistry::Counter* continuations = nullptr;
  MetricsRegistry::Counter* rate_limited = nullptr;
  MetricsRegistry::Histogram* latency = nullptr;
  MetricsRegistry::Histogram* ttft = nullptr;
  TrafficStats stats;
  std::atomic<int64_t> total_requests{0}, total_errors{0}, total_hits{0}, total_retries{0};
  Clock::time_point started = Clock::now();

  Mutex models_mu;
  std::map<std::string, std::set<std::string>> models
      FRUGAL_GUARDED_BY(models_mu);  // worker -> its model ids
  // Every model a worker has listed since start: asked for one of these that no worker lists
  // now, a client gets 503 (it may come back), not 404.
  std::set<std::string> ever_served FRUGAL_GUARDED_BY(models_mu);

  std::unique_ptr<http::Server> server, admin_server;  // admin_server: admin_listen only
  std::unique_ptr<http::Client> upstream, checker;
  HttpLoadProbe probe{checker, [this](const std::string& w) { return WorkerKey(w); }};
  HealthChecker health{pool, probe, /*refresh_every=*/30,
                       [this](const WorkerAddress& w, bool refresh) { OnHealthy(w, refresh); }};
  net::io_context timers;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> timers_work;
  std::thread timer_thread;
  std::unique_ptr<net::steady_timer> health_timer;
  std::unique_ptr<net::thread_pool> cache_pool;
  // POST /admin/cache/rotate runs here, one at a time; GET /admin/cache/rotation reports it.
  struct Rotation {
    std::string state = "idle";  // idle, running, done, failed
    std::string model, error;
    double seconds = 0;
    int64_t started_unix = 0;
  };
  Mutex rotation_mu;
  Rotation rotation FRUGAL_GUARDED_BY(rotation_mu);
  std::thread rotation_thread;  // joined at shutdown
  std::atomic<bool> stopped{false};

  explicit Impl(GatewayConfig c)
      : cfg(std::move(c)),
        pool(cfg.health),
        retry({cfg.max_retries, cfg.retry_backoff_ms}),
        auth_throttle(cfg.auth_failures_per_min) {}

  // The key this gateway sends a worker (its own api_key_file, else worker_api_key_file).
  std::string WorkerKey(const std::string& name) const {
    for (const auto& w : cfg.workers) {
      if (w.name == name && !w.api_key.empty()) return w.api_key;
    }
    return cfg.worker_api_key;
  }
  // A client's credential failed: 401, and one more failure counted against its address.
  void Unauthorized(const http::Request& req, const std::shared_ptr<http::Responder>& out,
                    const std::string& message, const char* code) {
    auth_throttle.Failed(req.remote, Clock::now());
    auth_failures->Add(1, code);
    out->Send(401, "application/json", ErrorBody(401, message, code));
  }
  // 429 while the address is blocked for failing too often; true when it was refused.
  bool AuthThrottled(const http::Request& req, const std::shared_ptr<http::Responder>& out) {
    const auto wait = auth_throttle.Blocked(req.remote, Clock::now());
    if (!wait) return false;
    const auto secs = std::to_string(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(*wait))));
    out->Send(429, "application/json",
              ErrorBody(429, "too many failed authentication attempts from this address",
                        "too_many_auth_failures"),
              {{"Retry-After", secs}});
    return true;
  }
  // Whether the request carries the admin token (Authorization: Bearer, or X-Admin-Token).
  bool HasAdminToken(const http::Request& req) const {
    if (cfg.admin_token.empty()) return false;
    std::string token = BearerToken(req);
    if (token.empty()) token = req.Header("x-admin-token");
    return !token.empty() && http::SecretEquals(token, cfg.admin_token);
  }

  // ---- routes ----
  // admin_listener: the request came to the admin listener (admin_listen).
  void Handle(const http::Request& req, std::shared_ptr<http::Responder> out,
              bool admin_listener = false);
  void HandleCompletion(const http::Request& req, const std::shared_ptr<http::Responder>& out,
                        bool chat);
  void HandleAdmin(const http::Request& req, const std::shared_ptr<http::Responder>& out);
  void StartRotation(const std::string& body, const std::shared_ptr<http::Responder>& out);
  json RotationJson() const FRUGAL_REQUIRES(rotation_mu);
  void SendModels(const std::shared_ptr<http::Responder>& out);
  json WorkerJson(const WorkerInfo& w, const std::map<std::string, double>& shares) const;
  std::string RenderMetrics();
  // full: with the workers' addresses and last errors (for the admin).
  std::string StatusJson(bool full);

  // ---- the request path ----
  void Lookup(const std::shared_ptr<Call>& c);
  void Dispatch(const std::shared_ptr<Call>& c);
  void OnHeaders(const std::shared_ptr<Call>& c, int status, const http::Headers& h);
  void OnData(const std::shared_ptr<Call>& c, std::string_view data);
  void OnDone(const std::shared_ptr<Call>& c, const Status& st, size_t bytes);
  void Retry(const std::shared_ptr<Call>& c, AttemptFailure failure, const std::string& why);
  void Refuse(const std::shared_ptr<Call>& c, int status, const std::string& message,
              bool retry_after);
  void EndStreamWithError(const std::shared_ptr<Call>& c, const std::string& why);
  // false (nothing sent) when the stored answer is not a valid one.
  bool ReplyFromCache(const std::shared_ptr<Call>& c, const std::string& stored);
  // usage_json: the engine's usage object, or "" for none.
  void Store(const std::shared_ptr<Call>& c, const std::string& usage_json);
  void Finish(const std::shared_ptr<Call>& c, int status, bool hit);

  // ---- health ----
  void ScheduleHealth();
  void PollAll();
  void OnHealthy(const WorkerAddress& w, bool refresh);

  http::Headers MissHeaders(const std::shared_ptr<Call>& c) const;
  std::string TimeLimitMessage() const {
    return "the request ran past its time limit (" + ShortNumber(cfg.request_timeout_s) + " s)";
  }
};

// ---------------------------------------------------------------------------------------------
// Routes

void Gateway::Impl::Handle(const http::Request& req, std::shared_ptr<http::Responder> out,
                           bool admin_listener) {
  const std::string& p = req.path;
  const bool admin_path =
      p == "/metrics" || p == "/status" || p == "/status.json" || p.starts_with("/admin/");
  // With an admin listener, the public one does not know these paths, and the admin one knows
  // nothing else (but /health).
  if (!cfg.admin_listen.empty() && admin_path != admin_listener && p != "/health") {
    out->Send(404, "application/json", ErrorBody(404, "unknown path " + p, "not_found"));
    return;
  }
  // status_access admin: the status page, its JSON and the metrics want the admin token too.
  if (admin_path && !p.starts_with("/admin/") && cfg.status_access == "admin" && !admin_listener &&
      !HasAdminToken(req)) {
    if (AuthThrottled(req, out)) return;
    Unauthorized(req, out, "the status and metrics need the admin token", "invalid_admin_token");
    return;
  }
  auto only = [&](const char* method) {
    if (req.method == method) return true;
    out->Send(405, "application/json", ErrorBody(405, "use " + std::string(method) + " for " + p),
              {{"Allow", method}});
    return false;
  };
  if (p == "/v1/chat/completions" || p == "/v1/completions") {
    if (only("POST")) HandleCompletion(req, out, p == "/v1/chat/completions");
  } else if (p == "/v1/models") {
    if (only("GET")) SendModels(out);
  } else if (p == "/health") {
    if (only("GET")) out->Send(200, "application/json", R"({"status":"ok"})");
  } else if (p == "/ready") {
    if (!only("GET")) return;
    bool any = false;
    for (const auto& w : pool.List()) any = any || w.state == WorkerState::kHealthy;
    if (any) {
      out->Send(200, "application/json", R"({"status":"ready"})");
    } else {
      out->Send(503, "application/json", ErrorBody(503, "no healthy worker"),
                {{"Retry-After", "1"}});
    }
  } else if (p == "/metrics") {
    if (only("GET")) out->Send(200, "text/plain; version=0.0.4", RenderMetrics());
  } else if (p == "/status") {
    if (only("GET")) out->Send(200, "text/html; charset=utf-8", std::string(kStatusPageHtml));
  } else if (p == "/status.json") {
    // Workers' addresses and errors only for the admin (token, or the admin listener).
    if (only("GET")) {
      out->Send(200, "application/json", StatusJson(admin_listener || HasAdminToken(req)),
                {{"Cache-Control", "no-store"}});
    }
  } else if (p.starts_with("/admin/")) {
    HandleAdmin(req, out);
  } else {
    out->Send(404, "application/json", ErrorBody(404, "unknown path " + p, "not_found"));
  }
}

void Gateway::Impl::SendModels(const std::shared_ptr<http::Responder>& out) {
  std::set<std::string> ids;
  {
    MutexLock lock(models_mu);
    for (const auto& [w, m] : models) ids.insert(m.begin(), m.end());
  }
  json data = json::array();
  for (const auto& id : ids)
    data.push_back({{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "frugal"}});
  out->Send(200, "application/json", json{{"object", "list"}, {"data", data}}.dump());
}

void Gateway::Impl::HandleCompletion(const http::Request& req,
                                     const std::shared_ptr<http::Responder>& out, bool chat) {
  requests->Add(1, chat ? "chat" : "completions");
  // Who is asking, and may they.
  std::string ns = "default";
  if (!keys.empty()) {
    if (AuthThrottled(req, out)) return;
    const std::string token = BearerToken(req);
    if (token.empty()) {
      Unauthorized(req, out, "missing API key: send Authorization: Bearer <key>",
                   "invalid_api_key");
      return;
    }
    const std::string* name = key_ring.Find(token);
    if (name == nullptr) {
      Unauthorized(req, out, "invalid API key", "invalid_api_key");
      return;
    }
    auto it = keys.find(*name);
    double wait_s = 0;
    if (!it->second.bucket->TryTake(Clock::now(), &wait_s)) {
      rate_limited->Add(1, it->second.cfg.name);
      const auto secs =
          std::to_string(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait_s))));
      out->Send(429, "application/json",
                ErrorBody(429, "rate limit of API key '" + it->second.cfg.name + "' exceeded",
                          "rate_limit_exceeded"),
                {{"Retry-After", secs}});
      return;
    }
    ns = it->second.cfg.name;
  }
  // What is asked. The worker validates every field; the gateway only what it routes and caches by.
  RequestPolicy rp;
  rp.default_max_tokens = cfg.default_max_tokens;
  rp.context_turns = cfg.cache.context_turns;
  rp.cache_nondeterministic = cfg.cache.nondeterministic;
  rp.limits = cfg.request_limits;
  auto parsed = ParseCompletionRequest(req.body, chat, rp);
  if (!parsed.ok()) {
    out->Send(400, "application/json", ErrorBody(400, parsed.status().message()));
    return;
  }
  {
    // Only workers whose model lists are known can say no: before the first list arrives every
    // request goes through (and the worker answers for its model).
    MutexLock lock(models_mu);
    const bool served = std::any_of(models.begin(), models.end(),
                                    [&](const auto& wm) { return wm.second.count(parsed->model); });
    if (!models.empty() && !served) {
      if (ever_served.count(parsed->model)) {
        out->Send(503, "application/json",
                  ErrorBody(503, "no worker serves the model '" + parsed->model + "' now",
                            "model_unavailable"),
                  {{"Retry-After", "1"}});
      } else {
        out->Send(
            404, "application/json",
            ErrorBody(404, "the model '" + parsed->model + "' does not exist", "model_not_found"));
      }
      return;
    }
  }
  auto c = std::make_shared<Call>();
  c->gw = this;
  c->out = out;
  c->chat = chat;
  c->path = chat ? "/v1/chat/completions" : "/v1/completions";
  c->model = parsed->model;
  c->deadline = c->start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(cfg.request_timeout_s));
  c->stream = parsed->stream;
  c->include_usage = parsed->include_usage;
  c->cost = parsed->cost;
  c->prefix = std::move(parsed->prefix);
  c->body = req.body;
  const std::string& cc = req.Header("cache-control");
  const bool no_cache =
      cc.find("no-cache") != std::string::npos || cc.find("no-store") != std::string::npos;
  if (cache && parsed->cacheable && !no_cache) {
    c->cacheable = true;
    c->ns = ns;
    c->query = parsed->query;
    c->scope = cache::ScopeKey({ns, c->model, parsed->context, parsed->sampling});
  }

  out->OnClose([weak = std::weak_ptr<Call>(c)] {
    auto call = weak.lock();
    if (!call) return;
    call->client_gone = true;
    std::optional<uint64_t> id;
    {
      MutexLock lock(call->mu);
      id = call->upstream_id;
    }
    if (id) call->gw->upstream->Cancel(*id);
  });
  if (c->cacheable) {
    net::post(*cache_pool, [this, c] { Lookup(c); });
  } else {
    cache_lookups->Add(1, "bypass");
    Dispatch(c);
  }
}

// ---------------------------------------------------------------------------------------------
// Cache

void Gateway::Impl::Lookup(const std::shared_ptr<Call>& c) {
  auto r = cache->Lookup(c->scope, c->ns, c->query);
  if (!r.ok()) {
    // The cache is never the cause of an outage: a failed lookup is a miss.
    std::fprintf(stderr, "frugal gateway: cache lookup failed: %s\n", r.status().message().c_str());
  } else if (r->hit && ReplyFromCache(c, r->response)) {
    cache_lookups->Add(1, "hit");
    return;
  }
  cache_lookups->Add(1, "miss");
  if (r.ok()) c->looked_up = std::move(r).value();
  Dispatch(c);
}

bool Gateway::Impl::ReplyFromCache(const std::shared_ptr<Call>& c, const std::string& stored) {
  // What a cache returns is checked before use: a store shared with others (Redis) may hold
  // anything. A bad entry is a miss.
  const json s = http::JsonDepthWithin(stored) ? json::parse(stored, nullptr, false) : json();
  if (!s.is_object() || !s.contains("content") || !s["content"].is_string() ||
      (s.contains("finish_reason") && !s["finish_reason"].is_string()) ||
      (s.contains("usage") && !s["usage"].is_object() && !s["usage"].is_null())) {
    bad_cache_entries->Add();
    return false;
  }
  const std::string content = s["content"].get<std::string>();
  const std::string finish = s.value("finish_reason", "stop");
  const std::string usage =
      s.contains("usage") && !s["usage"].is_null() ? s["usage"].dump() : std::string();
  api::ResponseHead head;
  head.chat = c->chat;
  head.id = (c->chat ? "chatcmpl-cache-" : "cmpl-cache-") + std::to_string(total_requests.load());
  head.model = c->model;
  head.created = UnixNow();
  const http::Headers h = {{"X-Frugal-Cache", "hit"}};
  if (!c->stream) {
    head.fingerprint = "frugal-cache";
    c->out->Send(200, "application/json", api::CompletionJson(head, content, finish, usage), h);
    Finish(c, 200, true);
    return true;
  }
  // Replayed as the worker would have streamed it: role, the text in pieces, finish, usage.
  c->out->StartStream(200, "text/event-stream", h);
  c->out->Write(api::ReplayStream(head, content, finish, usage, c->include_usage));
  c->out->End();
  ttft->Observe(MsSince(c->start) / 1e3);
  Finish(c, 200, true);
  return true;
}

void Gateway::Impl::Store(const std::shared_ptr<Call>& c, const std::string& usage_json) {
  json s = {{"content", c->notes.content}, {"finish_reason", c->notes.finish_reason}};
  if (!usage_json.empty()) s["usage"] = json::parse(usage_json);
  net::post(*cache_pool, [this, c, v = s.dump()] {
    Status st =
        cache->Insert(c->scope, c->ns, c->query, v, c->looked_up ? &*c->looked_up : nullptr);
    if (!st.ok())
      std::fprintf(stderr, "frugal gateway: cache insert failed: %s\n", st.message().c_str());
  });
}

// ---------------------------------------------------------------------------------------------
// Proxy

http::Headers Gateway::Impl::MissHeaders(const std::shared_ptr<Call>& c) const {
  http::Headers h = {{"X-Frugal-Cache", "miss"}};
  if (!c->tried.empty()) h.emplace_back("X-Frugal-Worker", c->tried.back());
  for (const auto& [k, v] : c->up_headers) {
    if (strcasecmp(k.c_str(), "x-frugal-simulated") == 0) h.emplace_back("X-Frugal-Simulated", v);
  }
  return h;
}

namespace {

// Where the last complete SSE event of `b` ends (just past its blank line); 0 when none has.
size_t EventsEnd(std::string_view b) {
  for (size_t i = b.size(); i-- > 1;) {
    if (b[i] != '\n') continue;
    if (b[i - 1] == '\n' || (b[i - 1] == '\r' && i >= 2 && b[i - 2] == '\n')) return i + 1;
  }
  return 0;
}

}  // namespace

void Gateway::Impl::Dispatch(const std::shared_ptr<Call>& c) {
  if (c->client_gone) {
    Finish(c, 499, false);
    return;
  }
  const auto left = c->deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    Refuse(c, 504, TimeLimitMessage(), false);
    return;
  }
  // Workers already tried, and those whose model list lacks the request's model.
  std::vector<std::string> exclude = c->tried;
  {
    MutexLock lock(models_mu);
    for (const auto& [w, ids] : models) {
      if (!ids.count(c->model)) exclude.push_back(w);
    }
  }
  Lease lease = pool.Pick(*policy, c->cost, exclude, &c->prefix);
  if (!lease) {
    if (c->tried.empty()) {
      Refuse(c, 503, "no healthy worker serving '" + c->model + "' can take the request now", true);
    } else {
      Refuse(c, 503, "no worker could take the request (" + c->last_error + ")", true);
    }
    return;
  }
  c->tried.push_back(lease.name());
  stats.Routed(UnixNow(), lease.name());
  c->status = 0;
  c->up_headers.clear();
  c->buffer.clear();
  c->sse = http::SseParser();
  c->notes.usage_json.clear();
  c->saw_done = false;
  c->pending.clear();
  if (!c->continuing) {
    c->streaming = false;
    c->notes.content.clear();
    c->notes.finish_reason.clear();
    c->sent_any = false;
  }
  http::ClientRequest r;
  r.host = lease.host();
  r.port = lease.port();
  r.method = "POST";
  r.target = c->path;
  r.headers = {{"Content-Type", "application/json"}};
  // The client's own key never goes on; the worker gets the gateway's, when it wants one.
  if (const std::string key = WorkerKey(lease.name()); !key.empty())
    r.headers.emplace_back("Authorization", "Bearer " + key);
  r.body = c->continuing
               ? api::ContinuedRequestBody(c->body, c->chat, c->notes.content, c->notes.pieces)
               : c->body;
  // What is left of the request's own time, not a fresh allowance per attempt.
  r.response_timeout =
      std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(left));
  {
    MutexLock lock(c->mu);
    c->lease = std::move(lease);
  }
  http::ClientCallbacks cb;
  cb.on_headers = [this, c](int status, const http::Headers& h) { OnHeaders(c, status, h); };
  cb.on_data = [this, c](std::string_view d) { OnData(c, d); };
  cb.on_done = [this, c](const Status& st, size_t bytes) { OnDone(c, st, bytes); };
  const uint64_t id = upstream->Send(std::move(r), std::move(cb));
  {
    MutexLock lock(c->mu);
    c->upstream_id = id;
  }
  if (c->client_gone) upstream->Cancel(id);
}

void Gateway::Impl::OnHeaders(const std::shared_ptr<Call>& c, int status, const http::Headers& h) {
  c->status = status;
  c->up_headers = h;
  if (status == 200 && c->stream && !c->streaming) {
    // From here on the client has bytes: its stream is this one, continued if its worker breaks.
    c->streaming = true;
    c->out->StartStream(200, "text/event-stream", MissHeaders(c));
  }
}

void Gateway::Impl::OnData(const std::shared_ptr<Call>& c, std::string_view data) {
  if (!c->streaming || c->status != 200) {
    c->buffer.append(data);
    return;
  }
  std::string out;
  if (c->continuing) {
    c->sse.Feed(data, [&](const http::SseEvent& ev) {
      if (ev.data == "[DONE]") {
        c->saw_done = true;
        out += "data: [DONE]\n\n";
        return;
      }
      const auto chunk =
          api::RewriteContinuedChunk(ev.data, c->chat, c->notes.id, c->prefix_tokens);
      if (!chunk) return;
      api::NoteChunk(*chunk, c->chat, &c->notes);
      out.append("data: ").append(*chunk).append("\n\n");
    });
  } else {
    // The worker's bytes as they are, an event at a time: what the client has is always whole
    // events, so a stream that breaks can be continued (or closed) cleanly.
    c->pending.append(data);
    const size_t end = EventsEnd(c->pending);
    out = c->pending.substr(0, end);
    c->pending.erase(0, end);
    c->sse.Feed(data, [&](const http::SseEvent& ev) {
      if (ev.data == "[DONE]") {
        c->saw_done = true;
        return;
      }
      api::NoteChunk(ev.data, c->chat, &c->notes);
    });
  }
  if (out.empty()) return;
  if (!c->sent_any) {
    c->sent_any = true;
    ttft->Observe(MsSince(c->start) / 1e3);
  }
  c->out->Write(std::move(out));
}

void Gateway::Impl::OnDone(const std::shared_ptr<Call>& c, const Status& st, size_t bytes) {
  Lease lease;
  {
    MutexLock lock(c->mu);
    lease = std::move(c->lease);
    c->upstream_id.reset();
  }
  if (c->client_gone) {
    // Our own cancel (the client left): nothing to answer, nothing against the worker.
    if (c->streaming) c->out->End();
    Finish(c, 499, false);
    return;
  }
  if (c->streaming) {
    if (st.ok() && c->saw_done && c->status == 200) {
      // Stored before the client hears the end, so asking again at once finds it.
      if (c->cacheable && Complete(c->notes.finish_reason)) Store(c, c->notes.usage_json);
      c->out->End();
      pool.ReportRequest(lease, Outcome::kSuccess);
      Finish(c, 200, false);
      return;
    }
    if (st.code() == StatusCode::kDeadlineExceeded) {
      // The request's own limit: not the worker's failure, and no other worker would be faster.
      c->out->Write(api::ErrorEvent(504, TimeLimitMessage(), "timeout") +
                    std::string(api::kDoneEvent));
      c->out->End();
      timeouts->Add();
      Finish(c, 504, false);
      return;
    }
    // This attempt broke: midway, or (a continuation) before it began.
    std::string why = !st.ok()           ? PublicReason(st)
                      : c->status == 200 ? "the worker's stream ended early"
                      : c->status == 503 ? "worker overloaded"
                                         : "HTTP " + std::to_string(c->status);
    const bool refused = c->status >= 400 && c->status < 500;  // the engine's own answer
    pool.ReportRequest(lease,
                       c->status == 503 ? Outcome::kOverloaded
                       : refused        ? Outcome::kSuccess
                                        : Outcome::kFailure,
                       st.ok() ? why : st.message());
    lease = Lease();
    c->last_error = c->tried.back() + ": " + why;
    if (!refused && !stopped && c->notes.finish_reason.empty() &&
        c->continuations < cfg.max_retries &&
        api::Continuable(c->body, c->chat, c->notes.content)) {
      // Continue the client's stream on another worker from the text it already has.
      c->continuing = true;
      ++c->continuations;
      c->prefix_tokens = c->notes.pieces;
      continuations->Add();
      auto timer = std::make_shared<net::steady_timer>(timers, retry.Backoff(c->continuations));
      timer->async_wait([this, c, timer](const boost::system::error_code& ec) {
        if (ec) {
          EndStreamWithError(c, "the gateway is shutting down");
          return;
        }
        Dispatch(c);
      });
      return;
    }
    if (refused) why = "no worker could continue it (" + why + ")";
    EndStreamWithError(c, why);
    return;
  }
  if (st.code() == StatusCode::kDeadlineExceeded) {
    // Out of its own time: not retried (another worker would take as long) and not held against
    // the worker, whose health its checks and its 5xx judge.
    lease = Lease();
    timeouts->Add();
    Retry(c, AttemptFailure::kTimeout, PublicReason(st));
    return;
  }
  if (!st.ok()) {
    pool.ReportRequest(lease, Outcome::kFailure, st.message());
    c->last_error = c->tried.back() + ": " + PublicReason(st);
    lease = Lease();
    Retry(c, bytes == 0 ? AttemptFailure::kNoResponse : AttemptFailure::kPartialResponse,
          PublicReason(st));
    return;
  }
  if (c->status == 503) {
    pool.ReportRequest(lease, Outcome::kOverloaded);
    c->last_error = c->tried.back() + ": queue full";
    lease = Lease();
    Retry(c, AttemptFailure::kOverloaded, "worker overloaded");
    return;
  }
  pool.ReportRequest(lease, c->status >= 500 ? Outcome::kFailure : Outcome::kSuccess,
                     "HTTP " + std::to_string(c->status));
  lease = Lease();
  if (c->status == 200) {
    if (c->cacheable) {
      if (auto done = api::ReadCompletion(c->buffer, c->chat);
          done && Complete(done->finish_reason)) {
        c->notes.content = std::move(done->content);
        c->notes.finish_reason = std::move(done->finish_reason);
        Store(c, done->usage_json);
      }
    }
  }
  // The worker's answer, as it gave it (its 4xx are the client's errors, passed on).
  std::string ct = "application/json";
  for (const auto& [k, v] : c->up_headers) {
    if (strcasecmp(k.c_str(), "content-type") == 0) ct = v;
  }
  c->out->Send(c->status, ct, std::move(c->buffer), MissHeaders(c));
  Finish(c, c->status, false);
}

void Gateway::Impl::Retry(const std::shared_ptr<Call>& c, AttemptFailure failure,
                          const std::string& why) {
  if (stopped || !retry.MayRetry(failure, c->retries)) {
    if (failure == AttemptFailure::kTimeout) {
      Refuse(c, 504, TimeLimitMessage(), false);
    } else if (failure == AttemptFailure::kPartialResponse) {
      Refuse(c, 502, "the worker failed mid-response: " + why, false);
    } else {
      Refuse(c, 503, "no worker could take the request (" + why + ")", true);
    }
    return;
  }
  ++c->retries;
  retries->Add();
  ++total_retries;
  auto timer = std::make_shared<net::steady_timer>(timers, retry.Backoff(c->retries));
  timer->async_wait([this, c, timer](const boost::system::error_code& ec) {
    if (ec) {
      Refuse(c, 503, "the gateway is shutting down", true);
      return;
    }
    Dispatch(c);
  });
}

void Gateway::Impl::EndStreamWithError(const std::shared_ptr<Call>& c, const std::string& why) {
  c->out->Write(api::ErrorEvent(502, "the worker failed while streaming: " + why, "worker_failed") +
                std::string(api::kDoneEvent));
  c->out->End();
  stream_errors->Add();
  Finish(c, 502, false);
}

void Gateway::Impl::Refuse(const std::shared_ptr<Call>& c, int status, const std::string& message,
                           bool retry_after) {
  if (c->client_gone) {
    Finish(c, 499, false);
    return;
  }
  if (c->streaming) {  // a continuation found no worker: the client's stream is open
    EndStreamWithError(c, message);
    return;
  }
  http::Headers h = {{"X-Frugal-Cache", "miss"}};
  if (retry_after) h.emplace_back("Retry-After", "1");
  c->out->Send(status, "application/json",
               ErrorBody(status, message,
                         status == 503   ? "no_worker_available"
                         : status == 504 ? "timeout"
                                         : "worker_failed"),
               h);
  Finish(c, status, false);
}

void Gateway::Impl::Finish(const std::shared_ptr<Call>& c, int status, bool hit) {
  if (c->finished.exchange(true)) return;
  const double ms = MsSince(c->start);
  const bool error = status >= 500;
  ++total_requests;
  if (error) ++total_errors;
  if (hit) ++total_hits;
  responses->Add(1, std::to_string(status));
  if (status != 499) {
    latency->Observe(ms / 1e3);
    stats.Record(UnixNow(), ms, error, hit);
  }
}

// ---------------------------------------------------------------------------------------------
// Health

void Gateway::Impl::ScheduleHealth() {
  health_timer->expires_after(cfg.health.interval);
  health_timer->async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped) return;
    PollAll();
    ScheduleHealth();
  });
}

void Gateway::Impl::PollAll() {
  const auto targets = pool.Targets();
  {
    MutexLock lock(models_mu);
    // Forget removed workers' models.
    for (auto it = models.begin(); it != models.end();) {
      const bool live = std::any_of(targets.begin(), targets.end(),
                                    [&](const WorkerAddress& t) { return t.name == it->first; });
      it = live ? std::next(it) : models.erase(it);
    }
  }
  health.CheckAll();
}

// A worker answered its health check: every 30th time (and until it is known) its model list
// is read again.
void Gateway::Impl::OnHealthy(const WorkerAddress& w, bool refresh) {
  {
    MutexLock lock(models_mu);
    refresh = refresh || !models.count(w.name);
  }
  if (!refresh || stopped) return;
  http::ClientRequest m;
  m.host = w.host;
  m.port = w.port;
  m.target = "/v1/models";
  if (const std::string key = WorkerKey(w.name); !key.empty())
    m.headers.emplace_back("Authorization", "Bearer " + key);
  auto mbody = std::make_shared<std::string>();
  http::ClientCallbacks mcb;
  mcb.on_data = [mbody](std::string_view d) { mbody->append(d); };
  mcb.on_done = [this, name = w.name, mbody](const Status& ms, size_t) {
    if (!ms.ok()) return;
    json j = json::parse(*mbody, nullptr, false);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return;
    std::set<std::string> ids;
    for (const auto& e : j["data"]) {
      if (e.is_object() && e.contains("id") && e["id"].is_string())
        ids.insert(e["id"].get<std::string>());
    }
    MutexLock lock(models_mu);
    if (pool.size() == 0) return;
    ever_served.insert(ids.begin(), ids.end());
    models[name] = std::move(ids);
  };
  checker->Send(std::move(m), std::move(mcb));
}

// ---------------------------------------------------------------------------------------------
// Admin, metrics, status

json Gateway::Impl::WorkerJson(const WorkerInfo& w,
                               const std::map<std::string, double>& shares) const {
  auto s = shares.find(w.name);
  // A signal the worker does not give is null, never a made-up 0.
  const auto& l = w.load;
  auto sig = [&](LoadSignal bit, const json& v) { return l.Has(bit) ? v : json(nullptr); };
  // The kind as configured, else as detected (the report's source names it).
  std::string kind(WorkerKindName(w.kind));
  if (w.kind == WorkerKind::kAuto && !l.source.empty()) {
    kind = l.source.starts_with("none") ? "openai" : l.source.substr(0, l.source.find(' '));
  }
  return {{"name", w.name},
          {"url", w.url},
          {"kind", kind},
          {"load_source", l.source},
          {"load_known", l.Has(kSignalWaiting) || l.Has(kSignalRunning)},
          {"missing_metrics", l.missing},
          {"state", std::string(StateName(w.state))},
          {"weight", w.weight},
          {"queue", static_cast<int64_t>(std::llround(w.est_queue))},
          {"in_flight", w.in_flight},
          {"backlog_ms", w.est_backlog_ms},
          {"reported",
           {{"waiting", sig(kSignalWaiting, l.waiting)},
            {"running", sig(kSignalRunning, l.running)},
            {"backlog_ms", sig(kSignalBacklog, l.backlog_ms)},
            {"prefill_ms_per_token", sig(kSignalPrefill, l.prefill_ms_per_token)},
            {"decode_ms_per_token", sig(kSignalDecode, l.decode_ms_per_token)},
            {"kv_usage", sig(kSignalKvUsage, l.kv_usage)}}},
          {"share", s == shares.end() ? 0.0 : s->second},
          {"chosen", w.chosen},
          {"ejections", w.ejections},
          {"simulated", w.load.simulated},
          {"last_error", w.last_error}};
}

void Gateway::Impl::HandleAdmin(const http::Request& req,
                                const std::shared_ptr<http::Responder>& out) {
  if (cfg.admin_token.empty()) {
    out->Send(403, "application/json",
              ErrorBody(403, "the admin API is off: set admin_token in the config"));
    return;
  }
  if (AuthThrottled(req, out)) return;
  if (!HasAdminToken(req)) {
    Unauthorized(req, out, "missing or wrong admin token", "invalid_admin_token");
    return;
  }
  auto reply = [&](const Status& st, int ok_status, const json& body) {
    if (st.ok()) {
      out->Send(ok_status, "application/json", body.dump());
      return;
    }
    const int code = st.code() == StatusCode::kNotFound ? 404 : 400;
    out->Send(code, "application/json", ErrorBody(code, st.message()));
  };
  if (!http::JsonDepthWithin(req.body)) {
    out->Send(400, "application/json", ErrorBody(400, "the request body nests too deeply"));
    return;
  }
  const std::string& p = req.path;
  const std::string prefix = "/admin/workers/";
  if (p == "/admin/workers" && req.method == "GET") {
    json ws = json::array();
    const auto shares = stats.Shares(UnixNow());
    for (const auto& w : pool.List()) ws.push_back(WorkerJson(w, shares));
    reply(Status::Ok(), 200, {{"policy", policy->name()}, {"workers", ws}});
  } else if (p == "/admin/workers" && req.method == "POST") {
    json j = json::parse(req.body, nullptr, false);
    if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) {
      reply(InvalidArgument("send {\"name\": ..., \"url\": \"http://host:port\", \"weight\": 1}"),
            0, nullptr);
      return;
    }
    const auto current = pool.List();
    auto taken = [&](const std::string& n) {
      return std::any_of(current.begin(), current.end(),
                         [&](const WorkerInfo& w) { return w.name == n; });
    };
    std::string name;
    if (j.contains("name") && j["name"].is_string()) {
      name = j["name"].get<std::string>();
      if (taken(name)) {
        out->Send(409, "application/json", ErrorBody(409, "a worker named '" + name + "' exists"));
        return;
      }
    } else {
      for (size_t i = 0; name.empty() || taken(name); ++i) name = "w" + std::to_string(i);
    }
    const double weight =
        j.contains("weight") && j["weight"].is_number() ? j["weight"].get<double>() : 1.0;
    StatusOr<WorkerKind> kind = WorkerKind::kAuto;
    if (j.contains("kind") && j["kind"].is_string())
      kind = ParseWorkerKind(j["kind"].get<std::string>());
    Status st =
        kind.ok() ? pool.Add(name, j["url"].get<std::string>(), weight, *kind) : kind.status();
    reply(st, 201, {{"added", name}});
    if (st.ok()) net::post(timers, [this] { PollAll(); });  // know its load and models at once
  } else if (p.starts_with(prefix) && req.method == "DELETE") {
    const std::string name = p.substr(prefix.size());
    const Status st = pool.Remove(name);
    if (st.ok()) probe.Forget(name);
    reply(st, 200, {{"removed", name}});
  } else if (p.starts_with(prefix) && req.method == "POST" &&
             (p.ends_with("/drain") || p.ends_with("/undrain"))) {
    const bool drain = p.ends_with("/drain");
    const std::string name = p.substr(prefix.size(), p.size() - prefix.size() - (drain ? 6 : 8));
    reply(pool.SetDraining(name, drain), 200, {{drain ? "draining" : "undrained", name}});
  } else if (p == "/admin/cache/invalidate" && req.method == "POST") {
    if (!cache) {
      reply(InvalidArgument("the cache is off"), 0, nullptr);
      return;
    }
    json j = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
    if (!j.is_object()) {
      reply(InvalidArgument("send {\"namespace\": ...} or {\"all\": true}"), 0, nullptr);
      return;
    }
    size_t n = 0;
    if (j.value("all", false)) {
      n = cache->Clear();
    } else if (j.contains("namespace") && j["namespace"].is_string()) {
      n = cache->InvalidateNamespace(j["namespace"].get<std::string>());
    } else {
      reply(InvalidArgument("send {\"namespace\": ...} or {\"all\": true}"), 0, nullptr);
      return;
    }
    reply(Status::Ok(), 200, {{"invalidated", n}});
  } else if (p == "/admin/cache/rotate" && req.method == "POST") {
    StartRotation(req.body, out);
  } else if (p == "/admin/cache/rotation" && req.method == "GET") {
    MutexLock l(rotation_mu);
    reply(Status::Ok(), 200, RotationJson());
  } else {
    out->Send(404, "application/json",
              ErrorBody(404, "unknown admin route " + req.method + " " + p, "not_found"));
  }
}

json Gateway::Impl::RotationJson() const {
  json j = {{"state", rotation.state}, {"rotations", cache ? cache->rotations() : 0}};
  if (!rotation.model.empty()) j["model"] = rotation.model;
  if (rotation.started_unix > 0) j["started"] = rotation.started_unix;
  if (rotation.state == "done" || rotation.state == "failed") j["seconds"] = rotation.seconds;
  if (!rotation.error.empty()) j["error"] = rotation.error;
  return j;
}

// {"model": PATH} moves the cache to another embedding model (every stored query embedded
// again), {"hnsw": {"m", "ef_construction", "ef_search"}} rebuilds with new index parameters,
// {} compacts. Lookups and inserts go on throughout (cache.h, Rotate); 202 at once, then
// GET /admin/cache/rotation until "done".
void Gateway::Impl::StartRotation(const std::string& body,
                                  const std::shared_ptr<http::Responder>& out) {
  if (!cache) {
    out->Send(400, "application/json", ErrorBody(400, "the cache is off"));
    return;
  }
  json j = json::parse(body.empty() ? "{}" : body, nullptr, false);
  if (!j.is_object()) {
    out->Send(400, "application/json",
              ErrorBody(400,
                        "send {\"model\": PATH} and/or {\"hnsw\": {\"m\", \"ef_construction\", "
                        "\"ef_search\"}}"));
    return;
  }
  std::string model;
  if (j.contains("model")) {
    if (!j["model"].is_string() || j["model"].get<std::string>().empty()) {
      out->Send(400, "application/json",
                ErrorBody(400, "\"model\" must be the path of an embedding model"));
      return;
    }
    model = j["model"].get<std::string>();
    std::error_code ec;
    if (!std::filesystem::exists(model, ec)) {
      out->Send(400, "application/json", ErrorBody(400, "no embedding model at " + model));
      return;
    }
  }
  std::optional<cache::HnswParams> hnsw;
  if (j.contains("hnsw")) {
    const json& h = j["hnsw"];
    if (!h.is_object()) {
      out->Send(400, "application/json", ErrorBody(400, "\"hnsw\" must be an object"));
      return;
    }
    cache::HnswParams hp;
    hp.m = static_cast<size_t>(cfg.cache.hnsw_m);
    hp.ef_construction = static_cast<size_t>(cfg.cache.hnsw_ef_construction);
    hp.ef_search = static_cast<size_t>(cfg.cache.hnsw_ef_search);
    for (auto [key, field] : {std::pair<const char*, size_t*>{"m", &hp.m},
                              {"ef_construction", &hp.ef_construction},
                              {"ef_search", &hp.ef_search}}) {
      if (!h.contains(key)) continue;
      if (!h[key].is_number_integer() || h[key].get<int64_t>() < 2 ||
          h[key].get<int64_t>() > 4096) {
        out->Send(400, "application/json",
                  ErrorBody(400, std::string("hnsw.") + key + " must be an integer in [2, 4096]"));
        return;
      }
      *field = static_cast<size_t>(h[key].get<int64_t>());
    }
    hnsw = hp;
  }
  MutexLock l(rotation_mu);
  if (rotation.state == "running") {
    out->Send(409, "application/json",
              ErrorBody(409, "a rotation is running (GET /admin/cache/rotation)"));
    return;
  }
  if (rotation_thread.joinable()) rotation_thread.join();  // the previous one has finished
  rotation = {};
  rotation.state = "running";
  rotation.model = model;
  rotation.started_unix = static_cast<int64_t>(UnixNow());
  rotation_thread = std::thread([this, model, hnsw] {
    const auto t0 = Clock::now();
    Status st = Status::Ok();
    cache::RotateOptions ro;
    ro.hnsw = hnsw;
    if (!model.empty()) {
      auto e = cache::OpenEngineEmbedder(model, cfg.cache.threads);
      if (e.ok()) {
        ro.embedder = std::move(e).value();
      } else {
        st = e.status();
      }
    }
    if (st.ok()) st = cache->Rotate(ro);
    MutexLock l2(rotation_mu);
    rotation.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    rotation.state = st.ok() ? "done" : "failed";
    if (!st.ok()) rotation.error = st.message();
    std::fprintf(stderr, "frugal gateway: cache rotation %s in %.2f s%s%s\n",
                 rotation.state.c_str(), rotation.seconds, st.ok() ? "" : ": ",
                 st.ok() ? "" : st.message().c_str());
  });
  out->Send(202, "application/json", RotationJson().dump());
}

std::string Gateway::Impl::RenderMetrics() {
  std::string s = metrics.Render();
  const auto ws = pool.List();
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& w : ws) {
      const std::string v = value(w);
      if (!v.empty()) s += v;
    }
  };
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    return std::string(b);
  };
  family("frugal_gateway_worker_state", "gauge", "1 for the worker's current state",
         [&](const WorkerInfo& w) {
           std::string o;
           for (auto st : {WorkerState::kHealthy, WorkerState::kEjected, WorkerState::kHalfOpen,
                           WorkerState::kDraining}) {
             o += "frugal_gateway_worker_state{worker=\"" + LabelValue(w.name) + "\",state=\"" +
                  std::string(StateName(st)) + "\"} " + (w.state == st ? "1" : "0") + "\n";
           }
           return o;
         });
  auto simple = [&](const char* name, const char* type, const char* help, auto get) {
    family(name, type, help, [&](const WorkerInfo& w) {
      return std::string(name) + "{worker=\"" + LabelValue(w.name) + "\"} " + num(get(w)) + "\n";
    });
  };
  simple("frugal_gateway_worker_weight", "gauge", "configured routing weight",
         [](const WorkerInfo& w) { return w.weight; });
  simple("frugal_gateway_worker_in_flight", "gauge",
         "requests this gateway has in flight on the worker",
         [](const WorkerInfo& w) { return static_cast<double>(w.in_flight); });
  simple("frugal_gateway_worker_queue", "gauge",
         "estimated requests waiting and running on the worker",
         [](const WorkerInfo& w) { return w.est_queue; });
  simple("frugal_gateway_worker_backlog_ms", "gauge",
         "estimated machine time of the work ahead on the worker",
         [](const WorkerInfo& w) { return w.est_backlog_ms; });
  simple("frugal_gateway_worker_chosen_total", "counter", "requests routed to the worker",
         [](const WorkerInfo& w) { return static_cast<double>(w.chosen); });
  simple("frugal_gateway_worker_ejections_total", "counter", "times the worker was ejected",
         [](const WorkerInfo& w) { return static_cast<double>(w.ejections); });
  if (cache) s += cache->metrics().Render();
  return s;
}

std::string Gateway::Impl::StatusJson(bool full) {
  const int64_t now = UnixNow();
  const auto shares = stats.Shares(now);
  json ws = json::array();
  for (const auto& w : pool.List()) {
    json j = WorkerJson(w, shares);
    if (!full) {
      j.erase("url");
      j.erase("last_error");
    }
    ws.push_back(std::move(j));
  }
  json series = json::array();
  for (const auto& p : stats.Series(now)) {
    series.push_back(
        {{"t", p.t},
         {"requests", p.requests},
         {"errors", p.errors},
         {"p95_ms", p.p95_ms ? json(*p.p95_ms) : json(nullptr)},
         {"hit_rate", p.requests - p.errors > 0 ? json(static_cast<double>(p.hits) /
                                                       static_cast<double>(p.requests - p.errors))
                                                : json(nullptr)}});
  }
  const int64_t req = total_requests.load(), err = total_errors.load(), hits = total_hits.load();
  const auto p95 = stats.P95Ms(now, 60);
  json totals = {{"requests", req},
                 {"errors", err},
                 {"retries", total_retries.load()},
                 {"cache_hits", hits},
                 {"hit_rate",
                  req - err > 0 ? static_cast<double>(hits) / static_cast<double>(req - err) : 0.0},
                 {"p95_ms_1m", p95 ? json(*p95) : json(nullptr)},
                 {"rps_1m", stats.Rps(now, 60)},
                 {"ejections", pool.ejections()},
                 {"prefix_routed", pool.prefix_routed()}};
  json g = {{"policy", policy->name()},
            {"uptime_s", MsSince(started) / 1e3},
            {"version", "0.1.0"},
            {"cache", cache != nullptr},
            {"redacted", !full}};
  return json{{"gateway", g},
              {"workers", ws},
              {"window_s", TrafficStats::kBuckets * TrafficStats::kBucketS},
              {"bucket_s", TrafficStats::kBucketS},
              {"series", series},
              {"totals", totals}}
      .dump();
}

// ---------------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Gateway>> Gateway::Start(GatewayConfig config,
                                                  std::shared_ptr<cache::Embedder> embedder) {
  FRUGAL_RETURN_IF_ERROR(ValidateGatewayConfig(config));
  auto impl = std::make_unique<Impl>(std::move(config));
  Impl& g = *impl;
  auto policy = MakePolicy(g.cfg.policy);
  if (!policy.ok()) return policy.status();
  g.policy = std::move(policy).value();
  g.pool.set_prefix_routing(g.cfg.prefix_routing);
  for (const auto& w : g.cfg.workers)
    FRUGAL_RETURN_IF_ERROR(g.pool.Add(w.name, w.url, w.weight, w.kind));
  for (auto& k : g.cfg.api_keys) {
    FRUGAL_RETURN_IF_ERROR(g.key_ring.Add(k.key, k.name));
    k.key.clear();  // only the digest stays
    g.keys[k.name] = {k, std::make_unique<TokenBucket>(k.rate_per_s, k.burst)};
  }
  if (g.cfg.cache.enabled && embedder) {
    auto c = cache::OpenCache(std::move(embedder), g.cfg.cache);
    if (!c.ok()) return c.status();
    g.cache = std::move(c).value();
    // Two lanes per embedding thread: a long query (its own engine, cache/embedder.h) never
    // takes the thread a short one waits for.
    g.cache_pool = std::make_unique<net::thread_pool>(
        static_cast<size_t>(2 * std::max(1, g.cfg.cache.threads)));
  }
  g.requests = &g.metrics.AddCounter("frugal_gateway_requests",
                                     "completion requests accepted, by route", "route");
  g.responses =
      &g.metrics.AddCounter("frugal_gateway_responses",
                            "completion responses, by HTTP status (499: client left)", "code");
  g.retries = &g.metrics.AddCounter(
      "frugal_gateway_retries",
      "requests sent again to another worker after a failure before the first byte");
  g.cache_lookups = &g.metrics.AddCounter(
      "frugal_gateway_cache", "cache outcome per request: hit, miss, bypass (not cacheable)",
      "result");
  g.stream_errors =
      &g.metrics.AddCounter("frugal_gateway_stream_errors",
                            "streams that broke midway and ended with an SSE error event");
  g.continuations = &g.metrics.AddCounter(
      "frugal_gateway_stream_continuations",
      "streams whose worker broke, continued on another worker from the text already sent");
  g.timeouts = &g.metrics.AddCounter(
      "frugal_gateway_timeouts",
      "requests that ran past request_timeout_s (504; not retried, not a worker failure)");
  g.rate_limited = &g.metrics.AddCounter("frugal_gateway_rate_limited",
                                         "requests refused with 429, by API key name", "key");
  g.latency = &g.metrics.AddHistogram("frugal_gateway_request_duration_seconds",
                                      "arrival to the last byte, every completion request",
                                      MetricsRegistry::LatencyBuckets());
  g.ttft = &g.metrics.AddHistogram("frugal_gateway_ttft_seconds",
                                   "arrival to the first streamed content byte",
                                   MetricsRegistry::LatencyBuckets());
  g.metrics.AddGauge("frugal_gateway_ejections", "workers ejected since start (all workers)",
                     [&g] { return static_cast<double>(g.pool.ejections()); });
  g.metrics.AddGauge("frugal_gateway_prefix_routed",
                     "requests routed since start to a worker that had been sent one of their "
                     "prefixes (prefix-aware routing)",
                     [&g] { return static_cast<double>(g.pool.prefix_routed()); });
  g.auth_failures = &g.metrics.AddCounter("frugal_gateway_auth_failures",
                                          "requests refused with 401, by credential kind", "code");
  g.metrics.AddGauge("frugal_gateway_auth_throttled",
                     "attempts refused with 429 while their address had failed too often",
                     [&g] { return static_cast<double>(g.auth_throttle.refused()); });
  g.bad_cache_entries = &g.metrics.AddCounter(
      "frugal_gateway_cache_bad_entries",
      "cache hits whose stored answer was not a valid one (served as misses)");
  http::AddConnectionMetrics(g.metrics, "frugal_gateway", [&g] { return g.server.get(); });

  http::ClientOptions uo;
  uo.io_threads = 2;
  uo.response_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(g.cfg.request_timeout_s * 1e3));
  uo.max_idle_per_host = 256;
  g.upstream = std::make_unique<http::Client>(uo);
  http::ClientOptions co;
  co.connect_timeout = g.cfg.health.timeout;
  co.response_timeout = g.cfg.health.timeout;
  g.checker = std::make_unique<http::Client>(co);
  g.timers_work.emplace(g.timers.get_executor());
  g.timer_thread = std::thread([&g] { g.timers.run(); });
  g.health_timer = std::make_unique<net::steady_timer>(g.timers);
  net::post(g.timers, [&g] { g.PollAll(); });
  g.ScheduleHealth();

  http::ServerOptions so;
  so.host = g.cfg.host;
  so.port = g.cfg.port;
  so.io_threads = g.cfg.http_threads;
  so.max_body_bytes = static_cast<size_t>(g.cfg.max_body_bytes);
  so.max_connections = g.cfg.max_connections;
  auto stop_timers = [&g] {
    g.stopped = true;
    g.timers_work.reset();
    g.timers.stop();
    g.timer_thread.join();
  };
  if (!g.cfg.admin_listen.empty()) {
    http::ServerOptions ao = so;
    const size_t colon = g.cfg.admin_listen.rfind(':');
    ao.host = g.cfg.admin_listen.substr(0, colon);
    ao.port = static_cast<uint16_t>(std::stoi(g.cfg.admin_listen.substr(colon + 1)));
    ao.io_threads = 1;
    ao.max_connections = 64;
    auto admin =
        http::Server::Start(ao, [&g](const http::Request& r, std::shared_ptr<http::Responder> out) {
          g.Handle(r, std::move(out), /*admin_listener=*/true);
        });
    if (!admin.ok()) {
      stop_timers();
      return admin.status().WithContext("admin_listen");
    }
    g.admin_server = std::move(admin).value();
  }
  auto server =
      http::Server::Start(so, [&g](const http::Request& r, std::shared_ptr<http::Responder> out) {
        g.Handle(r, std::move(out));
      });
  if (!server.ok()) {
    if (g.admin_server) g.admin_server->Shutdown(std::chrono::milliseconds(0));
    stop_timers();
    return server.status();
  }
  g.server = std::move(server).value();
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() { Shutdown(std::chrono::milliseconds(0)); }

uint16_t Gateway::port() const { return impl_->server->port(); }

uint16_t Gateway::admin_port() const {
  return impl_->admin_server ? impl_->admin_server->port() : 0;
}

void Gateway::Shutdown(std::chrono::milliseconds grace) {
  Impl& g = *impl_;
  if (g.stopped.exchange(true)) return;
  // In-flight requests finish through the upstream client, timers and cache, still running.
  g.server->Shutdown(grace);
  if (g.admin_server) g.admin_server->Shutdown(std::chrono::milliseconds(0));
  net::post(g.timers, [&g] { g.health_timer->cancel(); });
  g.timers_work.reset();
  g.timers.stop();
  g.timer_thread.join();
  // Lookups still queued may dispatch: the upstream client stays until they are done. Then
  // whatever is still in flight is cancelled; its Responders go before the server does.
  if (g.cache_pool) g.cache_pool->join();
  if (g.rotation_thread.joinable()) g.rotation_thread.join();
  g.upstream.reset();
  g.checker.reset();
  g.cache.reset();  // snapshots, when configured
}

}  // namespace frugal::gateway
