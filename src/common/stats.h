// Small statistics shared by layers that report rates: the gateway's audit (false-hit rate) and
// `frugal cache-eval` (hit precision).
#pragma once

#include <cstdint>
#include <utility>

namespace frugal {

// The Wilson score interval of a proportion k / n (z = 1.96: 95%); {0, 1} when n is 0. Sound with
// few trials and at 0 or n successes, where the normal approximation is not.
std::pair<double, double> WilsonInterval(int64_t k, int64_t n, double z = 1.96);

}  // namespace frugal
