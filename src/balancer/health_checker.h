// Active health checking (Envoy's health checker, outlier detection in WorkerPool): every worker
// of the pool, ejected ones included, is asked for its load; each answer or failure goes to
// WorkerPool::ReportCheck, which decides ejection, half-open probing and restoration.
//
// The checker owns what to probe and when a probe is already out: a slow worker is never asked
// twice at once, so a hanging worker cannot pile up probes. How a worker is asked is a LoadProbe:
// the gateway's asks over HTTP, the unit tests' answer from a script. The gateway's timer calls
// CheckAll once per health interval.
//
// Thread safety: every method may be called from any thread; probes may answer on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "balancer/load_report.h"
#include "balancer/worker_pool.h"
#include "common/thread_annotations.h"
#include "frugal/status.h"

namespace frugal::gateway {

class LoadProbe {
 public:
  virtual ~LoadProbe() = default;
  // Asks `worker` for its load; calls `done` exactly once, on any thread, possibly before
  // returning. A worker's own failure (connection, timeout, 5xx) is an error status.
  virtual void Probe(const WorkerAddress& worker,
                     std::function<void(StatusOr<WorkerLoad>)> done) = 0;
};

class HealthChecker {
 public:
  // After each successful check; `refresh` is true on a worker's first success and on every
  // `refresh_every`-th after it (the gateway re-reads the worker's model list then).
  using OnHealthy = std::function<void(const WorkerAddress& worker, bool refresh)>;

  HealthChecker(WorkerPool& pool, LoadProbe& probe, int refresh_every = 30,
                OnHealthy on_healthy = {});

  // Probes every worker of the pool that has no probe in flight. Forgets workers that left.
  void CheckAll();
  // Probes in flight now.
  size_t in_flight() const;

 private:
  void OnResult(const WorkerAddress& worker, const StatusOr<WorkerLoad>& load);

  WorkerPool& pool_;
  LoadProbe& probe_;
  const int refresh_every_;
  const OnHealthy on_healthy_;
  mutable Mutex mu_;
  std::set<std::string> checking_ FRUGAL_GUARDED_BY(mu_);            // a probe is out
  std::map<std::string, int64_t> successes_ FRUGAL_GUARDED_BY(mu_);  // per worker
};

}  // namespace frugal::gateway
