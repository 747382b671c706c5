#include "models/model_source.h"

#include <filesystem>

namespace frugal {

StatusOr<std::unique_ptr<ModelSource>> ModelSource::Open(const std::string& path) {
  auto src = std::unique_ptr<ModelSource>(new ModelSource());
  src->path_ = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    FRUGAL_ASSIGN_OR_RETURN(src->hf_, HfCheckpoint::Open(path));
    src->arch_ = src->hf_->config().model_type;
    if (src->arch_.empty()) return InvalidArgument(path + "/config.json has no model_type");
    return src;
  }
  if (!std::filesystem::exists(path, ec)) return NotFound("no such model file: " + path);
  if (E5File::Sniff(path)) {
    FRUGAL_ASSIGN_OR_RETURN(src->e5_, E5File::Open(path));
    src->arch_ = "xlm-roberta";
    return src;
  }
  FRUGAL_ASSIGN_OR_RETURN(src->gguf_, GgufFile::Open(path));
  auto arch = src->gguf_->GetString("general.architecture");
  if (!arch.ok()) return DataLoss(path + ": " + arch.status().message());
  src->arch_ = *arch;
  return src;
}

std::vector<const TensorView*> ModelSource::AllTensors() const {
  if (hf_) return hf_->AllTensors();
  std::vector<const TensorView*> out;
  if (e5_) {
    for (const auto& t : e5_->tensors()) out.push_back(&t);
    return out;
  }
  for (const auto& t : gguf_->tensors()) out.push_back(&t);
  return out;
}

size_t ModelSource::total_bytes() const {
  size_t n = 0;
  for (const auto* t : AllTensors()) n += t->nbytes;
  return n;
}

}  // namespace frugal
