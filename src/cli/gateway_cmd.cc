// `frugal gateway` (the front door over running workers) and `frugal up` (the whole stack on one
// machine: N local workers + the gateway with the embedded cache).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cache/verifier.h"
#include "cli/commands.h"
#include "cli/supervisor.h"
#include "frugal/engine.h"
#include "gateway/gateway.h"
#include "http/client.h"

namespace frugal::cli {
namespace {

using gateway::GatewayConfig;

struct GatewayFlags {
  std::string config;
  std::vector<std::string> workers;  // URL or NAME=URL
  std::string host, policy, cache_model, cache_snapshot, cache_redis, admin_token, admin_token_file,
      admin_listen;
  int port = -1;
  int64_t health_interval_ms = 0;
  int max_retries = -1;
  double cache_threshold = 0;
  double cache_audit_rate = -1;        // -1: the config's
  int cache_audit_max_in_flight = -1;  // -1: the config's
  double cache_target_precision = 0;   // 0: the config's
  std::string cache_decision;          // "": the config's
  bool no_cache = false;
  bool no_prefix_routing = false;
  double shutdown_grace_s = 30;

  void Add(CLI::App* cmd, bool with_workers) {
    const GatewayConfig d;  // the defaults the help texts name
    cmd->add_option("--config", config, "YAML config file (docs/gateway.md); flags override it");
    if (with_workers)
      cmd->add_option("--worker", workers,
                      "a worker, http://HOST:PORT or NAME=http://HOST:PORT (repeatable)");
    cmd->add_option("--host", host, "address to listen on (default " + d.host + ")");
    cmd->add_option("--port", port,
                    "port; 0 = any free port (default " + std::to_string(d.port) + ")")
        ->check(CLI::Range(0, 65535));
    cmd->add_option("--policy", policy, "routing policy (default " + d.policy + ")")
        ->check(CLI::IsMember(gateway::PolicyNames()));
    cmd->add_option("--health-interval-ms", health_interval_ms,
                    "milliseconds between health polls of each worker (default " +
                        std::to_string(d.health.interval.count()) + ")")
        ->check(CLI::Range(int64_t{10}, int64_t{3'600'000}));
    cmd->add_option("--max-retries", max_retries,
                    "other workers tried after a failure before the first byte (default " +
                        std::to_string(d.max_retries) + ")")
        ->check(CLI::Range(0, 10));
    cmd->add_flag("--no-cache", no_cache, "no semantic cache");
    cmd->add_flag("--no-prefix-routing", no_prefix_routing,
                  "route by load and cost alone, not also to the worker that was sent the "
                  "request's conversation before");
    cmd->add_option("--cache-model", cache_model,
                    "embedding model of the cache (default " + d.cache.model + ")");
    cmd->add_option("--cache-threshold", cache_threshold,
                    "candidate cosine of the cache (default: the embedder's calibrated one; " +
                        ShortNumber(cache::kUncalibratedRecallThreshold) + " without)")
        ->check(CLI::Range(0.01, 1.0));
    cmd->add_option("--cache-target-precision", cache_target_precision,
                    "precision the learned hit decision's threshold is picked for, per "
                    "language, from its dev-split calibration (default " +
                        ShortNumber(d.cache.target_precision) + ")")
        ->check(CLI::Range(0.5, 1.0));
    cmd->add_option("--cache-decision", cache_decision,
                    "hit decision: learned (default) or rules (the previous verifier)")
        ->check(CLI::IsMember({"learned", "rules"}));
    cmd->add_option("--cache-audit-rate", cache_audit_rate,
                    "share of cache hits also sent to a worker and compared, for a live "
                    "false-hit estimate in /metrics (default " +
                        ShortNumber(d.cache_audit.rate) + "; 0 = off)")
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--cache-audit-max-in-flight", cache_audit_max_in_flight,
                    "audits running at once; a sampled hit beyond it is counted `capped` and "
                    "not sent to a worker (default " +
                        std::to_string(d.cache_audit.max_in_flight) + "; 0 = no cap)")
        ->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--cache-snapshot", cache_snapshot,
                    "file the cache is saved to (periodically and on exit) and reloaded from");
    cmd->add_option("--cache-redis", cache_redis,
                    "share the cache through this Redis with RediSearch (host:port, "
                    "redis://[user:pass@]host:port, "
                    "rediss:// for TLS; a password better in cache.redis_password_file or "
                    "FRUGAL_REDIS_PASSWORD)");
    cmd->add_option("--admin-token-file", admin_token_file,
                    "file whose first line is the admin API's token (also FRUGAL_ADMIN_TOKEN, "
                    "or the config's admin_token_file; none = admin API off)");
    cmd->add_option("--admin-token", admin_token,
                    "the admin token itself (visible in `ps`: prefer --admin-token-file)");
    cmd->add_option("--admin-listen", admin_listen,
                    "HOST:PORT of a separate listener for the admin API, /status and /metrics, "
                    "which the public one then does not serve");
    cmd->add_option("--shutdown-grace", shutdown_grace_s,
                    "seconds in-flight requests get on SIGINT/SIGTERM (default " +
                        ShortNumber(shutdown_grace_s) + ")")
        ->check(CLI::Range(0.0, 1e6));
  }

