// Routing policies: given the workers that may take a request, as they look at the moment of
// the decision, pick one. Each policy is its own file in policies/ and is known to the registry
// (policy.cc) by name; WorkerPool::Pick calls a policy under the pool's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "balancer/prefix_index.h"
#include "frugal/status.h"

namespace frugal::gateway {

// A request's estimated size, for cost-aware routing.
struct RequestCost {
  int64_t prompt_tokens = 0;
  int64_t max_tokens = 0;
};

// A request's prefixes at message boundaries, shortest first, and its prompt's characters: a
// worker that was sent one of them (PrefixIndex) is costed only for the prompt past it.
struct RequestPrefix {
  std::vector<PrefixKey> keys;
  int64_t prompt_chars = 0;
};

// One worker as a routing policy sees it, at the moment of the decision.
struct Candidate {
  size_t index = 0;       // into WorkerPool's list
  double queue = 0;       // requests waiting + running (estimated now)
  double backlog_ms = 0;  // machine time of the work ahead (estimated now)
  double cost_ms = 0;     // this request's cost on this worker
  double weight = 1;      // configured
  double finish_ms() const { return (backlog_ms + cost_ms) / weight; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  // Picks one of `c` (never empty); returns its position in `c`. WorkerPool calls it under its
  // lock, so a policy's own state needs no synchronisation of its own.
  virtual size_t Pick(std::span<const Candidate> c, std::mt19937_64& rng) = 0;
};

// The registry: "round_robin", "queue_weighted", "least_cost", "p2c" (power of two choices over
// least_cost). An unknown name is InvalidArgument, naming the known ones.
StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name);
std::vector<std::string> PolicyNames();

}  // namespace frugal::gateway
