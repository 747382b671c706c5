// The unit tests' data files (tests/data), read whole.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace frugal::testing {

// tests/data/<relative>; a file that cannot be opened fails the test and reads as "".
inline std::string ReadTestData(const std::string& relative) {
  std::ifstream in(std::string(FRUGAL_TEST_DATA_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace frugal::testing