  StatusOr<GatewayConfig> Resolve() const {
    GatewayConfig c;
    if (!config.empty()) {
      auto loaded = gateway::LoadGatewayConfig(config);
      if (!loaded.ok()) return loaded.status();
      c = *loaded;
    }
    for (const auto& w : workers) {
      gateway::WorkerConfig wc;
      const size_t eq = w.find('=');
      if (eq != std::string::npos && w.compare(0, 7, "http://") != 0) {
        wc.name = w.substr(0, eq);
        wc.url = w.substr(eq + 1);
      } else {
        wc.url = w;
        wc.name = "w" + std::to_string(c.workers.size());
      }
      c.workers.push_back(wc);
    }
    if (!host.empty()) c.host = host;
    if (port >= 0) c.port = static_cast<uint16_t>(port);
    if (!policy.empty()) c.policy = policy;
    if (health_interval_ms > 0) c.health.interval = std::chrono::milliseconds(health_interval_ms);
    if (max_retries >= 0) c.max_retries = max_retries;
    if (no_cache) c.cache.enabled = false;
    if (no_prefix_routing) c.prefix_routing = false;
    if (!cache_model.empty()) c.cache.model = cache_model;
    if (cache_threshold > 0) c.cache.threshold = static_cast<float>(cache_threshold);
    if (cache_audit_rate >= 0) c.cache_audit.rate = cache_audit_rate;
    if (cache_audit_max_in_flight >= 0) c.cache_audit.max_in_flight = cache_audit_max_in_flight;
    if (cache_target_precision > 0) c.cache.target_precision = cache_target_precision;
    if (!cache_decision.empty()) {
      auto kind = cache::ParseDecisionKind(cache_decision);
      if (!kind.ok()) return kind.status();
      c.cache.decision = *kind;
    }
    if (!cache_snapshot.empty()) c.cache.snapshot = cache_snapshot;
    if (!cache_redis.empty()) c.cache.redis = cache_redis;
    if (!admin_token.empty()) c.admin_token = admin_token;
    if (!admin_token_file.empty()) c.admin_token_file = admin_token_file;
    if (!admin_listen.empty()) c.admin_listen = admin_listen;
    std::vector<std::string> warnings;
    FRUGAL_RETURN_IF_ERROR(gateway::LoadGatewaySecrets(c, &warnings));
    for (const auto& w : warnings) std::fprintf(stderr, "frugal: warning: %s\n", w.c_str());
    return c;
  }
};

