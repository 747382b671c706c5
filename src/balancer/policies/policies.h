// The policies' factories, for the registry (policy.cc), and what two of them share.
#pragma once

#include <memory>
#include <span>

#include "balancer/policy.h"

namespace frugal::gateway::policies {

std::unique_ptr<Policy> MakeRoundRobin();
std::unique_ptr<Policy> MakeQueueWeighted();
std::unique_ptr<Policy> MakeLeastCost();
std::unique_ptr<Policy> MakePowerOfTwo();

// Of candidates a and b, the one expected to finish this request sooner (then the shorter
// queue; then a).
size_t SoonerOf(std::span<const Candidate> c, size_t a, size_t b);

}  // namespace frugal::gateway::policies
