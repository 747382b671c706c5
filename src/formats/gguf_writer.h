// GGUF v3 writer: what `frugal quantize` produces. Metadata keeps its insertion order (a copy of
// a source file's metadata stays in the source's order, so tools that diff headers see only
// what changed); tensors are written in the order they were added, each aligned to
// general.alignment (32 unless set). The file appears atomically: it is written to PATH.tmp and
// renamed, so a failed or interrupted run never leaves a partial model behind.
//
// Tensors are either added with their bytes (AddTensor; Write) or described only (AddTensorInfo;
// WriteStreamed asks for each one's bytes as the file reaches it): the header's size follows
// from the names, shapes and metadata alone (types and offsets are fixed width), so a model of
// any size is written holding one tensor at a time, never a second copy of the model. Both give
// the same bytes. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "formats/gguf.h"
#include "frugal/status.h"

namespace frugal {

class GgufWriter {
 public:
  void SetString(std::string_view key, std::string value);
  void SetUint32(std::string_view key, uint32_t value);
  void SetInt32(std::string_view key, int32_t value);
  void SetUint64(std::string_view key, uint64_t value);
  void SetFloat32(std::string_view key, float value);
  void SetBool(std::string_view key, bool value);
  void SetStringArray(std::string_view key, std::vector<std::string> values);
  void SetInt32Array(std::string_view key, const std::vector<int32_t>& values);
  // Copies a value read by GgufFile. Nested arrays (which the reader keeps only as a count)
  // cannot be copied: InvalidArgument naming the key.
  Status CopyValue(std::string_view key, const GgufValue& value);
  // Copies every metadata value of `src`, skipping the keys in `except`.
  Status CopyMetadata(const GgufFile& src, const std::vector<std::string>& except = {});
  void Remove(std::string_view key);
  bool Has(std::string_view key) const;

  // `data` must be exactly the tensor's size for its type and shape (ne[0] contiguous).
  Status AddTensor(std::string name, TensorType type, std::vector<int64_t> ne,
                   std::vector<uint8_t> data);
  // A tensor whose bytes WriteStreamed asks for; the same checks as AddTensor but the data's.
  Status AddTensorInfo(std::string name, TensorType type, std::vector<int64_t> ne);
  size_t tensor_count() const { return tensors_.size(); }
  // Bytes of tensor data (without header and padding).
  size_t data_bytes() const;

  // Every tensor must have been added with its bytes.
  Status Write(const std::string& path) const;
  // The bytes of tensor `index` (in the order added), valid until the next call; called once per
  // tensor, in order. A producer that fails or returns the wrong size fails the write, and
  // nothing is left.
  using TensorBytes = std::function<StatusOr<std::span<const uint8_t>>(size_t index)>;
  Status WriteStreamed(const std::string& path, const TensorBytes& bytes) const;

 private:
  struct Value {
    GgufValueType type = GgufValueType::kUint8;
    GgufValueType elem_type = GgufValueType::kUint8;  // arrays
    std::string str;                                  // kString
    std::vector<std::string> strings;                 // string arrays
    std::vector<double> numbers;                      // scalars (one) and numeric arrays
    std::vector<int64_t> integers;                    // the same values, exact for 64-bit ints
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    size_t nbytes = 0;
    std::vector<uint8_t> data;  // empty for AddTensorInfo's
  };
  Value& Slot(std::string_view key);
  // The tensor's bytes for its type and shape; InvalidArgument for a bad shape or a name
  // added before.
  StatusOr<size_t> CheckTensor(const std::string& name, TensorType type,
                               const std::vector<int64_t>& ne) const;

  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace frugal
