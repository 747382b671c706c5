// Human-readable and JSON descriptions of a model file, for `frugal info`.
#pragma once

#include <string>

#include "frugal/engine.h"
#include "models/model_source.h"

namespace frugal {

// Per-tensor listing (name, type, shape, bytes) plus totals and bits per weight.
std::string DescribeModelText(const ModelInfo& info, const ModelSource& source, bool tensors);
std::string DescribeModelJson(const ModelInfo& info, const ModelSource& source);

}  // namespace frugal
