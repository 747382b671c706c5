#include "balancer/health_checker.h"

#include <utility>
#include <vector>

namespace frugal::gateway {

HealthChecker::HealthChecker(WorkerPool& pool, LoadProbe& probe, int refresh_every,
                             OnHealthy on_healthy)
    : pool_(pool),
      probe_(probe),
      refresh_every_(refresh_every < 1 ? 1 : refresh_every),
      on_healthy_(std::move(on_healthy)) {}

void HealthChecker::CheckAll() {
  const std::vector<WorkerAddress> targets = pool_.Targets();
  std::vector<WorkerAddress> due;
  {
    MutexLock lock(mu_);
    for (auto it = successes_.begin(); it != successes_.end();) {
      bool live = false;
      for (const WorkerAddress& t : targets) live = live || t.name == it->first;
      it = live ? std::next(it) : successes_.erase(it);
    }
    for (const WorkerAddress& t : targets) {
      if (checking_.insert(t.name).second) due.push_back(t);
    }
  }
  // Outside the lock: a probe may answer at once, on this thread.
  for (const WorkerAddress& t : due) {
    probe_.Probe(t, [this, t](const StatusOr<WorkerLoad>& load) { OnResult(t, load); });
  }
}

void HealthChecker::OnResult(const WorkerAddress& worker, const StatusOr<WorkerLoad>& load) {
  pool_.ReportCheck(worker.name, load);
  bool refresh = false;
  {
    MutexLock lock(mu_);
    checking_.erase(worker.name);
    if (load.ok()) refresh = successes_[worker.name]++ % refresh_every_ == 0;
  }
  if (load.ok() && on_healthy_) on_healthy_(worker, refresh);
}

size_t HealthChecker::in_flight() const {
  MutexLock lock(mu_);
  return checking_.size();
}

}  // namespace frugal::gateway
