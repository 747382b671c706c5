#include "gateway/gateway.h"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "balancer/health_checker.h"
#include "balancer/http_load_probe.h"
#include "balancer/retry_policy.h"
#include "cache/cache.h"
#include "common/metrics.h"
#include "gateway/admin.h"
#include "gateway/audit.h"
#include "gateway/cache_front.h"
#include "gateway/clock.h"
#include "gateway/model_directory.h"
#include "gateway/proxy.h"
#include "gateway/rate_limit.h"
#include "gateway/request.h"
#include "gateway/stats.h"
#include "gateway/upstream.h"
#include "gateway_status_page.h"  // generated from status_page.html
#include "http/auth.h"
#include "http/client.h"
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

// The bearer token of an Authorization header, or "".
std::string BearerToken(const http::Request& r) {
  const std::string& a = r.Header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (a.size() > kBearer.size() && std::string_view(a).substr(0, kBearer.size()) == kBearer)
    return a.substr(kBearer.size());
  return "";
}

// The gateway's timer thread as the proxy's Timers.
class AsioTimers final : public Timers {
 public:
  explicit AsioTimers(net::io_context& io) : io_(io) {}
  void After(std::chrono::microseconds delay, std::function<void(bool)> f) override {
    auto timer = std::make_shared<net::steady_timer>(io_, delay);
    timer->async_wait([timer, f = std::move(f)](const boost::system::error_code& ec) { f(!ec); });
  }

 private:
  net::io_context& io_;
};

}  // namespace

// The gateway's rooms, wired together (docs/architecture.md, "A request's life"): this file
// holds the front door (routes, API keys, rate limits, what a request asks for) and the health
// loop; cache_front.h answers hits and files answers; proxy.h and attempt.h take a request to
// the workers; admin.h is the admin API and the views; model_directory.h knows who serves what.
struct Gateway::Impl {
  GatewayConfig cfg;
  std::unique_ptr<Policy> policy;
  WorkerPool pool;
  RetryPolicy retry;
  // API keys as digests (http::KeyRing), each name with its config and token bucket.
  http::KeyRing key_ring;
  struct Key {
    ApiKeyConfig cfg;  // its `key` cleared: the ring holds the digest only
    std::unique_ptr<TokenBucket> bucket;
  };
  std::unordered_map<std::string, Key> keys;  // by name
  http::AuthFailureThrottle auth_throttle;    // repeated 401s from one address

  MetricsRegistry metrics;
  MetricsRegistry::Counter* auth_failures = nullptr;
  MetricsRegistry::Counter* requests = nullptr;
  MetricsRegistry::Counter* responses = nullptr;
  MetricsRegistry::Counter* cache_lookups = nullptr;
  MetricsRegistry::Counter* rate_limited = nullptr;
  MetricsRegistry::Histogram* latency = nullptr;
  ProxyMetrics proxy_metrics;
  TrafficStats stats;
  RequestTotals totals;
  Clock::time_point started = Clock::now();

