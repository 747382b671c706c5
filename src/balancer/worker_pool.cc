#include "balancer/worker_pool.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace frugal::gateway {

// Latencies assumed for a worker that has not reported yet (a CPU worker's order of magnitude).
constexpr double kDefaultPrefillMs = 0.5, kDefaultDecodeMs = 20;

struct Lease::Worker {
  WorkerInfo info;
  int consecutive_failures = 0;   // checks and requests alike; reset by any success
  int consecutive_successes = 0;  // checks, while half-open
  int64_t in_flight_at_poll = 0;  // own in-flight when the last poll answered
  double in_flight_ms_at_poll = 0;
  bool removed = false;

  // A signal the worker does not report adds nothing to the gateway's own books.
  double Queue() const {
    const auto& l = info.load;
    const double polled = (l.Has(kSignalWaiting) ? static_cast<double>(l.waiting) : 0) +
                          (l.Has(kSignalRunning) ? static_cast<double>(l.running) : 0);
    const bool reported = l.Has(kSignalWaiting) || l.Has(kSignalRunning);
    return static_cast<double>(info.in_flight) +
           (reported ? std::max(0.0, polled - static_cast<double>(in_flight_at_poll)) : 0);
  }
  // The gateway's own in-flight cost plus what the worker holds beyond it. An engine that
  // gives its queue but no per-request time (llama.cpp's server while busy) has its requests
  // that are not this gateway's costed as `typical` ones (the shape of the requests the gateway
  // routes) at the worker's own speeds, served `running` at a time.
  double BacklogMs(const RequestCost& typical) const {
    const auto& l = info.load;
    if (l.Has(kSignalBacklog)) {
      // Every request the worker held at the poll was one of ours: none of its backlog is
      // anyone else's, however it costed them (what of it is still running is in in_flight_ms).
      // Without this a request that just finished kept its worker looking busy until the next
      // poll, and a conversation's next turn went elsewhere, away from its KV.
      if (in_flight_at_poll > 0 && l.Has(kSignalWaiting) && l.Has(kSignalRunning) &&
          l.waiting + l.running <= in_flight_at_poll) {
        return info.in_flight_ms;
      }
      return info.in_flight_ms + std::max(0.0, l.backlog_ms - in_flight_ms_at_poll);
    }
    if (!l.Has(kSignalWaiting) || !l.Has(kSignalRunning)) return info.in_flight_ms;
    const double foreign = std::max(
        0.0, static_cast<double>(l.waiting) + static_cast<double>(l.running) -
                 static_cast<double>(in_flight_at_poll));  // in double: huge counts do not wrap
    const double slots = static_cast<double>(std::max<int64_t>(l.running, 1));
    return info.in_flight_ms + foreign * CostMs(typical) / slots;
  }
  double CostMs(const RequestCost& c) const {
    const auto& l = info.load;
    const double p = info.polled && l.Has(kSignalPrefill) && l.prefill_ms_per_token > 0
                         ? l.prefill_ms_per_token
                         : kDefaultPrefillMs;
    const double d = info.polled && l.Has(kSignalDecode) && l.decode_ms_per_token > 0
                         ? l.decode_ms_per_token
                         : kDefaultDecodeMs;
    return static_cast<double>(c.prompt_tokens) * p + static_cast<double>(c.max_tokens) * d;
  }
};

std::string_view StateName(WorkerState s) {
  switch (s) {
    case WorkerState::kHealthy:
      return "healthy";
    case WorkerState::kEjected:
      return "ejected";
    case WorkerState::kHalfOpen:
      return "half_open";
    case WorkerState::kDraining:
      return "draining";
  }
  return "unknown";
}

StatusOr<std::pair<std::string, uint16_t>> ParseWorkerUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme))
    return InvalidArgument("worker URL must start with http://: " + std::string(url));
  std::string_view rest = url.substr(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || rest.find('/') != std::string_view::npos) {
    return InvalidArgument("worker URL must be http://HOST:PORT: " + std::string(url));
  }
  unsigned port = 0;
  const std::string_view ps = rest.substr(colon + 1);
  auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
  if (ec != std::errc() || p != ps.data() + ps.size() || port == 0 || port > 65535) {
    return InvalidArgument("bad port in worker URL: " + std::string(url));
  }
  return std::make_pair(std::string(rest.substr(0, colon)), static_cast<uint16_t>(port));
}

// ---- Lease ----

Lease::~Lease() { Release(); }
Lease::Lease(Lease&& o) noexcept
    : pool_(o.pool_), worker_(std::move(o.worker_)), cost_ms_(o.cost_ms_) {
  o.pool_ = nullptr;
}
Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Release();
    pool_ = o.pool_;
    worker_ = std::move(o.worker_);
    cost_ms_ = o.cost_ms_;
    o.pool_ = nullptr;
  }
  return *this;
}
void Lease::Release() {
  if (worker_ && pool_) pool_->Release(*worker_, cost_ms_);
  worker_.reset();
  pool_ = nullptr;
}
const std::string& Lease::name() const { return worker_->info.name; }
const std::string& Lease::host() const { return worker_->info.host; }
uint16_t Lease::port() const { return worker_->info.port; }

