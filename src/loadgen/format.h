// Small text helpers shared by the load generator's report, CSV and plot (internal).
#pragma once

#include <cstdio>
#include <string>

namespace frugal::loadgen {

// snprintf of one number.
inline std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace frugal::loadgen