  std::unique_ptr<http::Server> server, admin_server;  // admin_server: admin_listen only
  std::unique_ptr<Upstream> upstream;
  std::unique_ptr<http::Client> checker;
  HttpLoadProbe probe{checker, [this](const std::string& w) { return WorkerKey(w); }};
  ModelDirectory models{pool, [this](const std::string& w) { return WorkerKey(w); }};
  HealthChecker health{pool, probe, /*refresh_every=*/30,
                       [this](const WorkerAddress& w, bool refresh) { OnHealthy(w, refresh); }};
  net::io_context timer_io;
  AsioTimers timers{timer_io};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> timers_work;
  std::thread timer_thread;
  std::unique_ptr<net::steady_timer> health_timer;
  std::unique_ptr<CacheFront> cache_front;  // null: the cache is off
  std::unique_ptr<Auditor> auditor;         // null: the cache is off, or cache.audit_rate 0
  ProxyContext proxy_ctx;
  std::unique_ptr<Admin> admin;
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
    out->Send(401, "application/json", http::OpenAiErrorBody(401, message, code));
  }
  // 429 while the address is blocked for failing too often; true when it was refused.
  bool AuthThrottled(const http::Request& req, const std::shared_ptr<http::Responder>& out) {
    const auto wait = auth_throttle.Blocked(req.remote, Clock::now());
    if (!wait) return false;
    const auto secs = std::to_string(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(*wait))));
    out->Send(
        429, "application/json",
        http::OpenAiErrorBody(429, "too many failed authentication attempts from this address",
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

  // ---- routes (HTTP strands) ----
  // admin_listener: the request came to the admin listener (admin_listen).
  void Handle(const http::Request& req, std::shared_ptr<http::Responder> out,
              bool admin_listener = false);
  void HandleCompletion(const http::Request& req, const std::shared_ptr<http::Responder>& out,
                        bool chat);
  void HandleAdmin(const http::Request& req, const std::shared_ptr<http::Responder>& out);
  void SendModels(const std::shared_ptr<http::Responder>& out);
  // Sends the request to the workers; a complete answer is filed under `key` when there is one.
  void Proxy(const std::shared_ptr<ProxyRequest>& proxy, std::optional<CacheKey> key,
             std::optional<cache::LookupResult> looked_up, Clock::time_point start);
  // A completion request's end, counted once.
  void Finish(Clock::time_point start, int status, bool hit);

  // ---- health (the timer thread) ----
  void ScheduleHealth();
  void PollAll();
  void OnHealthy(const WorkerAddress& w, bool refresh);
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
    out->Send(404, "application/json",
              http::OpenAiErrorBody(404, "unknown path " + p, "not_found"));
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
    out->Send(405, "application/json",
              http::OpenAiErrorBody(405, "use " + std::string(method) + " for " + p),
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
      out->Send(503, "application/json", http::OpenAiErrorBody(503, "no healthy worker"),
                {{"Retry-After", "1"}});
    }
  } else if (p == "/metrics") {
    if (only("GET")) out->Send(200, "text/plain; version=0.0.4", admin->RenderMetrics());
  } else if (p == "/status") {
    if (only("GET")) out->Send(200, "text/html; charset=utf-8", std::string(kStatusPageHtml));
  } else if (p == "/status.json") {
    // Workers' addresses and errors only for the admin (token, or the admin listener).
    if (only("GET")) {
      out->Send(200, "application/json", admin->StatusJson(admin_listener || HasAdminToken(req)),
                {{"Cache-Control", "no-store"}});
    }
  } else if (p.starts_with("/admin/")) {
    HandleAdmin(req, out);
  } else {
    out->Send(404, "application/json",
              http::OpenAiErrorBody(404, "unknown path " + p, "not_found"));
  }
}

void Gateway::Impl::HandleAdmin(const http::Request& req,
                                const std::shared_ptr<http::Responder>& out) {
  if (cfg.admin_token.empty()) {
    out->Send(403, "application/json",
              http::OpenAiErrorBody(403, "the admin API is off: set admin_token in the config"));
    return;
  }
  if (AuthThrottled(req, out)) return;
  if (!HasAdminToken(req)) {
    Unauthorized(req, out, "missing or wrong admin token", "invalid_admin_token");
    return;
  }
  admin->Handle(req, out);
}

void Gateway::Impl::SendModels(const std::shared_ptr<http::Responder>& out) {
  json data = json::array();
  for (const auto& id : models.Ids())
    data.push_back({{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "frugal"}});
  out->Send(200, "application/json", json{{"object", "list"}, {"data", data}}.dump());
}

void Gateway::Impl::HandleCompletion(const http::Request& req,
                                     const std::shared_ptr<http::Responder>& out, bool chat) {
  requests->Add(1, chat ? "chat" : "completions");
  const Clock::time_point start = Clock::now();
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
      out->Send(
          429, "application/json",
          http::OpenAiErrorBody(429, "rate limit of API key '" + it->second.cfg.name + "' exceeded",
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
    out->Send(400, "application/json", http::OpenAiErrorBody(400, parsed.status().message()));
    return;
  }
  switch (models.Check(parsed->model)) {
    case ModelDirectory::Verdict::kServed:
      break;
    case ModelDirectory::Verdict::kGone:
      out->Send(503, "application/json",
                http::OpenAiErrorBody(503, "no worker serves the model '" + parsed->model + "' now",
                                      "model_unavailable"),
                {{"Retry-After", "1"}});
      return;
    case ModelDirectory::Verdict::kUnknown:
      out->Send(404, "application/json",
                http::OpenAiErrorBody(404, "the model '" + parsed->model + "' does not exist",
                                      "model_not_found"));
      return;
  }
  ProxyInput in;
  in.chat = chat;
  in.stream = parsed->stream;
  in.body = req.body;
  in.model = parsed->model;
  in.cost = parsed->cost;
  in.prefix = std::move(parsed->prefix);
  in.start = start;
  in.deadline = start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(cfg.request_timeout_s));
  const std::string& cc = req.Header("cache-control");
  const bool no_cache =
      cc.find("no-cache") != std::string::npos || cc.find("no-store") != std::string::npos;
  std::optional<CacheKey> key;
  if (cache_front && parsed->cacheable && !no_cache) {
    key = CacheKey{cache::ScopeKey({ns, parsed->model, parsed->context, parsed->sampling}), ns,
                   parsed->query};
  }
  in.keep_answer = key.has_value();
  const ReplyShape shape{chat, parsed->stream, parsed->include_usage, parsed->model, start};
  auto proxy = std::make_shared<ProxyRequest>(proxy_ctx, std::move(in), out);
  out->OnClose([weak = std::weak_ptr<ProxyRequest>(proxy)] {
    if (auto p = weak.lock()) p->Cancel();
  });
  if (!key) {
    cache_lookups->Add(1, "bypass");
    Proxy(proxy, std::nullopt, std::nullopt, start);
    return;
  }
  // The cache pool looks it up; a hit is answered there, a miss goes on to the workers.
  cache_front->Lookup(*key, shape, out, [this, proxy, key = *key, start](CacheFront::Looked l) {
    if (l.served) {
      Finish(start, 200, true);
      // The client has its answer; a sampled hit is asked again of a worker, in the background.
      if (auditor && auditor->Sample()) auditor->Start(proxy->input(), std::move(l.content));
      return;
    }
    Proxy(proxy, key, std::move(l.miss), start);
  });
}

