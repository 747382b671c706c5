// The gateway's view of its workers: their state (healthy, ejected, half-open, draining), the
// load they last reported, and what the gateway itself has in flight on each; and the routing
// policies that pick one for a request.
//
// Load between health polls: a worker's /queue_depth is a few hundred milliseconds old when a
// request is routed, and during a spike hundreds of requests arrive in that time. So the pool
// keeps its own in-flight count and estimated cost per worker, updated at every dispatch and
// completion, and estimates a worker's load as what the gateway has in flight there now plus
// the part of the polled load the gateway did not cause (other gateways, requests sent
// directly). Decisions never rest on the stale poll alone.
//
// Health (outlier detection): a worker is ejected after `eject_after` consecutive failed checks
// (connection error, timeout, 5xx; never 4xx), after as many consecutive failed requests (the
// circuit breaker), or when its reported queue exceeds `max_queue`. An ejected worker is still
// polled; a successful check makes it half-open (it may take one trial request at a time), and
// `restore_after` consecutive successes restore it. A draining worker gets no new requests.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "balancer/load_adapters.h"
#include "balancer/load_report.h"
#include "balancer/policy.h"
#include "common/thread_annotations.h"
#include "frugal/status.h"

namespace frugal::gateway {

enum class WorkerState { kHealthy, kEjected, kHalfOpen, kDraining };
std::string_view StateName(WorkerState s);

struct HealthOptions {
  std::chrono::milliseconds interval{1000};  // between polls of each worker
  std::chrono::milliseconds timeout{1000};   // for one poll
  int eject_after = 3;                       // consecutive failures (checks or requests)
  int restore_after = 2;                     // consecutive successful checks to leave half-open
  int64_t max_queue = 500;                   // reported waiting + running beyond this ejects
};

// Where a worker is, for health checks.
struct WorkerAddress {
  std::string name, host;
  uint16_t port = 0;
  WorkerKind kind = WorkerKind::kAuto;  // as configured; kAuto: detected at the first poll
};

struct WorkerInfo {
  std::string name, url, host;
  uint16_t port = 0;
  double weight = 1;
  WorkerKind kind = WorkerKind::kAuto;
  WorkerState state = WorkerState::kHealthy;
  std::string last_error;
  WorkerLoad load;          // last poll
  bool polled = false;      // a poll has succeeded at least once
  int64_t in_flight = 0;    // sent by this gateway, not finished
  double in_flight_ms = 0;  // their estimated cost
  int64_t chosen = 0;       // requests routed here, ever
  int64_t ejections = 0;
  double est_queue = 0, est_backlog_ms = 0;
};

// A routed request's hold on its worker: released (in-flight count and cost given back) when it
// is destroyed, whatever path the request ends by.
class WorkerPool;

class Lease {
 public:
  Lease() = default;
  ~Lease();
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  explicit operator bool() const { return worker_ != nullptr; }
  const std::string& name() const;
  const std::string& host() const;
  uint16_t port() const;

 private:
  friend class WorkerPool;
  struct Worker;
  WorkerPool* pool_ = nullptr;  // a Lease must not outlive its pool
  std::shared_ptr<Worker> worker_;
  double cost_ms_ = 0;
  void Release();
};

// Failures that count against a worker (never a 4xx: that is the client's).
enum class Outcome { kSuccess, kFailure, kOverloaded };

class WorkerPool {
 public:
  explicit WorkerPool(HealthOptions health);

  // name must be unique and url "http://host:port".
  Status Add(std::string name, std::string url, double weight = 1,
             WorkerKind kind = WorkerKind::kAuto);
  Status Remove(std::string_view name);
  Status SetDraining(std::string_view name, bool draining);
  std::vector<WorkerInfo> List() const;
  size_t size() const;

  // Picks a worker for the request among those that may take traffic, skipping `exclude`
  // (workers already tried); an empty Lease when none can.
  // `prefix`, when given, steers by what each worker was sent before (set_prefix_routing).
  Lease Pick(Policy& policy, const RequestCost& cost, const std::vector<std::string>& exclude,
             const RequestPrefix* prefix = nullptr);

  // A request's result on the worker that was leased (the passive circuit breaker).
  void ReportRequest(const Lease& lease, Outcome outcome, std::string_view error = {});
  // A health check's result.
  void ReportCheck(std::string_view name, const StatusOr<WorkerLoad>& result);

  // Workers to poll now: every one (ejected ones are probed too).
  std::vector<WorkerAddress> Targets() const;

  int64_t ejections() const { return ejections_.load(); }

  // Prefix-aware routing (on by default): each candidate is costed for the prompt past the
  // longest prefix of the request the gateway sent it before (PrefixIndex), so a follow-up turn
  // goes where its conversation's KV is unless that worker's backlog outweighs the prefill it
  // saves; then the policy picks as ever. Off: every worker is costed for the whole prompt.
  void set_prefix_routing(bool on);
  // Requests routed to a worker that had been sent one of their prefixes.
  int64_t prefix_routed() const { return prefix_routed_.load(); }

 private:
  friend class Lease;
  void Release(Lease::Worker& w, double cost_ms);
  std::shared_ptr<Lease::Worker> FindLocked(std::string_view name) const FRUGAL_REQUIRES(mu_);
  void EjectLocked(Lease::Worker& w, std::string why) FRUGAL_REQUIRES(mu_);
  RequestCost TypicalLocked() const FRUGAL_REQUIRES(mu_);

  const HealthOptions health_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Lease::Worker>> workers_ FRUGAL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ FRUGAL_GUARDED_BY(mu_){0x5eed};
  // The shape of the requests routed (an average), which costs the requests a worker holds for
  // others when its engine reports their number but not their time.
  bool typical_known_ FRUGAL_GUARDED_BY(mu_) = false;
  double typical_prompt_ FRUGAL_GUARDED_BY(mu_) = 0, typical_max_ FRUGAL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> ejections_{0};
  bool prefix_routing_ FRUGAL_GUARDED_BY(mu_) = true;
  PrefixIndex prefixes_ FRUGAL_GUARDED_BY(mu_);
  std::atomic<int64_t> prefix_routed_{0};
};

// "http://host:port[/]" -> host, port.
StatusOr<std::pair<std::string, uint16_t>> ParseWorkerUrl(std::string_view url);

}  // namespace frugal::gateway
