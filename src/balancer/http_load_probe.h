// Health checks over HTTP, by worker kind (balancer/load_adapters.h): a Frugal worker's
// /queue_depth, an engine's Prometheus /metrics through its adapter (with llama.cpp's /slots for
// the backlog its /metrics lacks while busy), or, for an OpenAI-compatible server with no load
// endpoint, /v1/models (healthy, load unknown). A worker configured as `auto` is asked
// /queue_depth, then /metrics, then /v1/models at its first successful poll, and the kind found
// is kept. The transport of the HealthChecker's LoadProbe seam; moved here from the gateway
// (issue 45), which only makes one.
//
// Thread safety: Probe and Forget may be called from any thread; `done` runs on the client's
// threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "balancer/health_checker.h"
#include "balancer/load_adapters.h"
#include "balancer/load_report.h"
#include "common/thread_annotations.h"
#include "http/client.h"

namespace frugal::gateway {

class HttpLoadProbe final : public LoadProbe {
 public:
  // client: the gateway's health-check client, which must outlive the probe (a reference to its
  // owner's pointer: the client is made after the probe). key_of: the key to send a worker (by
  // name), "" for none.
  HttpLoadProbe(const std::unique_ptr<http::Client>& client,
                std::function<std::string(const std::string&)> key_of)
      : client_(client), key_of_(std::move(key_of)) {}
  // A removed worker's detected kind and rate baselines go with it. They are kept per name and
  // address, so a poll still in flight for it cannot hand them to a worker added later under the
  // same name elsewhere.
  void Forget(const std::string& name);
  void Probe(const WorkerAddress& worker, std::function<void(StatusOr<WorkerLoad>)> done) override;

 private:
  using Done = std::function<void(StatusOr<WorkerLoad>)>;
  using Got = std::function<void(const Status& st, int code, const std::string& body)>;

  void Get(const WorkerAddress& w, const char* target, const char* accept, Got got);
  // The poll's own failure or the worker's 5xx (only the worker's own failures count).
  static std::optional<Status> Failed(const Status& st, int code);
  static std::string Key(const WorkerAddress& w);
  void Remember(const WorkerAddress& w, WorkerKind kind);
  void QueueDepth(const WorkerAddress& w, bool detecting, Done done);
  void Metrics(const WorkerAddress& w, WorkerKind kind, Done done);
  // llama.cpp's /slots, for the backlog /metrics lacks while the server is busy. Its absence
  // (--no-slots) or failure costs only that estimate: the load from /metrics stands.
  void Slots(const WorkerAddress& w, WorkerLoad load, Done done);
  // No load endpoint: healthy when it lists its models; every load signal unknown.
  void Models(const WorkerAddress& w, bool configured, Done done);

  const std::unique_ptr<http::Client>& client_;
  const std::function<std::string(const std::string&)> key_of_;
  Mutex mu_;
  // The kinds found for `auto` workers, and each /metrics worker's adapter (its rate
  // baselines); both keyed by Key(), name@host:port.
  std::map<std::string, WorkerKind> detected_ FRUGAL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<std::pair<WorkerKind, MetricsLoadAdapter>>> adapters_
      FRUGAL_GUARDED_BY(mu_);
};

}  // namespace frugal::gateway
