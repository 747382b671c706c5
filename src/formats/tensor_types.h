// Tensor element types, with GGUF's type ids, and their quantization block layouts.
//
// Block layouts are plain structs whose sizes are asserted: a layout change is a format change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "frugal/status.h"

namespace frugal {

// Values are GGUF's (ggml_type) ids, so they can be read from and written to files as is.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ6_K = 14,
  kBF16 = 30,
};

struct TypeInfo {
  const char* name;
  int64_t block_size;  // elements per block
  size_t block_bytes;  // bytes per block
};

// Null for an id this build cannot read.
const TypeInfo* GetTypeInfo(TensorType type);
const TypeInfo* GetTypeInfo(uint32_t raw_type);
std::string TypeName(TensorType type);

// Bytes of a row of n elements; n must be a multiple of the block size.
StatusOr<size_t> RowBytes(TensorType type, int64_t n);

constexpr int kQK = 32;    // elements per Q4_0/Q4_1/Q8_0 block
constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;         // fp16 scale
  uint8_t qs[kQK / 2];  // nibbles: low = elements 0..15, high = 16..31; value = (q - 8) * d
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
  uint16_t d;         // fp16 scale
  uint16_t m;         // fp16 minimum; value = q * d + m
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ8_0 {
  uint16_t d;  // fp16 scale; value = q * d
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_K {
  uint16_t d;            // fp16 super-block scale for the 6-bit sub-block scales
  uint16_t dmin;         // fp16 super-block scale for the 6-bit sub-block minimums
  uint8_t scales[12];    // 8 scales + 8 minimums, 6 bits each
  uint8_t qs[kQKK / 2];  // nibbles
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ6_K {
  uint8_t ql[kQKK / 2];      // low 4 bits
  uint8_t qh[kQKK / 4];      // high 2 bits
  int8_t scales[kQKK / 16];  // 8-bit sub-block scales
  uint16_t d;                // fp16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activations quantized on the fly for integer dot products (never stored in files): one block
// of 32 values, float scale d (value = q * d) and s = d * sum(q) for the weight types with a
// minimum term.
struct BlockQ8Act {
  float d;
  float s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8Act) == 40);

}  // namespace frugal
