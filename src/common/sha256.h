// SHA-256 (FIPS 180-4), for content hashes stored in files (e.g. the calibration set a
// quantized model was made with).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace frugal {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Lower-case hex of the digest; the object must not be updated afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

inline std::string Sha256Hex(std::string_view data) {
  Sha256 s;
  s.Update(data);
  return s.HexDigest();
}

}  // namespace frugal
