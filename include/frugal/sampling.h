// How the next token is chosen: the knobs of a generation request (src/engine/sampler.h applies
// them). Plain data.
#pragma once

#include <cstdint>

namespace frugal {

struct SamplingParams {
  float temperature = 0.8f;         // <= 0: greedy
  int32_t top_k = 40;               // <= 0: whole vocabulary
  float top_p = 0.95f;              // 1: off
  float min_p = 0.05f;              // 0: off; drop tokens below min_p x the top probability
  float repetition_penalty = 1.0f;  // 1: off; >1 penalises tokens seen in the last repeat_last_n
  int32_t repeat_last_n = 64;       // tokens of history the penalty looks at
  uint64_t seed = 0;                // 0: nondeterministic seed
};

}  // namespace frugal
