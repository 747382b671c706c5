// Tensor element types, with GGUF's type ids, and their quantization block layouts.
//
// Block layouts are plain structs whose sizes are asserted: a layout change is a format change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "frugal/status.h"

namespace frugal {

// Values below 1024 are GGUF's (ggml_type) ids, so they can be read from and written to files as
// is. From 1024 on are Frugal's own weight formats (docs/formats.md): llama.cpp does not read
// them, and Frugal reads them only from a file whose `frugal.format_version` it supports.
enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
  // Frugal formats: 8 rows interleaved per tile (see BlockI8 and friends below).
  kI8_C = 1024,    // INT8 symmetric, one float scale per output channel (row)
  kI8_G32 = 1025,  // INT8 symmetric, fp16 scale per 32 / 64 / 128 input weights
  kI8_G64 = 1026,
  kI8_G128 = 1027,
  kI4S_G32 = 1028,  // INT4 symmetric (q - 8) * d, fp16 scale per group
  kI4S_G64 = 1029,
  kI4S_G128 = 1030,
  kI4A_G32 = 1031,  // INT4 asymmetric q * d + m (m = -d * zero point), fp16 scale and offset
  kI4A_G64 = 1032,
  kI4A_G128 = 1033,
  // From 2048 on: the GGUF block types re-laid into 8-row tiles when a model is loaded
  // (kernels/quantize.h: RepackRows), every weight kept bit for bit. In memory only: a file
  // with one of these ids is refused.
  kQ4_K_X8 = 2048,
  kQ5_K_X8 = 2049,
  kQ6_K_X8 = 2050,
  kQ5_0_X8 = 2051,
  kQ5_1_X8 = 2052,
};

// The version of the Frugal formats this build reads and writes, stored in a GGUF file's
// metadata under kFrugalFormatVersionKey. A file with Frugal tensors and another version (or
// none) is refused: a layout change bumps the version.
constexpr uint32_t kFrugalFormatVersion = 1;
constexpr const char* kFrugalFormatVersionKey = "frugal.format_version";

// Storage: a tensor is a sequence of tiles of `tile_rows` rows (1 for the GGUF types). A tile
// of n-element rows takes tile_header_bytes + (n / block_size) * block_bytes bytes, so row r of
// a 1-row type and tile r / 8 of a Frugal type both start at r * RowBytes(type, n).
struct TypeInfo {
  const char* name;
  int64_t block_size;  // elements per block (per row of the tile)
  size_t block_bytes;  // bytes per block (all rows of the tile)
  int tile_rows = 1;
  size_t tile_header_bytes = 0;
  int group_size = 0;  // Frugal types: input weights per scale (0: per channel)
  int bits = 0;        // Frugal types: bits per quantized weight
};

// Null for an id this build cannot read.
const TypeInfo* GetTypeInfo(TensorType type);
const TypeInfo* GetTypeInfo(uint32_t raw_type);
std::string TypeName(TensorType type);

inline bool IsFrugalType(TensorType type) {
  return static_cast<uint32_t>(type) >= 1024 && static_cast<uint32_t>(type) < 2048;
}
// The in-memory tile layouts of GGUF types (kQ4_K_X8 ...).
inline bool IsInMemoryType(TensorType type) { return static_cast<uint32_t>(type) >= 2048; }

// Bytes of a row of n elements (for a tiled type: a tile's bytes / tile_rows); n must be a
// multiple of the block size.
StatusOr<size_t> RowBytes(TensorType type, int64_t n);

