// Which worker serves which model, as each worker's /v1/models says: read when a worker is
// first seen healthy and every 30th health check after. The gateway answers /v1/models from it,
// refuses a model nobody serves (404, or 503 while one that served it may come back) and keeps
// requests off workers whose list lacks their model.
//
// Threads: any; one mutex. The lists arrive on the health-check client's thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "balancer/worker_pool.h"
#include "common/thread_annotations.h"
#include "http/client.h"

namespace frugal::gateway {

class ModelDirectory {
 public:
  // key_of: the key to send a worker (by name), "" for none.
  ModelDirectory(const WorkerPool& pool, std::function<std::string(const std::string&)> key_of)
      : pool_(pool), key_of_(std::move(key_of)) {}

  enum class Verdict {
    kServed,   // a worker lists it, or no list has arrived yet (the worker answers for it)
    kGone,     // some worker listed it since start, none does now: 503, it may come back
    kUnknown,  // nobody ever listed it: 404
  };
  Verdict Check(const std::string& model) const;
  // The workers whose lists lack `model`.
  std::vector<std::string> Lacking(const std::string& model) const;
  // Every model some worker lists now.
  std::set<std::string> Ids() const;
  // Forgets the lists of workers not among `targets` (removed).
  void Retain(const std::vector<WorkerAddress>& targets);
  // A worker answered its health check: with `refresh` (or while its list is unknown) its
  // /v1/models is read again through `client`.
  void OnHealthy(const WorkerAddress& w, bool refresh, http::Client& client);

 private:
  const WorkerPool& pool_;
  const std::function<std::string(const std::string&)> key_of_;
  mutable Mutex mu_;
  std::map<std::string, std::set<std::string>> models_ FRUGAL_GUARDED_BY(mu_);  // worker -> ids
  // Every model a worker has listed since start.
  std::set<std::string> ever_served_ FRUGAL_GUARDED_BY(mu_);
};

}  // namespace frugal::gateway
