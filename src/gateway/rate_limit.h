// Per-API-key token buckets: `rate` requests per second on average, bursts up to `burst`.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>

#include "common/thread_annotations.h"

namespace frugal::gateway {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  // rate <= 0: unlimited. burst <= 0: max(1, rate).
  TokenBucket(double rate_per_s, double burst);
  // Takes one token; when none is left, returns false and the seconds until one will be.
  bool TryTake(Clock::time_point now, double* retry_after_s);

 private:
  const double rate_, burst_;
  Mutex mu_;
  double tokens_ FRUGAL_GUARDED_BY(mu_);
  Clock::time_point last_ FRUGAL_GUARDED_BY(mu_){};
};

}  // namespace frugal::gateway
