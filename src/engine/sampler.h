// Token sampling: repetition penalty, then greedy (temperature <= 0) or top-k -> temperature
// softmax -> top-p -> min-p -> draw from a seeded RNG. Not thread-safe (one per sequence).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace frugal {

struct SamplingParams {
  float temperature = 0.8f;        // <= 0: greedy
  int32_t top_k = 40;              // <= 0: whole vocabulary
  float top_p = 0.95f;             // 1: off
  float min_p = 0.05f;             // 0: off; drop tokens below min_p x the top probability
  float repetition_penalty = 1.0f; // 1: off; >1 penalises tokens seen in the last repeat_last_n
  int32_t repeat_last_n = 64;      // tokens of history the penalty looks at
  uint64_t seed = 0;               // 0: nondeterministic seed
};

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
