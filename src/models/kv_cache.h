// Key/value caches of decoder sequences.
//
// KvBlockPool: one preallocated pool of fixed-size blocks (paged, as vLLM's PagedAttention): a
// block holds `block_tokens` positions of keys and values for every layer. The memory is
// reserved at start but touched only when a block is first written.
//
// KvCache: the cache of one sequence, either contiguous (owns room for n_ctx positions: the CLI
// paths) or paged (a table of blocks taken from a KvBlockPool; its capacity grows with Reserve,
// and its blocks go back to the pool on Release or destruction).
//
// Not thread-safe: a pool and its caches belong to the one thread that schedules sequences
// (kernels may read/write disjoint positions from pool threads within one Forward call).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace frugal {

class KvBlockPool {
 public:
  KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_tokens, int64_t n_blocks);

  int64_t n_layer() const { return n_layer_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t total_blocks() const { return n_blocks_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Bytes of one block (keys and values of all layers).
  size_t block_bytes() const {
    return static_cast<size_t>(2 * n_layer_ * block_tokens_ * kv_dim_) * sizeof(float);
  }

  // Appends n free block ids to `ids`; false (and nothing taken) when fewer are free.
  bool Take(int64_t n, std::vector<int32_t>* ids);
  void Give(std::span<const int32_t> ids);

  // Keys / values of `layer` in block `id`: [block_tokens][kv_dim].
  float* K(int32_t id, int64_t layer) { return Base(id, layer); }
  float* V(int32_t id, int64_t layer) { return Base(id, layer) + block_tokens_ * kv_dim_; }

 private:
  float* Base(int32_t id, int64_t layer) {
    return data_.get() +
           ((static_cast<int64_t>(id) * n_layer_ + layer) * 2) * block_tokens_ * kv_dim_;
  }

  int64_t n_layer_, kv_dim_, block_tokens_, n_blocks_;
  std::unique_ptr<float[]>
      data_;                   // [block][layer][k|v][block_tokens][kv_dim]; not value-initialised
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
};

class KvCache {
 public:
  // Contiguous: room for n_ctx positions, owned.
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim);
  // Paged: no blocks yet; Reserve takes them from `pool`, which must outlive this cache.
  explicit KvCache(KvBlockPool& pool);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Positions the cache can hold now.
  int64_t capacity() const { return static_cast<int64_t>(ids_.size()) * block_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t block_tokens() const { return block_; }
  // Positions [0, size) hold valid entries.
  int64_t size() const { return size_; }
  void set_size(int64_t n) { size_ = n; }
  void Clear() { size_ = 0; }
  bool paged() const { return pool_ != nullptr; }
  int64_t blocks() const { return static_cast<int64_t>(ids_.size()); }

  // Paged: takes blocks until capacity() >= positions; false (nothing taken) when the pool has
  // too few free. Contiguous: true when positions fit.
  bool Reserve(int64_t positions);
  // Paged: gives every block back and empties the cache.
  void Release();

  float* K(int64_t layer, int64_t pos) { return At(k_, layer, pos); }
  float* V(int64_t layer, int64_t pos) { return At(v_, layer, pos); }
  // Block tables of one layer, for the attention kernel (kernels.h: KvBlocks).
  const float* const* KBlocks(int64_t layer) const { return k_[static_cast<size_t>(layer)].data(); }
  const float* const* VBlocks(int64_t layer) const { return v_[static_cast<size_t>(layer)].data(); }

 private:
  float* At(std::vector<std::vector<float*>>& t, int64_t layer, int64_t pos) {
    return t[static_cast<size_t>(layer)][static_cast<size_t>(pos / block_)] +
           (pos % block_) * kv_dim_;
  }

  int64_t n_layer_, kv_dim_, block_;
  int64_t size_ = 0;
  KvBlockPool* pool_ = nullptr;  // paged only
  // Contiguous only: [layer][k|v][n_ctx][kv_dim]. Not value-initialised (as the pool's blocks):
  // positions are read only after they are written, and zero-filling the whole context touched
  // every page up front (470 MB for Qwen2.5-1.5B at 8192 tokens, for an 8-token answer).
  std::unique_ptr<float[]> owned_;
  std::vector<int32_t> ids_;                // blocks (contiguous: the single block 0)
  std::vector<std::vector<float*>> k_, v_;  // [layer][block] -> first position of the block
};

}  // namespace frugal
