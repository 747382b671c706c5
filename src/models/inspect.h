// What can be told about a model from its files alone.
#pragma once

#include "frugal/model_info.h"
#include "models/model_source.h"

namespace frugal {

// Format, architecture, name, size and parameters; the engine completes the rest with the
// model's dimensions, and `frugal info` shows it as is for files the engine cannot load.
ModelInfo InspectSource(const ModelSource& source);

}  // namespace frugal
