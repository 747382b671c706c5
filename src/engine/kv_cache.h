// Key/value cache of one sequence: [layer][position][kv_dim] floats, preallocated for the
// context length. Not thread-safe: owned by the one thread that runs the sequence (kernels may
// read/write disjoint positions from pool threads within one Forward call).
#pragma once

#include <cstdint>
#include <vector>

namespace frugal {

class KvCache {
 public:
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim)
      : n_ctx_(n_ctx), kv_dim_(kv_dim),
        k_(static_cast<size_t>(n_layer * n_ctx * kv_dim)),
        v_(static_cast<size_t>(n_layer * n_ctx * kv_dim)) {}

  int64_t capacity() const { return n_ctx_; }
  int64_t kv_dim() const { return kv_dim_; }
  // Positions [0, size) hold valid entries.
  int64_t size() const { return size_; }
  void set_size(int64_t n) { size_ = n; }
  void Clear() { size_ = 0; }
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

  float* K(int64_t layer, int64_t pos) { return &k_[static_cast<size_t>((layer * n_ctx_ + pos) * kv_dim_)]; }
  float* V(int64_t layer, int64_t pos) { return &v_[static_cast<size_t>((layer * n_ctx_ + pos) * kv_dim_)]; }

 private:
  int64_t n_ctx_, kv_dim_;
  int64_t size_ = 0;
  std::vector<float> k_, v_;
};

}  // namespace frugal