// ---- pool ----

WorkerPool::WorkerPool(HealthOptions health) : health_(health) {}

std::shared_ptr<Lease::Worker> WorkerPool::FindLocked(std::string_view name) const {
  for (const auto& w : workers_) {
    if (w->info.name == name) return w;
  }
  return nullptr;
}

Status WorkerPool::Add(std::string name, std::string url, double weight, WorkerKind kind) {
  // Names appear in metrics labels, URLs and the status page: keep them plain.
  if (name.empty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      })) {
    return InvalidArgument("worker name must be 1-64 letters, digits, '-', '_' or '.': '" + name +
                           "'");
  }
  if (!(weight > 0) || weight > 1e6) return InvalidArgument("worker weight must be > 0");
  auto hp = ParseWorkerUrl(url);
  if (!hp.ok()) return hp.status();
  auto w = std::make_shared<Lease::Worker>();
  w->info.name = std::move(name);
  w->info.url = std::move(url);
  w->info.host = hp->first;
  w->info.port = hp->second;
  w->info.weight = weight;
  w->info.kind = kind;
  MutexLock lock(mu_);
  if (FindLocked(w->info.name))
    return InvalidArgument("a worker named '" + w->info.name + "' exists");
  workers_.push_back(std::move(w));
  return Status::Ok();
}

Status WorkerPool::Remove(std::string_view name) {
  MutexLock lock(mu_);
  auto it = std::find_if(workers_.begin(), workers_.end(),
                         [&](const auto& w) { return w->info.name == name; });
  if (it == workers_.end()) return NotFound("no worker named '" + std::string(name) + "'");
  // Requests in flight keep their Worker alive through their Lease and finish normally.
  (*it)->removed = true;
  workers_.erase(it);
  prefixes_.Forget(name);
  return Status::Ok();
}

Status WorkerPool::SetDraining(std::string_view name, bool draining) {
  MutexLock lock(mu_);
  auto w = FindLocked(name);
  if (!w) return NotFound("no worker named '" + std::string(name) + "'");
  if (draining) {
    w->info.state = WorkerState::kDraining;
  } else if (w->info.state == WorkerState::kDraining) {
    // Back through half-open: it must prove itself before taking full traffic.
    w->info.state = WorkerState::kHalfOpen;
    w->consecutive_successes = 0;
  }
  return Status::Ok();
}

std::vector<WorkerInfo> WorkerPool::List() const {
  MutexLock lock(mu_);
  std::vector<WorkerInfo> out;
  out.reserve(workers_.size());
  for (const auto& w : workers_) {
    out.push_back(w->info);
    out.back().est_queue = w->Queue();
    out.back().est_backlog_ms = w->BacklogMs(TypicalLocked());
  }
  return out;
}

size_t WorkerPool::size() const {
  MutexLock lock(mu_);
  return workers_.size();
}

Lease WorkerPool::Pick(Policy& policy, const RequestCost& cost,
                       const std::vector<std::string>& exclude, const RequestPrefix* prefix) {
  MutexLock lock(mu_);
  // The typical request, this one included: an exponential average over the last ~20.
  constexpr double kAlpha = 0.05;
  if (!typical_known_) {
    typical_prompt_ = static_cast<double>(cost.prompt_tokens);
    typical_max_ = static_cast<double>(cost.max_tokens);
    typical_known_ = true;
  } else {
    typical_prompt_ += kAlpha * (static_cast<double>(cost.prompt_tokens) - typical_prompt_);
    typical_max_ += kAlpha * (static_cast<double>(cost.max_tokens) - typical_max_);
  }
  const RequestCost typical = TypicalLocked();
  // What a worker may hold of this request: its prefixes short of the whole prompt. The whole
  // of an earlier request asked again draws nothing (that is the semantic cache's to answer):
  // repeats of one short prompt are spread by load, not pinned to the worker that had it.
  std::span<const PrefixKey> held;
  if (prefix_routing_ && prefix != nullptr && prefix->prompt_chars > 0 && !prefix->keys.empty())
    held = std::span<const PrefixKey>(prefix->keys).first(prefix->keys.size() - 1);
  std::vector<Candidate> c;
  std::vector<int64_t> matched;  // per candidate: characters of the prompt it was sent before
  for (size_t i = 0; i < workers_.size(); ++i) {
    const Lease::Worker& w = *workers_[i];
    const bool open =
        w.info.state == WorkerState::kHealthy ||
        (w.info.state == WorkerState::kHalfOpen && w.info.in_flight == 0);  // one trial at a time
    if (!open) continue;
    if (std::find(exclude.begin(), exclude.end(), w.info.name) != exclude.end()) continue;
    RequestCost here = cost;
    matched.push_back(0);
    if (!held.empty()) {
      // What this worker was sent of the prompt before is (most likely) in its KV cache.
      matched.back() = std::min(prefixes_.Matched(held, w.info.name), prefix->prompt_chars);
      here.prompt_tokens -= cost.prompt_tokens * matched.back() / prefix->prompt_chars;
    }
    c.push_back({i, w.Queue(), w.BacklogMs(typical), w.CostMs(here), w.info.weight});
  }
  Lease lease;
  if (c.empty()) return lease;
  const size_t pick = policy.Pick(c, rng_);
  auto& w = workers_[c[pick].index];
  if (prefix_routing_ && prefix != nullptr && !prefix->keys.empty()) {
    if (matched[pick] > 0) prefix_routed_.fetch_add(1);
    prefixes_.Record(prefix->keys, w->info.name);
  }
  lease.pool_ = this;
  lease.worker_ = w;
  lease.cost_ms_ = c[pick].cost_ms;
  ++w->info.in_flight;
  w->info.in_flight_ms += lease.cost_ms_;
  ++w->info.chosen;
  return lease;
}

