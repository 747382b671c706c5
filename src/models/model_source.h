// The files a model is loaded from: a GGUF file, or a Hugging Face checkpoint folder.
// Immutable after Open; tensors point into memory mappings owned here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "formats/hf_checkpoint.h"
#include "frugal/status.h"

namespace frugal {

class ModelSource {
 public:
  // `path` is a .gguf file or a folder with config.json + *.safetensors.
  static StatusOr<std::unique_ptr<ModelSource>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  bool is_gguf() const { return gguf_ != nullptr; }
  const GgufFile* gguf() const { return gguf_.get(); }
  const HfCheckpoint* hf() const { return hf_.get(); }
  // "llama", "qwen2", "bert", ... (GGUF general.architecture or HF model_type).
  const std::string& architecture() const { return arch_; }
  std::vector<const TensorView*> AllTensors() const;
  size_t total_bytes() const;

 private:
  ModelSource() = default;
  std::string path_;
  std::string arch_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<HfCheckpoint> hf_;
};

}  // namespace frugal
