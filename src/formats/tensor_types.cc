#include "formats/tensor_types.h"

#include <iterator>

namespace frugal {

const TypeInfo* GetTypeInfo(uint32_t raw_type) {
  static const TypeInfo kF32{"F32", 1, 4};
  static const TypeInfo kF16{"F16", 1, 2};
  static const TypeInfo kBF16{"BF16", 1, 2};
  static const TypeInfo kQ4_0{"Q4_0", kQK, sizeof(BlockQ4_0)};
  static const TypeInfo kQ4_1{"Q4_1", kQK, sizeof(BlockQ4_1)};
  static const TypeInfo kQ5_0{"Q5_0", kQK, sizeof(BlockQ5_0)};
  static const TypeInfo kQ5_1{"Q5_1", kQK, sizeof(BlockQ5_1)};
  static const TypeInfo kQ8_0{"Q8_0", kQK, sizeof(BlockQ8_0)};
  static const TypeInfo kQ4_K{"Q4_K", kQKK, sizeof(BlockQ4_K)};
  static const TypeInfo kQ5_K{"Q5_K", kQKK, sizeof(BlockQ5_K)};
  static const TypeInfo kQ6_K{"Q6_K", kQKK, sizeof(BlockQ6_K)};
  // Frugal's types, in id order from kI8_C (1024).
  static const TypeInfo kFrugal[] = {
      {"I8_C", kQK, sizeof(BlockI8C), kTileRows, sizeof(TileI8CHeader), 0, 8},
      {"I8_G32", 32, sizeof(BlockI8<32>), kTileRows, 0, 32, 8},
      {"I8_G64", 64, sizeof(BlockI8<64>), kTileRows, 0, 64, 8},
      {"I8_G128", 128, sizeof(BlockI8<128>), kTileRows, 0, 128, 8},
      {"I4S_G32", 32, sizeof(BlockI4S<32>), kTileRows, 0, 32, 4},
      {"I4S_G64", 64, sizeof(BlockI4S<64>), kTileRows, 0, 64, 4},
      {"I4S_G128", 128, sizeof(BlockI4S<128>), kTileRows, 0, 128, 4},
      {"I4A_G32", 32, sizeof(BlockI4A<32>), kTileRows, 0, 32, 4},
      {"I4A_G64", 64, sizeof(BlockI4A<64>), kTileRows, 0, 64, 4},
      {"I4A_G128", 128, sizeof(BlockI4A<128>), kTileRows, 0, 128, 4},
  };
  // The in-memory tiles of GGUF types, from kQ4_K_X8 (2048).
  static const TypeInfo kTiled[] = {
      {"Q4_K_X8", kQKK, sizeof(TileQ4_K), kTileRows},
      {"Q5_K_X8", kQKK, sizeof(TileQ5_K), kTileRows},
      {"Q6_K_X8", kQKK, sizeof(TileQ6_K), kTileRows},
      {"Q5_0_X8", kQK, sizeof(TileQ5_0), kTileRows},
      {"Q5_1_X8", kQK, sizeof(TileQ5_1), kTileRows},
  };
  const uint32_t tiled_index = raw_type - static_cast<uint32_t>(TensorType::kQ4_K_X8);
  if (raw_type >= static_cast<uint32_t>(TensorType::kQ4_K_X8) && tiled_index < std::size(kTiled)) {
    return &kTiled[tiled_index];
  }
  const uint32_t frugal_index = raw_type - static_cast<uint32_t>(TensorType::kI8_C);
  if (raw_type >= static_cast<uint32_t>(TensorType::kI8_C) && frugal_index < std::size(kFrugal)) {
    return &kFrugal[frugal_index];
  }
  switch (static_cast<TensorType>(raw_type)) {
    case TensorType::kF32:
      return &kF32;
    case TensorType::kF16:
      return &kF16;
    case TensorType::kBF16:
      return &kBF16;
    case TensorType::kQ4_0:
      return &kQ4_0;
    case TensorType::kQ4_1:
      return &kQ4_1;
    case TensorType::kQ5_0:
      return &kQ5_0;
    case TensorType::kQ5_1:
      return &kQ5_1;
    case TensorType::kQ8_0:
      return &kQ8_0;
    case TensorType::kQ4_K:
      return &kQ4_K;
    case TensorType::kQ5_K:
      return &kQ5_K;
    case TensorType::kQ6_K:
      return &kQ6_K;
    default:
      return nullptr;  // Frugal's ids are answered above
  }
}

const TypeInfo* GetTypeInfo(TensorType type) { return GetTypeInfo(static_cast<uint32_t>(type)); }

std::string TypeName(TensorType type) {
  const TypeInfo* info = GetTypeInfo(type);
  return info ? info->name : "type#" + std::to_string(static_cast<uint32_t>(type));
}

StatusOr<size_t> RowBytes(TensorType type, int64_t n) {
  const TypeInfo* info = GetTypeInfo(type);
  if (info == nullptr) return Unimplemented("unsupported tensor type " + TypeName(type));
  if (n < 0 || n % info->block_size != 0) {
    return InvalidArgument("row of " + std::to_string(n) + " elements is not a multiple of the " +
                           info->name + " block size " + std::to_string(info->block_size));
  }
  const size_t tile =
      info->tile_header_bytes + static_cast<size_t>(n / info->block_size) * info->block_bytes;
  return tile / static_cast<size_t>(info->tile_rows);
}

}  // namespace frugal
