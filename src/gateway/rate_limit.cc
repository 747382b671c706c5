#include "gateway/rate_limit.h"

#include <algorithm>

namespace frugal::gateway {

TokenBucket::TokenBucket(double rate_per_s, double burst)
    : rate_(rate_per_s), burst_(burst > 0 ? burst : std::max(1.0, rate_per_s)), tokens_(burst_) {}

bool TokenBucket::TryTake(Clock::time_point now, double* retry_after_s) {
  if (rate_ <= 0) return true;
  MutexLock lock(mu_);
  if (last_ != Clock::time_point{}) {
    const double dt = std::chrono::duration<double>(now - last_).count();
    if (dt > 0) tokens_ = std::min(burst_, tokens_ + dt * rate_);
  }
  if (now > last_) last_ = now;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  if (retry_after_s) *retry_after_s = (1 - tokens_) / rate_;
  return false;
}

}  // namespace frugal::gateway
