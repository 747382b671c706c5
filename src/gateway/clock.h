// The two clocks the gateway's rooms read: wall-clock seconds for the status page's series and
// the responses' `created`, and the steady clock for latencies.
#pragma once

#include <chrono>
#include <cstdint>

namespace frugal::gateway {

inline int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace frugal::gateway