void WorkerPool::set_prefix_routing(bool on) {
  MutexLock lock(mu_);
  prefix_routing_ = on;
}

RequestCost WorkerPool::TypicalLocked() const {
  RequestCost typical;
  typical.prompt_tokens = static_cast<int64_t>(std::llround(typical_prompt_));
  typical.max_tokens = static_cast<int64_t>(std::llround(typical_max_));
  return typical;
}

void WorkerPool::Release(Lease::Worker& w, double cost_ms) {
  MutexLock lock(mu_);
  --w.info.in_flight;
  w.info.in_flight_ms = std::max(0.0, w.info.in_flight_ms - cost_ms);
}

void WorkerPool::EjectLocked(Lease::Worker& w, std::string why) {
  if (w.info.state == WorkerState::kEjected || w.info.state == WorkerState::kDraining) return;
  w.info.state = WorkerState::kEjected;
  w.info.last_error = std::move(why);
  // Whatever it held may be gone when it comes back (a restart): route by load alone.
  prefixes_.Forget(w.info.name);
  w.consecutive_successes = 0;
  ++w.info.ejections;
  ejections_.fetch_add(1);
}

void WorkerPool::ReportRequest(const Lease& lease, Outcome outcome, std::string_view error) {
  if (!lease) return;
  MutexLock lock(mu_);
  Lease::Worker& w = *lease.worker_;
  if (w.removed) return;
  if (outcome == Outcome::kSuccess) {
    w.consecutive_failures = 0;
    return;
  }
  // A full queue (503) is the worker's own back-pressure, not a fault: the request goes
  // elsewhere and the queue limit (max_queue) decides about ejection.
  if (outcome == Outcome::kOverloaded) return;
  w.info.last_error = std::string(error);
  if (++w.consecutive_failures >= health_.eject_after || w.info.state == WorkerState::kHalfOpen) {
    EjectLocked(w, "requests failed: " + std::string(error));
  }
}

void WorkerPool::ReportCheck(std::string_view name, const StatusOr<WorkerLoad>& result) {
  MutexLock lock(mu_);
  auto w = FindLocked(name);
  if (!w) return;
  if (!result.ok()) {
    w->info.last_error = result.status().message();
    w->consecutive_successes = 0;
    if (w->info.state == WorkerState::kHalfOpen) {
      EjectLocked(*w, "health check failed: " + result.status().message());
    } else if (++w->consecutive_failures >= health_.eject_after &&
               w->info.state == WorkerState::kHealthy) {
      EjectLocked(*w, "health check failed " + std::to_string(w->consecutive_failures) +
                          " times: " + result.status().message());
    }
    return;
  }
  w->info.load = *result;
  w->info.polled = true;
  w->in_flight_at_poll = w->info.in_flight;
  w->in_flight_ms_at_poll = w->info.in_flight_ms;
  w->consecutive_failures = 0;
  // In double: two huge reported counts must not wrap into a small queue.
  const double queue = (result->Has(kSignalWaiting) ? static_cast<double>(result->waiting) : 0) +
                       (result->Has(kSignalRunning) ? static_cast<double>(result->running) : 0);
  if (queue > static_cast<double>(health_.max_queue)) {
    if (w->info.state == WorkerState::kHealthy || w->info.state == WorkerState::kHalfOpen) {
      EjectLocked(*w, "queue " + std::to_string(static_cast<int64_t>(std::min(queue, 9e18))) +
                          " over " + std::to_string(health_.max_queue));
    }
    return;
  }
  if (w->info.state == WorkerState::kEjected) {
    w->info.state = WorkerState::kHalfOpen;
    w->consecutive_successes = 1;
  } else if (w->info.state == WorkerState::kHalfOpen) {
    ++w->consecutive_successes;
  }
  if (w->info.state == WorkerState::kHalfOpen &&
      w->consecutive_successes >= health_.restore_after) {
    w->info.state = WorkerState::kHealthy;
    w->info.last_error.clear();
  }
}

std::vector<WorkerAddress> WorkerPool::Targets() const {
  MutexLock lock(mu_);
  std::vector<WorkerAddress> out;
  for (const auto& w : workers_)
    out.push_back({w->info.name, w->info.host, w->info.port, w->info.kind});
  return out;
}

}  // namespace frugal::gateway
