// Reading single values out of GGUF's block types (ggml's layouts), shared by the reference
// dequantizers (dequantize.cc) and the re-laying of blocks into tiles (gguf_tiles.cc).
#pragma once

#include <cstdint>
#include <cstring>

#include "formats/tensor_types.h"

namespace frugal {

// The 12 scale bytes of a Q4_K or Q5_K super-block hold 8 (scale, min) pairs of 6 bits each.
inline void Q4KScaleMin(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The stored integer of element e (0..255) of a K-quant super-block: Q4_K's nibble pairs cover
// 64 elements (low nibbles the first 32), Q5_K adds bit e / 32 of qh[e % 32], Q6_K's halves of
// 128 take ql's nibbles as Q4_K and two bits of qh[e % 32] per 32 elements.
inline int Q4KAt(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return (e / 32) % 2 == 0 ? (byte & 0x0f) : (byte >> 4);
}
inline int Q4KAt(const BlockQ4_K& b, int e) { return Q4KAt(b.qs, e); }
inline int Q5KAt(const BlockQ5_K& b, int e) {
  return Q4KAt(b.qs, e) | (((b.qh[e % 32] >> (e / 32)) & 1) << 4);
}
inline int Q6KAt(const BlockQ6_K& b, int e) {
  const int half = e / 128, g = (e % 128) / 32, l = e % 32;
  const uint8_t lo = b.ql[64 * half + 32 * (g % 2) + l];
  const int lo4 = g < 2 ? (lo & 0x0f) : (lo >> 4);
  return lo4 | (((b.qh[32 * half + l] >> (2 * g)) & 3) << 4);
}

// Element j (0..31) of a Q5_0 / Q5_1 block: nibbles as Q4_0, bit j of qh the fifth bit.
template <class Block>
inline int Q5At(const Block& b, int j) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, sizeof(qh));
  const uint8_t byte = b.qs[j % 16];
  return (j < 16 ? (byte & 0x0f) : (byte >> 4)) | static_cast<int>(((qh >> j) & 1) << 4);
}

}  // namespace frugal
