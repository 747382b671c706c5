// Token sampling: repetition penalty, then greedy (temperature <= 0) or top-k -> temperature
// softmax -> top-p -> min-p -> draw from a seeded RNG. Not thread-safe (one per sequence).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "frugal/sampling.h"

namespace frugal {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // Picks the next token from logits (modified in place by the penalty). `history` is the
  // sequence so far (prompt and generated).
  int32_t Sample(std::span<float> logits, std::span<const int32_t> history);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
};

}  // namespace frugal