void Gateway::Impl::Proxy(const std::shared_ptr<ProxyRequest>& proxy, std::optional<CacheKey> key,
                          std::optional<cache::LookupResult> looked_up, Clock::time_point start) {
  proxy->Start(
      [this, key = std::move(key), looked_up = std::move(looked_up), start](const ProxyResult& r) {
        // Filed before the client hears the end, so asking again at once finds it.
        if (key && r.answer) cache_front->Store(*key, *r.answer, looked_up);
        Finish(start, r.status, false);
      });
}

void Gateway::Impl::Finish(Clock::time_point start, int status, bool hit) {
  const double ms = MsSince(start);
  const bool error = status >= 500;
  ++totals.requests;
  if (error) ++totals.errors;
  if (hit) ++totals.hits;
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
  models.Retain(pool.Targets());  // forget removed workers' models
  health.CheckAll();
}

// A worker answered its health check: every 30th time (and until it is known) its model list
// is read again.
void Gateway::Impl::OnHealthy(const WorkerAddress& w, bool refresh) {
  if (stopped) return;
  models.OnHealthy(w, refresh, *checker);
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
  std::unique_ptr<cache::Cache> opened;
  std::shared_ptr<cache::Embedder> audit_embedder = embedder;  // the audit compares answers
  if (g.cfg.cache.enabled && embedder) {
    auto c = cache::OpenCache(std::move(embedder), g.cfg.cache);
    if (!c.ok()) return c.status();
    opened = std::move(c).value();
  }
  g.requests = &g.metrics.AddCounter("frugal_gateway_requests",
                                     "completion requests accepted, by route", "route");
  g.responses =
      &g.metrics.AddCounter("frugal_gateway_responses",
                            "completion responses, by HTTP status (499: client left)", "code");
  g.proxy_metrics.retries = &g.metrics.AddCounter(
      "frugal_gateway_retries",
      "requests sent again to another worker after a failure before the first byte");
  g.cache_lookups = &g.metrics.AddCounter(
      "frugal_gateway_cache", "cache outcome per request: hit, miss, bypass (not cacheable)",
      "result");
  g.proxy_metrics.stream_errors =
      &g.metrics.AddCounter("frugal_gateway_stream_errors",
                            "streams that broke midway and ended with an SSE error event");
  g.proxy_metrics.continuations = &g.metrics.AddCounter(
      "frugal_gateway_stream_continuations",
      "streams whose worker broke, continued on another worker from the text already sent");
  g.proxy_metrics.timeouts = &g.metrics.AddCounter(
      "frugal_gateway_timeouts",
      "requests that ran past request_timeout_s (504; not retried, not a worker failure)");
  g.rate_limited = &g.metrics.AddCounter("frugal_gateway_rate_limited",
                                         "requests refused with 429, by API key name", "key");
  g.latency = &g.metrics.AddHistogram("frugal_gateway_request_duration_seconds",
                                      "arrival to the last byte, every completion request",
                                      MetricsRegistry::LatencyBuckets());
  g.proxy_metrics.ttft = &g.metrics.AddHistogram("frugal_gateway_ttft_seconds",
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
  auto* bad_cache_entries = &g.metrics.AddCounter(
      "frugal_gateway_cache_bad_entries",
      "cache hits whose stored answer was not a valid one (served as misses)");
  if (opened) {
    // Two lanes per embedding thread: a long query (its own engine, cache/embedder.h) never
    // takes the thread a short one waits for.
    g.cache_front = std::make_unique<CacheFront>(
        std::move(opened), static_cast<size_t>(2 * std::max(1, g.cfg.cache.threads)),
        CacheFrontMetrics{g.cache_lookups, bad_cache_entries, g.proxy_metrics.ttft});
  }
  http::AddConnectionMetrics(g.metrics, "frugal_gateway", [&g] { return g.server.get(); });

  http::ClientOptions uo;
  uo.io_threads = 2;
  uo.response_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(g.cfg.request_timeout_s * 1e3));
  uo.max_idle_per_host = 256;
  g.upstream = HttpUpstream(uo);
  http::ClientOptions co;
  co.connect_timeout = g.cfg.health.timeout;
  co.response_timeout = g.cfg.health.timeout;
  g.checker = std::make_unique<http::Client>(co);
  g.timers_work.emplace(g.timer_io.get_executor());
  g.timer_thread = std::thread([&g] { g.timer_io.run(); });
  g.health_timer = std::make_unique<net::steady_timer>(g.timer_io);

  ProxyContext& pc = g.proxy_ctx;
  pc.pool = &g.pool;
  pc.policy = g.policy.get();
  pc.retry = &g.retry;
  pc.upstream = g.upstream.get();
  pc.timers = &g.timers;
  pc.stats = &g.stats;
  pc.metrics = &g.proxy_metrics;
  pc.stopped = &g.stopped;
  pc.max_continuations = g.cfg.max_retries;
  pc.request_timeout_s = g.cfg.request_timeout_s;
  pc.worker_key = [&g](const std::string& w) { return g.WorkerKey(w); };
  pc.lacking_model = [&g](const std::string& m) { return g.models.Lacking(m); };
  if (g.cache_front && g.cfg.cache_audit.rate > 0) {
    AuditContext au;
    au.proxy = g.proxy_ctx;  // the auditor drops its stats and metrics: not a client request
    au.embedder = audit_embedder;
    au.rate = g.cfg.cache_audit.rate;
    au.min_similarity = g.cfg.cache_audit.min_similarity;
    au.max_in_flight = g.cfg.cache_audit.max_in_flight;
    au.request_timeout_s = g.cfg.request_timeout_s;
    au.run_on_cache_pool = [&g](std::function<void()> task) {
      g.cache_front->Post(std::move(task));
    };
    au.audits = &g.metrics.AddCounter(
        "frugal_gateway_cache_audits",
        "sampled cache hits (cache.audit_rate) asked again of a worker, by result: agree, "
        "disagree_numbers, disagree_meaning, failed, skipped (no worker free), capped "
        "(cache.audit_max_in_flight audits already running: not sent)",
        "result");
    g.auditor = std::make_unique<Auditor>(std::move(au));
  }
  AdminContext ac;
  ac.cfg = &g.cfg;
  ac.pool = &g.pool;
  ac.policy = g.policy.get();
  ac.probe = &g.probe;
  ac.cache = g.cache_front.get();
  ac.stats = &g.stats;
  ac.totals = &g.totals;
  ac.proxy = &g.proxy_metrics;
  ac.audits = g.auditor ? &g.auditor->totals() : nullptr;
  ac.metrics = &g.metrics;
  ac.started = g.started;
  ac.poll_now = [&g] { net::post(g.timer_io, [&g] { g.PollAll(); }); };
  g.admin = std::make_unique<Admin>(std::move(ac));

  net::post(g.timer_io, [&g] { g.PollAll(); });
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
    g.timer_io.stop();
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
  // The timers run out rather than stop: a retry or continuation waiting out its backoff still
  // gets its attempt (and so its one end), and no new backoff starts once `stopped` is set
  // (ProxyRequest refuses instead), so this ends within the longest backoff.
  net::post(g.timer_io, [&g] { g.health_timer->cancel(); });
  g.timers_work.reset();
  g.timer_thread.join();
  // Lookups still queued may dispatch: the upstream client stays until they are done. Then
  // whatever is still in flight is cancelled; its Responders go before the server does.
  if (g.cache_front) g.cache_front->Join();
  g.admin->Join();
  g.upstream.reset();
  g.checker.reset();
  g.cache_front.reset();  // the cache snapshots, when configured
}

}  // namespace frugal::gateway