StatusOr<std::unique_ptr<gateway::Gateway>> StartGateway(const GatewayConfig& c) {
  std::shared_ptr<cache::Embedder> embedder;
  if (c.cache.enabled) {
    auto e = cache::OpenEngineEmbedder(c.cache.model, c.cache.threads);
    if (!e.ok()) {
      return InvalidArgument("the cache's embedding model: " + e.status().message() +
                             " (run scripts/get-models.sh, or --no-cache)");
    }
    embedder = std::move(e).value();
  }
  return gateway::Gateway::Start(c, std::move(embedder));
}

void PrintListening(const char* who, const GatewayConfig& c, const gateway::Gateway& gw) {
  std::printf("frugal %s: listening on http://%s:%u (policy %s, %zu workers, cache %s)\n", who,
              c.host.c_str(), static_cast<unsigned>(gw.port()), c.policy.c_str(), c.workers.size(),
              c.cache.enabled ? "on" : "off");
  if (gw.admin_port() != 0) {
    const std::string host = c.admin_listen.substr(0, c.admin_listen.rfind(':'));
    std::printf("frugal %s: admin API, /status and /metrics on http://%s:%u\n", who, host.c_str(),
                static_cast<unsigned>(gw.admin_port()));
  }
  std::fflush(stdout);
}

int RunGateway(const GatewayFlags& f) {
  sigset_t stop = BlockStopSignals();
  auto cfg = f.Resolve();
  if (!cfg.ok()) return Fail(cfg.status());
  auto gw = StartGateway(*cfg);
  if (!gw.ok()) return Fail(gw.status());
  PrintListening("gateway", *cfg, **gw);
  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "frugal gateway: %s: finishing requests in flight (up to %.0f s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", f.shutdown_grace_s);
  (*gw)->Shutdown(std::chrono::milliseconds(static_cast<int64_t>(f.shutdown_grace_s * 1e3)));
  return 0;
}

// ---- frugal up ----

// Asks the gateway a question the way a client would, and says whether the cache answered.
void Ask(uint16_t port, const std::string& model, const std::string& question) {
  http::Client client;
  http::ClientRequest r;
  r.port = port;
  r.method = "POST";
  r.target = "/v1/chat/completions";
  r.headers = {{"Content-Type", "application/json"}};
  r.body = nlohmann::json{
      {"model", model},
      {"messages", {{{"role", "user"}, {"content", question}}}},
      {"max_tokens", 96},
      {"temperature",
       0}}.dump();
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto resp = client.Fetch(r);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!resp.ok()) {
      std::fprintf(stderr, "frugal up: asking failed: %s\n", resp.status().message().c_str());
      return;
    }
    const std::string* cache = resp->Header("X-Frugal-Cache");
    auto j = nlohmann::json::parse(resp->body, nullptr, false);
    std::string answer = resp->body;
    if (resp->status == 200 && j.is_object())
      answer = j["choices"][0]["message"].value("content", "");
    std::printf("> %s\n%s\n[HTTP %d, cache %s, %.0f ms]\n", question.c_str(), answer.c_str(),
                resp->status, cache ? cache->c_str() : "?", ms);
    std::fflush(stdout);
  }
}

struct UpFlags {
  GatewayFlags gw;
  int workers = 2;
  std::string model = "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";
  int threads = 0;
  std::string simulate, ask;
  std::vector<std::string> serve_args;
};

