// A guard for request bodies before they reach a JSON parser (common/json_depth.h): bodies nested
// deeper than any real request are refused up front.
#pragma once

#include "common/json_depth.h"

namespace frugal::http {

using frugal::JsonDepthWithin;
using frugal::kMaxJsonDepth;

}  // namespace frugal::http
