// A deterministic embedder for cache tests (no model): each word is a fixed random direction
// seeded by the word, a text the normalised sum of its words' directions.
#pragma once

#include <atomic>
#include <cctype>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cache/embedder.h"
#include "cache/vector_index.h"

namespace frugal::cache {

class BagOfWordsEmbedder : public Embedder {
 public:
  explicit BagOfWordsEmbedder(std::string name = "bow", int dim = 64)
      : name_(std::move(name)), dim_(dim) {}
  StatusOr<std::vector<float>> Embed(std::string_view text) override {
    ++calls;
    std::vector<float> v(static_cast<size_t>(dim_), 0.0f);
    std::string w;
    auto flush = [&] {
      if (w.empty()) return;
      std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(w)));
      std::normal_distribution<float> n;
      for (float& x : v) x += n(rng);
      w.clear();
    };
    for (char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else {
        flush();
      }
    }
    flush();
    Normalize(v);
    return v;
  }
  int dim() const override { return dim_; }
  const std::string& name() const override { return name_; }
  std::atomic<int> calls{0};

 private:
  std::string name_;
  int dim_;
};

}  // namespace frugal::cache
