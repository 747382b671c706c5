#include "balancer/policies/policies.h"

namespace frugal::gateway::policies {

size_t SoonerOf(std::span<const Candidate> c, size_t a, size_t b) {
  if (c[a].finish_ms() != c[b].finish_ms()) return c[a].finish_ms() < c[b].finish_ms() ? a : b;
  return c[a].queue <= c[b].queue ? a : b;
}

namespace {

class LeastCost final : public Policy {
 public:
  std::string_view name() const override { return "least_cost"; }
  size_t Pick(std::span<const Candidate> c, std::mt19937_64& rng) override {
    // Ties (an idle fleet) are broken at random so equal workers share the load.
    const size_t start = std::uniform_int_distribution<size_t>(0, c.size() - 1)(rng);
    size_t best = start;
    for (size_t k = 1; k < c.size(); ++k) best = SoonerOf(c, best, (start + k) % c.size());
    return best;
  }
};

}  // namespace

std::unique_ptr<Policy> MakeLeastCost() { return std::make_unique<LeastCost>(); }

}  // namespace frugal::gateway::policies
