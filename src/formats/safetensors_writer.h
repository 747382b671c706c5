// safetensors writer: what `frugal quantize --target vllm` writes (model.safetensors of a Hugging
// Face folder). The format: an 8-byte little-endian header length, a JSON header naming each
// tensor's dtype, shape (outermost first, as torch) and byte range, then the data, which the
// ranges must cover without holes (the reference reader refuses gaps). The header is padded
// with spaces to a multiple of 8 bytes, and the data is laid out by element size, largest
// first (in the order added within a size), so that every tensor starts aligned to its element
// size. "__metadata__" carries {"format": "pt"}, which transformers requires. The file appears
// atomically (PATH.tmp, then renamed).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frugal/status.h"

namespace frugal {

class SafetensorsWriter {
 public:
  // dtype: a safetensors dtype name ("F32", "F16", "BF16", "I32", ...); shape outermost first;
  // data exactly the product of the shape times the dtype's size. Names must be unique.
  Status Add(std::string name, std::string dtype, std::vector<int64_t> shape,
             std::vector<uint8_t> data);
  void SetMetadata(std::string key, std::string value) { metadata_[key] = std::move(value); }
  size_t tensor_count() const { return tensors_.size(); }

  Status Write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_{{"format", "pt"}};
};

// Bytes per element of a safetensors dtype; 0 for a name it does not know.
size_t SafetensorsDtypeSize(const std::string& dtype);

}  // namespace frugal
