#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace frugal {

Sampler::Sampler(const SamplingParams& params)
    : p_(params), rng_(params.seed != 0 ? params.seed : std::random_device{}()) {}

int32_t Sampler::Sample(std::span<float> logits, std::span<const int32_t> history) {
  const auto n_vocab = static_cast<int32_t>(logits.size());
  if (p_.repetition_penalty != 1.0f && p_.repeat_last_n > 0) {
    const size_t start = history.size() > static_cast<size_t>(p_.repeat_last_n)
                             ? history.size() - static_cast<size_t>(p_.repeat_last_n)
                             : 0;
    std::unordered_set<int32_t> seen(history.begin() + static_cast<std::ptrdiff_t>(start),
                                     history.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= n_vocab) continue;
      float& l = logits[static_cast<size_t>(t)];
      l = l > 0 ? l / p_.repetition_penalty : l * p_.repetition_penalty;
    }
  }
  if (p_.temperature <= 0.0f) {
    // Lowest id wins ties, so greedy output is deterministic.
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  candidates_.clear();
  candidates_.reserve(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) candidates_.emplace_back(logits[static_cast<size_t>(i)], i);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) {
    keep = static_cast<size_t>(p_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                      candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(keep);
  // Softmax with temperature.
  const float max_logit = candidates_.front().first;
  double sum = 0;
  for (auto& c : candidates_) {
    c.first = std::exp((c.first - max_logit) / p_.temperature);
    sum += c.first;
  }
  for (auto& c : candidates_) c.first = static_cast<float>(c.first / sum);
  if (p_.top_p < 1.0f) {
    double cum = 0;
    size_t n = 0;
    while (n < candidates_.size()) {
      cum += candidates_[n++].first;
      if (cum >= p_.top_p) break;
    }
    candidates_.resize(std::max<size_t>(1, n));
  }
  if (p_.min_p > 0.0f) {
    const float floor = p_.min_p * candidates_.front().first;
    size_t n = 1;
    while (n < candidates_.size() && candidates_[n].first >= floor) ++n;
    candidates_.resize(n);
  }
  double total = 0;
  for (const auto& c : candidates_) total += c.first;
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (const auto& c : candidates_) {
    r -= c.first;
    if (r <= 0) return c.second;
  }
  return candidates_.back().second;
}

}  // namespace frugal