int RunUp(const UpFlags& f) {
  sigset_t stop = BlockStopSignals();
  auto cfg = f.gw.Resolve();
  if (!cfg.ok()) return Fail(cfg.status());
  if (!std::filesystem::exists(f.model))
    return Fail(NotFound("model not found: " + f.model + " (run scripts/get-models.sh)"));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = f.threads > 0 ? f.threads : std::max(1, cores / f.workers);
  std::vector<Child> kids;
  for (int i = 0; i < f.workers; ++i) {
    std::vector<std::string> args = {
        "frugal", "serve",  "-m",        f.model, "--port",
        "0",      "--host", "127.0.0.1", "-t",    std::to_string(threads)};
    if (!f.simulate.empty()) args.insert(args.end(), {"--simulate", f.simulate});
    args.insert(args.end(), f.serve_args.begin(), f.serve_args.end());
    auto c = SpawnWorker(args, std::chrono::seconds(300));
    if (!c.ok()) {
      StopWorkers(kids, std::chrono::seconds(5));
      return Fail(c.status());
    }
    std::fprintf(stderr, "frugal up: worker w%d at %s (pid %d, threads %d)\n", i, c->url.c_str(),
                 static_cast<int>(c->pid), threads);
    gateway::WorkerConfig wc;
    wc.name = "w" + std::to_string(i);
    wc.url = c->url;
    cfg->workers.push_back(std::move(wc));
    kids.push_back(std::move(*c));
  }
  auto gw = StartGateway(*cfg);
  if (!gw.ok()) {
    StopWorkers(kids, std::chrono::seconds(5));
    return Fail(gw.status());
  }
  PrintListening("up: gateway", *cfg, **gw);
  const std::string model = std::filesystem::path(f.model).stem().string();
  std::printf(
      "frugal up: try  curl -s http://%s:%u/v1/chat/completions -H 'Content-Type: "
      "application/json' "
      "-d '{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
      "\"temperature\": 0}'\n"
      "frugal up: status page http://%s:%u/status  (Ctrl-C stops everything)\n",
      cfg->host.c_str(), static_cast<unsigned>((*gw)->port()), model.c_str(), cfg->host.c_str(),
      static_cast<unsigned>((*gw)->port()));
  std::fflush(stdout);
  if (!f.ask.empty()) {
    // The gateway learns the model ids at its first poll.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Ask((*gw)->port(), model, f.ask);
  }
  int sig = 0;
  for (;;) {
    const timespec tick{0, 200'000'000};
    sig = sigtimedwait(&stop, nullptr, &tick);
    if (sig > 0) break;
    Supervise(kids);
  }
  std::fprintf(stderr, "frugal up: %s: stopping the gateway, then %zu workers\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", kids.size());
  (*gw)->Shutdown(std::chrono::milliseconds(static_cast<int64_t>(f.gw.shutdown_grace_s * 1e3)));
  StopWorkers(kids, std::chrono::seconds(static_cast<int64_t>(f.gw.shutdown_grace_s) + 5));
  return 0;
}

}  // namespace

void AddGatewayCommands(CLI::App& app, Commands& out) {
  auto gf = std::make_shared<GatewayFlags>();
  auto* gw = app.add_subcommand(
      "gateway",
      "OpenAI-compatible front door: semantic cache + cost-aware load balancing over workers");
  gf->Add(gw, true);
  out.emplace_back(gw, [gf] { return RunGateway(*gf); });

  auto uf = std::make_shared<UpFlags>();
  auto* up = app.add_subcommand("up",
                                "the whole stack on this machine: N workers on free ports + the "
                                "gateway with the embedded cache");
  uf->gw.Add(up, false);
  up->add_option("--workers", uf->workers, WithDefault("local workers to start", uf->workers))
      ->check(CLI::Range(1, 64));
  up->add_option("-m,--model", uf->model,
                 "the workers' model (default: SmolLM2-135M-Instruct Q4_1)");
  up->add_option("-t,--threads", uf->threads,
                 "compute threads per worker (default: the cores shared out)")
      ->check(CLI::Range(0, 1024));
  up->add_option("--simulate", uf->simulate,
                 "start simulated workers (test instrument, see frugal serve --simulate)");
  up->add_option("--ask", uf->ask,
                 "once up, ask this question twice through the gateway (the second answer comes "
                 "from the cache)");
  up->add_option("--serve-arg", uf->serve_args,
                 "an extra argument for every `frugal serve` (repeatable)")
      ->allow_extra_args(false);
  out.emplace_back(up, [uf] {
    if (uf->gw.port < 0) uf->gw.port = 8000;
    return RunUp(*uf);
  });
}

}  // namespace frugal::cli
