// safetensors reader over a memory-mapped file (one shard).
//
// The JSON header is bounds-checked against the file; tensors of the float types the engine
// computes with (F32, F16, BF16) become TensorViews into the mapping (shape reversed into GGUF
// order: ne[0] is the contiguous dimension). Tensors of other dtypes (e.g. BERT's int64
// position_ids buffer) are listed in skipped() and not served. Immutable after Open.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mmap_file.h"
#include "formats/gguf.h"
#include "frugal/status.h"

namespace frugal {

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  static StatusOr<std::unique_ptr<SafetensorsFile>> Parse(std::unique_ptr<MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(std::string_view name) const;
  const std::vector<std::string>& skipped() const { return skipped_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  Status ParseAll();

  std::unique_ptr<MappedFile> file_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<std::string> skipped_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace frugal
