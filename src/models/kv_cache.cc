#include "models/kv_cache.h"

#include "common/check.h"

namespace frugal {

KvBlockPool::KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_tokens, int64_t n_blocks)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_tokens_(block_tokens),
      n_blocks_(n_blocks),
      // new float[] leaves the floats uninitialised: pages are touched only when written.
      data_(new float[static_cast<size_t>(2 * n_layer * kv_dim * block_tokens * n_blocks)]) {
  FRUGAL_CHECK(n_layer > 0 && kv_dim > 0 && block_tokens > 0 && n_blocks > 0);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int64_t i = n_blocks - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

bool KvBlockPool::Take(int64_t n, std::vector<int32_t>* ids) {
  if (n > free_blocks()) return false;
  for (int64_t i = 0; i < n; ++i) {
    ids->push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvBlockPool::Give(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    FRUGAL_DCHECK(id >= 0 && id < n_blocks_);
    free_.push_back(id);
  }
  FRUGAL_CHECK(free_blocks() <= n_blocks_);
}

KvCache::KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_(n_ctx),
      owned_(new float[static_cast<size_t>(2 * n_layer * n_ctx * kv_dim)]),
      ids_{0},
      k_(static_cast<size_t>(n_layer)),
      v_(static_cast<size_t>(n_layer)) {
  for (int64_t l = 0; l < n_layer; ++l) {
    float* base = owned_.get() + 2 * l * n_ctx * kv_dim;
    k_[static_cast<size_t>(l)] = {base};
    v_[static_cast<size_t>(l)] = {base + n_ctx * kv_dim};
  }
}

KvCache::KvCache(KvBlockPool& pool)
    : n_layer_(pool.n_layer()),
      kv_dim_(pool.kv_dim()),
      block_(pool.block_tokens()),
      pool_(&pool),
      k_(static_cast<size_t>(n_layer_)),
      v_(static_cast<size_t>(n_layer_)) {}

KvCache::~KvCache() { Release(); }

bool KvCache::Reserve(int64_t positions) {
  if (positions <= capacity()) return true;
  if (!pool_) return false;
  const int64_t need = (positions - capacity() + block_ - 1) / block_;
  const size_t first = ids_.size();
  if (!pool_->Take(need, &ids_)) return false;
  for (size_t b = first; b < ids_.size(); ++b) {
    for (int64_t l = 0; l < n_layer_; ++l) {
      k_[static_cast<size_t>(l)].push_back(pool_->K(ids_[b], l));
      v_[static_cast<size_t>(l)].push_back(pool_->V(ids_[b], l));
    }
  }
  return true;
}

void KvCache::Release() {
  if (!pool_) return;
  pool_->Give(ids_);
  ids_.clear();
  for (auto& t : k_) t.clear();
  for (auto& t : v_) t.clear();
  size_ = 0;
}

}  // namespace frugal
