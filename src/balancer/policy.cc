#include "balancer/policy.h"

#include "balancer/policies/policies.h"

namespace frugal::gateway {

namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<Policy> (*make)();
};

// A new policy: a file in policies/, its factory in policies.h, and a line here.
constexpr Entry kPolicies[] = {
    {"round_robin", policies::MakeRoundRobin},
    {"queue_weighted", policies::MakeQueueWeighted},
    {"least_cost", policies::MakeLeastCost},
    {"p2c", policies::MakePowerOfTwo},
};

}  // namespace

std::vector<std::string> PolicyNames() {
  std::vector<std::string> out;
  for (const Entry& e : kPolicies) out.emplace_back(e.name);
  return out;
}

StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name) {
  for (const Entry& e : kPolicies) {
    if (e.name == name) return e.make();
  }
  std::string known;
  for (const Entry& e : kPolicies) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return InvalidArgument("unknown policy '" + std::string(name) + "' (" + known + ")");
}

}  // namespace frugal::gateway
