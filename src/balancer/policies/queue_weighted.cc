#include <vector>

#include "balancer/policies/policies.h"

namespace frugal::gateway::policies {

namespace {

// nginx-Lua style: chance proportional to weight / (queue + 1).
class QueueWeighted final : public Policy {
 public:
  std::string_view name() const override { return "queue_weighted"; }
  size_t Pick(std::span<const Candidate> c, std::mt19937_64& rng) override {
    std::vector<double> w(c.size());
    for (size_t i = 0; i < c.size(); ++i) w[i] = c[i].weight / (c[i].queue + 1);
    std::discrete_distribution<size_t> d(w.begin(), w.end());
    return d(rng);
  }
};

}  // namespace

std::unique_ptr<Policy> MakeQueueWeighted() { return std::make_unique<QueueWeighted>(); }

}  // namespace frugal::gateway::policies
