#include "balancer/policies/policies.h"

namespace frugal::gateway::policies {

namespace {

// Two random candidates, the one that finishes sooner: nearly least_cost's balance, without
// every gateway replica herding onto the same worker between polls.
class PowerOfTwo final : public Policy {
 public:
  std::string_view name() const override { return "p2c"; }
  size_t Pick(std::span<const Candidate> c, std::mt19937_64& rng) override {
    if (c.size() == 1) return 0;
    std::uniform_int_distribution<size_t> d(0, c.size() - 1);
    const size_t a = d(rng);
    size_t b = d(rng);
    while (b == a) b = d(rng);
    return SoonerOf(c, a, b);
  }
};

}  // namespace

std::unique_ptr<Policy> MakePowerOfTwo() { return std::make_unique<PowerOfTwo>(); }

}  // namespace frugal::gateway::policies
