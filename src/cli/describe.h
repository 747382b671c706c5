// Human-readable and JSON descriptions of a model file, for `frugal info`.
#pragma once

#include <string>

#include "frugal/model_info.h"
#include "models/model_source.h"

namespace frugal {

// Per-tensor listing (name, type, shape, bytes) plus totals and bits per weight.
// `not_loadable` (non-empty) says why the engine cannot run the model.
std::string DescribeModelText(const ModelInfo& info, const ModelSource& source, bool tensors,
                              const std::string& not_loadable = "");
std::string DescribeModelJson(const ModelInfo& info, const ModelSource& source,
                              const std::string& not_loadable = "");

}  // namespace frugal
