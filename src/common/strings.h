// Small text helpers shared by layers that print numbers for people (help texts, messages).
#pragma once

#include <cstdio>
#include <string>

namespace frugal {

// A number as short as printf's %g writes it: 0.92, not 0.920000; 600, not 600.000000.
inline std::string ShortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace frugal
