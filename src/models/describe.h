// Human-readable and JSON descriptions of a model file, for `frugal info`.
#pragma once

#include <string>

#include "frugal/engine.h"
#include "models/model_source.h"

namespace frugal {

// What can be told from the files alone (format, architecture, name, size, parameters); the
// engine completes it with the model's dimensions, and `frugal info` shows it as is for files
// the engine cannot load.
ModelInfo InspectSource(const ModelSource& source);

// Per-tensor listing (name, type, shape, bytes) plus totals and bits per weight.
// `not_loadable` (non-empty) says why the engine cannot run the model.
std::string DescribeModelText(const ModelInfo& info, const ModelSource& source, bool tensors,
                              const std::string& not_loadable = "");
std::string DescribeModelJson(const ModelInfo& info, const ModelSource& source,
                              const std::string& not_loadable = "");

}  // namespace frugal