constexpr int kQK = 32;    // elements per Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 block
constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;           // fp16 scale
  uint8_t qs[kQK / 2];  // nibbles: low = elements 0..15, high = 16..31; value = (q - 8) * d
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum; value = q * d + m
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0/Q5_1: a Q4 block plus a fifth bit per element; bit j of qh (read as a little-endian
// uint32) is the high bit of element j. qh is bytes because a uint32 member would add padding,
// and the structs must match the file's packed 22- and 24-byte blocks.
struct BlockQ5_0 {
  uint16_t d;           // fp16 scale; value = (q - 16) * d, q in [0, 31]
  uint8_t qh[4];        // high bits of elements 0..31
  uint8_t qs[kQK / 2];  // low 4 bits, nibble order as BlockQ4_0
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum; value = q * d + m
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

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

struct BlockQ5_K {  // BlockQ4_K plus a fifth bit per element
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];    // as BlockQ4_K
  uint8_t qh[kQKK / 8];  // bit s of qh[l]: high bit of element 32s + l
  uint8_t qs[kQKK / 2];  // nibbles, as BlockQ4_K
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQKK / 2];      // low 4 bits
  uint8_t qh[kQKK / 4];      // high 2 bits
  int8_t scales[kQKK / 16];  // 8-bit sub-block scales
  uint16_t d;                // fp16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

// --- Frugal formats (docs/formats.md) ---
//
// Rows are stored in tiles of 8 interleaved rows so that an integer dot-product kernel loads one
// activation block once and applies it to 8 rows, and a tile's quantized bytes sit at 16-byte
// aligned offsets. A tile of rows r..r+7 with n inputs is n / G blocks, each covering the G
// inputs [g * G, (g + 1) * G) of all 8 rows: first the 8 scales (and 8 offsets), then G / 32
// chunks of 32 inputs. A chunk is a sequence of 32-byte steps, each holding 4 bytes of every
// row (row r at bytes 4r..4r+3), so one 4-byte activation broadcast meets all 8 rows and each
// row's sum lands in its own 32-bit lane. INT8: step k holds inputs 4k..4k+3 (8 steps). INT4
// (GGUF's nibble order, 4 steps): byte i of step k holds input 4k+i in its low nibble and input
// 16+4k+i in its high nibble.
constexpr int kTileRows = 8;
constexpr int kStepBytes = 4;  // bytes of one row in one step

template <int G>
struct BlockI8 {                                                // value = q * d
  uint16_t d[kTileRows];                                        // fp16 scale of each row's group
  int8_t qs[G / kQK][kQK / kStepBytes][kTileRows][kStepBytes];  // [chunk][step][row][byte]
};
static_assert(sizeof(BlockI8<32>) == 272 && sizeof(BlockI8<64>) == 528 &&
              sizeof(BlockI8<128>) == 1040);

template <int G>
struct BlockI4S {  // value = (q - 8) * d, q in [0, 15]
  uint16_t d[kTileRows];
  uint8_t qs[G / kQK][kQK / 2 / kStepBytes][kTileRows][kStepBytes];  // [chunk][step][row][byte]
};
static_assert(sizeof(BlockI4S<32>) == 144 && sizeof(BlockI4S<64>) == 272 &&
              sizeof(BlockI4S<128>) == 528);

template <int G>
struct BlockI4A {  // value = q * d + m, q in [0, 15]
  uint16_t d[kTileRows];
  uint16_t m[kTileRows];  // fp16 offset, -d * zero point
  uint8_t qs[G / kQK][kQK / 2 / kStepBytes][kTileRows][kStepBytes];
};
static_assert(sizeof(BlockI4A<32>) == 160 && sizeof(BlockI4A<64>) == 288 &&
              sizeof(BlockI4A<128>) == 544);

// INT8 per channel: a tile is a TileI8CHeader followed by n / 32 BlockI8C.
struct TileI8CHeader {
  float d[kTileRows];  // scale of each row; value = q * d
};
static_assert(sizeof(TileI8CHeader) == 32);
struct BlockI8C {
  int8_t qs[kQK / kStepBytes][kTileRows][kStepBytes];  // [step][row][byte], as BlockI8
};
static_assert(sizeof(BlockI8C) == 256);

// --- In-memory tiles of GGUF block types (kQ4_K_X8 ...; docs/formats.md) ---
//
// The values of 8 rows' GGUF blocks, in the chunk layout of BlockI4S: per 32 inputs, 4 steps of
// [row][4 bytes], byte i of step k holding the low 4 bits of input 4k + i (low nibble) and of
// input 16 + 4k + i (high nibble). The bits above the fourth sit in planes of the same
// [row][byte] shape, one per 32-input chunk, so that a 32-byte load, a shift and a mask put them
// next to the nibbles of a step:
//  - fifth bits (Q5_K, Q5_0, Q5_1), one byte per [row][i]: bit k = input 4k + i, bit 4 + k =
//    input 16 + 4k + i;
//  - fifth and sixth bits (Q6_K), two planes: plane 0 bits 2k, 2k + 1 = input 4k + i, plane 1
//    the same for input 16 + 4k + i.
// Scales keep their stored integers (the 6-bit sub-block scales and minimums of Q4_K/Q5_K
// unpacked to bytes), [sub-block][row], so that a sub-block's 8 rows are 8 adjacent bytes.
using ChunkNibbles = uint8_t[kQK / 2 / kStepBytes][kTileRows][kStepBytes];
using ChunkBitPlane = uint8_t[kTileRows][kStepBytes];

struct TileQ4_K {  // one super-block (256 inputs) of 8 rows; value = d * sc * q - dmin * m
  uint16_t d[kTileRows];
  uint16_t dmin[kTileRows];
  uint8_t sc[kQKK / kQK][kTileRows];
  uint8_t m[kQKK / kQK][kTileRows];
  ChunkNibbles qs[kQKK / kQK];
};
static_assert(sizeof(TileQ4_K) == 1184);

struct TileQ5_K {  // TileQ4_K and a fifth bit, q in [0, 31]
  uint16_t d[kTileRows];
  uint16_t dmin[kTileRows];
  uint8_t sc[kQKK / kQK][kTileRows];
  uint8_t m[kQKK / kQK][kTileRows];
  ChunkNibbles qs[kQKK / kQK];
  ChunkBitPlane qh[kQKK / kQK];
};
static_assert(sizeof(TileQ5_K) == 1440);

struct TileQ6_K {  // value = d * sc * (q - 32), q in [0, 63], a scale per 16 inputs
  uint16_t d[kTileRows];
  int8_t sc[kQKK / 16][kTileRows];
  ChunkNibbles ql[kQKK / kQK];
  ChunkBitPlane qh[kQKK / kQK][2];
};
static_assert(sizeof(TileQ6_K) == 1680);

struct TileQ5_0 {  // 32 inputs of 8 rows; value = (q - 16) * d
  uint16_t d[kTileRows];
  ChunkNibbles qs;
  ChunkBitPlane qh;
};
static_assert(sizeof(TileQ5_0) == 176);

struct TileQ5_1 {  // value = q * d + m
  uint16_t d[kTileRows];
  uint16_t m[kTileRows];
  ChunkNibbles qs;
  ChunkBitPlane qh;
};
static_assert(sizeof(TileQ5_1) == 192);

// Activations quantized on the fly for integer dot products (never stored in files): one block
// of 32 values, float scale d (value = q * d) and s = d * sum(q) for the weight types with a
// minimum term.
struct BlockQ8Act {
  float d;
  float s;
  int8_t qs[kQK];
  // The integer sums of qs[0..15] and qs[16..31] (|sum| <= 16 * 127): Q6_K's 16-input
  // sub-blocks subtract 32 x them, and would otherwise recompute them for every tile.
  int16_t half_sums[2];
};
static_assert(sizeof(BlockQ8Act) == 44);

}  // namespace frugal
