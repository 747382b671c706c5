#include <cstdint>

#include "balancer/policies/policies.h"

namespace frugal::gateway::policies {

namespace {

class RoundRobin final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  size_t Pick(std::span<const Candidate> c, std::mt19937_64&) override {
    // The next worker after the last one picked, by position in the pool, wrapping around: a
    // worker leaving or coming back does not shift everyone's turn.
    const size_t last = last_;
    size_t best = 0;
    bool found = false;
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i].index > last && (!found || c[i].index < c[best].index)) best = i, found = true;
    }
    if (!found) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (c[i].index < c[best].index) best = i;
      }
    }
    last_ = c[best].index;
    return best;
  }

 private:
  size_t last_ = SIZE_MAX;  // WorkerPool calls Pick under its lock
};

}  // namespace

std::unique_ptr<Policy> MakeRoundRobin() { return std::make_unique<RoundRobin>(); }

}  // namespace frugal::gateway::policies
