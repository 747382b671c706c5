#include "models/inspect.h"

#include <filesystem>

namespace frugal {

ModelInfo InspectSource(const ModelSource& source) {
  ModelInfo info;
  info.path = source.path();
  info.architecture = source.architecture();
  info.format = source.format();
  info.name = source.is_gguf() ? source.gguf()->GetStringOr("general.name", "")
                               : std::filesystem::path(source.path()).filename().string();
  if (source.e5() != nullptr) info.name = "multilingual-e5-small (" + info.name + ")";
  info.weight_bytes = source.total_bytes();
  for (const auto* t : source.AllTensors()) info.parameters += t->elements();
  return info;
}

}  // namespace frugal
