// How deeply a JSON text nests, checked before it reaches a parser: nlohmann::json parses
// iteratively, but copying, dumping or walking a value recurses, so a megabyte of '[' would end
// the process on its stack. Used for request bodies (http/json_limits.h) and for the JSON inside
// model files (a safetensors header).
#pragma once

#include <string_view>

namespace frugal {

// Deeper than any OpenAI request (messages -> content parts -> ...), far below the stack's reach.
inline constexpr int kMaxJsonDepth = 64;

// True when no array or object in `body` nests deeper than max_depth. Brackets inside strings
// do not count; the text need not be valid JSON (the parser judges that afterwards).
inline bool JsonDepthWithin(std::string_view body, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

}  // namespace frugal
