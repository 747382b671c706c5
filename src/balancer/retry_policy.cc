#include "balancer/retry_policy.h"

#include <algorithm>
#include <cmath>

namespace frugal::gateway {

RetryPolicy::RetryPolicy(RetryOptions options, uint64_t seed) : options_(options), rng_(seed) {}

bool RetryPolicy::MayRetry(AttemptFailure failure, int retries) const {
  if (retries >= options_.max_retries) return false;
  switch (failure) {
    case AttemptFailure::kNoResponse:
    case AttemptFailure::kOverloaded:
      return true;
    case AttemptFailure::kPartialResponse:
    case AttemptFailure::kStreamBroken:
    case AttemptFailure::kTimeout:
      return false;
  }
  return false;
}

std::chrono::microseconds RetryPolicy::Backoff(int retry) {
  double jitter;
  {
    MutexLock lock(mu_);
    jitter = std::uniform_real_distribution<double>(0.5, 1.5)(rng_);
  }
  // The exponent is clamped so a large retry number cannot overflow (config allows 10).
  const double doublings = std::pow(2.0, std::clamp(retry, 1, 30) - 1);
  return std::chrono::microseconds(
      static_cast<int64_t>(1e3 * static_cast<double>(options_.backoff_ms) * doublings * jitter));
}

}  // namespace frugal::gateway
