#include "formats/tensor_types.h"

namespace frugal {

const TypeInfo* GetTypeInfo(uint32_t raw_type) {
  static const TypeInfo kF32{"F32", 1, 4};
  static const TypeInfo kF16{"F16", 1, 2};
  static const TypeInfo kBF16{"BF16", 1, 2};
  static const TypeInfo kQ4_0{"Q4_0", kQK, sizeof(BlockQ4_0)};
  static const TypeInfo kQ4_1{"Q4_1", kQK, sizeof(BlockQ4_1)};
  static const TypeInfo kQ8_0{"Q8_0", kQK, sizeof(BlockQ8_0)};
  static const TypeInfo kQ4_K{"Q4_K", kQKK, sizeof(BlockQ4_K)};
  static const TypeInfo kQ6_K{"Q6_K", kQKK, sizeof(BlockQ6_K)};
  static const TypeInfo kI8_C{"I8_C", kQK, sizeof(BlockI8C), kTileRows, sizeof(TileI8CHeader), 0, 8};
  static const TypeInfo kI8_G32{"I8_G32", 32, sizeof(BlockI8<32>), kTileRows, 0, 32, 8};
  static const TypeInfo kI8_G64{"I8_G64", 64, sizeof(BlockI8<64>), kTileRows, 0, 64, 8};
  static const TypeInfo kI8_G128{"I8_G128", 128, sizeof(BlockI8<128>), kTileRows, 0, 128, 8};
  static const TypeInfo kI4S_G32{"I4S_G32", 32, sizeof(BlockI4S<32>), kTileRows, 0, 32, 4};
  static const TypeInfo kI4S_G64{"I4S_G64", 64, sizeof(BlockI4S<64>), kTileRows, 0, 64, 4};
  static const TypeInfo kI4S_G128{"I4S_G128", 128, sizeof(BlockI4S<128>), kTileRows, 0, 128, 4};
  static const TypeInfo kI4A_G32{"I4A_G32", 32, sizeof(BlockI4A<32>), kTileRows, 0, 32, 4};
  static const TypeInfo kI4A_G64{"I4A_G64", 64, sizeof(BlockI4A<64>), kTileRows, 0, 64, 4};
  static const TypeInfo kI4A_G128{"I4A_G128", 128, sizeof(BlockI4A<128>), kTileRows, 0, 128, 4};
  switch (static_cast<TensorType>(raw_type)) {
    case TensorType::kF32: return &kF32;
    case TensorType::kF16: return &kF16;
    case TensorType::kBF16: return &kBF16;
    case TensorType::kQ4_0: return &kQ4_0;
    case TensorType::kQ4_1: return &kQ4_1;
    case TensorType::kQ8_0: return &kQ8_0;
    case TensorType::kQ4_K: return &kQ4_K;
    case TensorType::kQ6_K: return &kQ6_K;
    case TensorType::kI8_C: return &kI8_C;
    case TensorType::kI8_G32: return &kI8_G32;
    case TensorType::kI8_G64: return &kI8_G64;
    case TensorType::kI8_G128: return &kI8_G128;
    case TensorType::kI4S_G32: return &kI4S_G32;
    case TensorType::kI4S_G64: return &kI4S_G64;
    case TensorType::kI4S_G128: return &kI4S_G128;
    case TensorType::kI4A_G32: return &kI4A_G32;
    case TensorType::kI4A_G64: return &kI4A_G64;
    case TensorType::kI4A_G128: return &kI4A_G128;
  }
  return nullptr;
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
  const size_t tile = info->tile_header_bytes + static_cast<size_t>(n / info->block_size) * info->block_bytes;
  return tile / static_cast<size_t>(info->tile_rows);
}

}  // namespace frugal
