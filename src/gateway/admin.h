// The gateway's admin room: the admin API (/admin/workers: list, add, remove, drain; /admin/cache:
// invalidate, rotate), the Prometheus /metrics text and /status.json. It reads the pool, the
// traffic stats and the cache, and changes the pool and the cache; it never touches a request.
// Who may call it (the admin token, the admin listener) is gateway.cc's to check.
//
// Threads: Handle and the views run on the HTTP strands; a cache rotation runs on a thread of
// its own, one at a time, joined by Join (shutdown) or by the next rotation.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "balancer/http_load_probe.h"
#include "balancer/policy.h"
#include "balancer/worker_pool.h"
#include "common/metrics.h"
#include "common/thread_annotations.h"
#include "gateway/audit.h"
#include "gateway/cache_front.h"
#include "gateway/config.h"
#include "gateway/proxy.h"
#include "gateway/stats.h"
#include "http/server.h"

namespace frugal::gateway {

// What the admin room reads and changes; all owned by the gateway and outliving it.
struct AdminContext {
  const GatewayConfig* cfg = nullptr;
  WorkerPool* pool = nullptr;
  const Policy* policy = nullptr;
  HttpLoadProbe* probe = nullptr;
  CacheFront* cache = nullptr;  // null: the cache is off
  TrafficStats* stats = nullptr;
  const RequestTotals* totals = nullptr;
  const ProxyMetrics* proxy = nullptr;
  const AuditTotals* audits = nullptr;  // null: no cache audit
  MetricsRegistry* metrics = nullptr;
  std::chrono::steady_clock::time_point started;
  std::function<void()> poll_now;  // poll every worker now (a worker was added)
};

class Admin {
 public:
  explicit Admin(AdminContext ctx) : ctx_(std::move(ctx)) {}
  ~Admin() { Join(); }

  // An /admin/ route; the caller has checked the admin token.
  void Handle(const http::Request& req, const std::shared_ptr<http::Responder>& out);
  // The Prometheus text: the gateway's registry, per-worker families, the cache's.
  std::string RenderMetrics();
  // full: with the workers' addresses and last errors (for the admin).
  std::string StatusJson(bool full);
  // Waits for a rotation still running (shutdown).
  void Join();

 private:
  using json = nlohmann::json;
  struct Rotation {
    std::string state = "idle";  // idle, running, done, failed
    std::string model, error;
    double seconds = 0;
    int64_t started_unix = 0;
  };
  json WorkerJson(const WorkerInfo& w, const std::map<std::string, double>& shares) const;
  void StartRotation(const std::string& body, const std::shared_ptr<http::Responder>& out);
  json RotationJson() const FRUGAL_REQUIRES(rotation_mu_);

  const AdminContext ctx_;
  Mutex rotation_mu_;
  Rotation rotation_ FRUGAL_GUARDED_BY(rotation_mu_);
  std::thread rotation_thread_;  // POST /admin/cache/rotate; joined by Join or the next one
};

}  // namespace frugal::gateway
