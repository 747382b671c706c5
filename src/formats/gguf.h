// GGUF v2/v3 reader over a memory-mapped file.
//
// Every offset, size, count and string is bounds-checked against the file: a truncated or
// corrupt file yields a DataLoss status naming what is wrong, never a crash or a huge
// allocation. Tensor data is not copied; Tensor::data points into the mapping, which lives as
// long as the GgufFile. Immutable after Open, so safe to share across threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mmap_file.h"
#include "formats/tensor_types.h"
#include "frugal/status.h"

namespace frugal {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  // Scalars: numbers are held both ways so callers need not care about the stored width.
  double number = 0;
  int64_t integer = 0;
  std::string_view str;  // kString; points into the mapping
  // Arrays (one level; nested arrays are skipped and keep only their count).
  GgufValueType elem_type = GgufValueType::kUint8;
  uint64_t count = 0;
  std::vector<std::string_view> strings;  // string arrays
  std::vector<double> numbers;            // numeric and bool arrays
};

// A tensor as the engine sees it: GGUF order of dimensions (ne[0] is the contiguous one).
struct TensorView {
  std::string name;
  TensorType type = TensorType::kF32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  // A 2-D view over caller-owned bytes: `rows` rows of `cols` elements of `type`.
  static TensorView Matrix(TensorType type, int64_t cols, int64_t rows, const uint8_t* data,
                           size_t nbytes) {
    TensorView t;
    t.type = type;
    t.n_dims = 2;
    t.ne[0] = cols;
    t.ne[1] = rows;
    t.data = data;
    t.nbytes = nbytes;
    return t;
  }

  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string ShapeString() const;
};

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (fuzzing, tests). The buffer must outlive the result.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(std::unique_ptr<MappedFile> file);

  uint32_t version() const { return version_; }
  const std::string& path() const { return file_->path(); }
  size_t file_size() const { return file_->size(); }

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return kv_; }
  const GgufValue* Find(std::string_view key) const;

  // Typed getters: NotFound if absent, InvalidArgument if of the wrong type.
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<int64_t> GetInt(std::string_view key) const;
  StatusOr<double> GetFloat(std::string_view key) const;
  StatusOr<bool> GetBool(std::string_view key) const;
  std::string GetStringOr(std::string_view key, const std::string& fallback) const;
  int64_t GetIntOr(std::string_view key, int64_t fallback) const;
  double GetFloatOr(std::string_view key, double fallback) const;
  bool GetBoolOr(std::string_view key, bool fallback) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  Status ParseAll();

  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue, std::less<>> kv_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

const char* GgufValueTypeName(GgufValueType type);

}  // namespace frugal
