// IEEE half and bfloat16 <-> float conversions (portable, exact for all finite values).
// The half conversions give F16C's results bit for bit (VCVTPH2PS, and VCVTPS2PH with round to
// nearest even), NaNs included: a NaN keeps its sign and the top of its payload and comes out
// quiet. tests/unit/fp16_test.cc checks all 65536 halves and a sample of floats against F16C.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace frugal {

inline float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {  // inf, or a NaN made quiet
    bits = sign | 0x7f800000u | (mant != 0 ? 0x400000u : 0) | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even.
inline uint16_t Fp32ToFp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u)  // NaN: quiet, the payload's top 9 bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // below the smallest normal half: a multiple of 2^-24
    float af;
    std::memcpy(&af, &abs, sizeof af);
    const auto r = static_cast<uint32_t>(std::nearbyint(af * 16777216.0f));  // ties to even
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent
  const uint32_t rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float Bf16ToFp32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t Fp32ToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace frugal
