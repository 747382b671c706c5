#include "models/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"

namespace frugal {

KvBlockPool::KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_tokens, int64_t n_blocks,
                         KvType type)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_tokens_(block_tokens),
      n_blocks_(n_blocks),
      type_(type),
      // new char[] leaves the bytes uninitialised: pages are touched only when written.
      data_(new char[BlockBytes(n_layer, kv_dim, block_tokens, type) *
                     static_cast<size_t>(n_blocks)]) {
  FRUGAL_CHECK(n_layer > 0 && kv_dim > 0 && block_tokens > 0 && n_blocks > 0);
  MutexLock lock(mu_);
  meta_.resize(static_cast<size_t>(n_blocks));
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int64_t i = n_blocks - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

int64_t KvBlockPool::free_blocks() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(free_.size() + lru_.size());
}

int64_t KvBlockPool::cached_blocks() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(index_.size());
}

int64_t KvBlockPool::evictable_blocks() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(lru_.size());
}

int64_t KvBlockPool::evicted_blocks() const {
  MutexLock lock(mu_);
  return evicted_;
}

uint64_t KvBlockPool::Key(int32_t parent, std::span<const int32_t> tokens) const {
  // FNV-1a over the parent and the ids, then a final mix: only a bucket; Find compares exactly.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint32_t x) {
    for (int i = 0; i < 4; ++i) {
      h ^= (x >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint32_t>(parent));
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

int32_t KvBlockPool::Find(int32_t parent, std::span<const int32_t> tokens) const {
  const auto [lo, hi] = index_.equal_range(Key(parent, tokens));
  for (auto it = lo; it != hi; ++it) {
    const Meta& m = meta_[static_cast<size_t>(it->second)];
    if (m.parent == parent &&
        std::equal(m.tokens.begin(), m.tokens.end(), tokens.begin(), tokens.end())) {
      return it->second;
    }
  }
  return -1;
}

void KvBlockPool::RefLocked(int32_t id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  if (m.refs == 0 && m.cached) lru_.erase(m.lru);
  ++m.refs;
}

int32_t KvBlockPool::EvictLocked() {
  // Give puts a chain's deeper blocks before its shallower ones, and a block is referenced only
  // with its whole chain before it, so the front is a leaf; the scan is a guard.
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const int32_t id = *it;
    Meta& m = meta_[static_cast<size_t>(id)];
    if (m.cached_children > 0) continue;
    lru_.erase(it);
    const auto [lo, hi] = index_.equal_range(m.key);
    for (auto e = lo; e != hi; ++e) {
      if (e->second == id) {
        index_.erase(e);
        break;
      }
    }
    const auto [clo, chi] = children_.equal_range(m.parent);
    for (auto c = clo; c != chi; ++c) {
      if (c->second == id) {
        children_.erase(c);
        break;
      }
    }
    if (m.parent >= 0) --meta_[static_cast<size_t>(m.parent)].cached_children;
    m.cached = false;
    m.parent = -1;
    m.tokens.clear();
    ++evicted_;
    return id;
  }
  return -1;
}

bool KvBlockPool::Take(int64_t n, std::vector<int32_t>* ids) {
  MutexLock lock(mu_);
  if (n > static_cast<int64_t>(free_.size() + lru_.size())) return false;
  for (int64_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = EvictLocked();
      FRUGAL_CHECK(id >= 0);
    }
    meta_[static_cast<size_t>(id)].refs = 1;
    ids->push_back(id);
  }
  return true;
}

void KvBlockPool::Give(std::span<const int32_t> ids) {
  MutexLock lock(mu_);
  // Deepest first: a chain's last block ends up least recently used, so it is evicted first.
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    const int32_t id = *it;
    FRUGAL_DCHECK(id >= 0 && id < n_blocks_);
    Meta& m = meta_[static_cast<size_t>(id)];
    FRUGAL_CHECK(m.refs > 0);
    if (--m.refs > 0) continue;
    if (m.cached) {
      m.lru = lru_.insert(lru_.end(), id);
    } else {
      free_.push_back(id);
    }
  }
  FRUGAL_CHECK(static_cast<int64_t>(free_.size() + lru_.size()) <= n_blocks_);
}

std::vector<int32_t> KvBlockPool::ChainLocked(std::span<const int32_t> tokens) const {
  const auto bt = static_cast<size_t>(block_tokens_);
  std::vector<int32_t> chain;
  for (size_t at = 0; at + bt <= tokens.size(); at += bt) {
    const int32_t id = Find(chain.empty() ? -1 : chain.back(), tokens.subspan(at, bt));
    if (id < 0) break;
    chain.push_back(id);
  }
  return chain;
}

int64_t KvBlockPool::Match(std::span<const int32_t> tokens, std::vector<int32_t>* ids) {
  MutexLock lock(mu_);
  const std::vector<int32_t> chain = ChainLocked(tokens);
  for (int32_t id : chain) RefLocked(id);
  ids->insert(ids->end(), chain.begin(), chain.end());
  return static_cast<int64_t>(chain.size());
}

int64_t KvBlockPool::MatchLength(std::span<const int32_t> tokens) const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(ChainLocked(tokens).size());
}

std::pair<int32_t, int64_t> KvBlockPool::TailLocked(int32_t parent,
                                                    std::span<const int32_t> tokens) const {
  const size_t most = std::min(tokens.size(), static_cast<size_t>(block_tokens_ - 1));
  std::pair<int32_t, int64_t> best{-1, 0};
  const auto [lo, hi] = children_.equal_range(parent);
  for (auto it = lo; it != hi; ++it) {
    const Meta& m = meta_[static_cast<size_t>(it->second)];
    const size_t n = std::min(most, m.tokens.size());
    size_t j = 0;
    while (j < n && m.tokens[j] == tokens[j]) ++j;
    if (static_cast<int64_t>(j) > best.second) best = {it->second, static_cast<int64_t>(j)};
  }
  return best;
}

std::pair<int32_t, int64_t> KvBlockPool::MatchTail(int32_t parent,
                                                   std::span<const int32_t> tokens) {
  MutexLock lock(mu_);
  const auto found = TailLocked(parent, tokens);
  if (found.first >= 0) RefLocked(found.first);
  return found;
}

int64_t KvBlockPool::MatchPositions(std::span<const int32_t> tokens) const {
  MutexLock lock(mu_);
  const std::vector<int32_t> chain = ChainLocked(tokens);
  const size_t at = chain.size() * static_cast<size_t>(block_tokens_);
  return static_cast<int64_t>(at) +
         TailLocked(chain.empty() ? -1 : chain.back(), tokens.subspan(at)).second;
}

int32_t KvBlockPool::MatchNext(int32_t parent, std::span<const int32_t> tokens) {
  MutexLock lock(mu_);
  const int32_t id = Find(parent, tokens);
  if (id >= 0) RefLocked(id);
  return id;
}

int32_t KvBlockPool::Publish(int32_t parent, std::span<const int32_t> tokens, int32_t id) {
  FRUGAL_CHECK(static_cast<int64_t>(tokens.size()) == block_tokens_);
  MutexLock lock(mu_);
  return PublishLocked(parent, tokens, id);
}

int32_t KvBlockPool::PublishTail(int32_t parent, std::span<const int32_t> tokens, int32_t id) {
  FRUGAL_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) < block_tokens_);
  MutexLock lock(mu_);
  return PublishLocked(parent, tokens, id);
}

int32_t KvBlockPool::PublishLocked(int32_t parent, std::span<const int32_t> tokens, int32_t id) {
  Meta& m = meta_[static_cast<size_t>(id)];
  FRUGAL_CHECK(m.refs > 0);
  if (parent >= 0 && !meta_[static_cast<size_t>(parent)].cached) return -1;
  if (m.cached) return m.parent == parent ? id : -1;
  const int32_t existing = Find(parent, tokens);
  if (existing >= 0) {
    RefLocked(existing);
    return existing;
  }
  m.cached = true;
  m.parent = parent;
  m.tokens.assign(tokens.begin(), tokens.end());
  m.key = Key(parent, tokens);
  index_.emplace(m.key, id);
  children_.emplace(parent, id);
  if (parent >= 0) ++meta_[static_cast<size_t>(parent)].cached_children;
  return id;
}

KvCache::KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim, KvType type)
    : n_layer_(n_layer),
      kv_dim_(kv_dim),
      block_(n_ctx),
      type_(type),
      owned_(new char[static_cast<size_t>(2 * n_layer * n_ctx * kv_dim) * KvTypeBytes(type)]),
      ids_{0},
      k_(static_cast<size_t>(n_layer)),
      v_(static_cast<size_t>(n_layer)) {
  const size_t half = static_cast<size_t>(n_ctx * kv_dim) * KvTypeBytes(type);  // keys or values
  for (int64_t l = 0; l < n_layer; ++l) {
    char* base = owned_.get() + 2 * static_cast<size_t>(l) * half;
    k_[static_cast<size_t>(l)] = {base};
    v_[static_cast<size_t>(l)] = {base + half};
  }
}

KvCache::KvCache(KvBlockPool& pool)
    : n_layer_(pool.n_layer()),
      kv_dim_(pool.kv_dim()),
      block_(pool.block_tokens()),
      type_(pool.type()),
      pool_(&pool),
      k_(static_cast<size_t>(n_layer_)),
      v_(static_cast<size_t>(n_layer_)) {}

KvCache::~KvCache() { Release(); }

void KvCache::Write(int64_t layer, int64_t pos, const float* k, const float* v) {
  if (type_ == KvType::kF16) {
    Fp32ToFp16Row(k, static_cast<uint16_t*>(K(layer, pos)), kv_dim_);
    Fp32ToFp16Row(v, static_cast<uint16_t*>(V(layer, pos)), kv_dim_);
  } else {
    std::memcpy(K(layer, pos), k, static_cast<size_t>(kv_dim_) * sizeof(float));
    std::memcpy(V(layer, pos), v, static_cast<size_t>(kv_dim_) * sizeof(float));
  }
}

bool KvCache::Reserve(int64_t positions) {
  if (positions <= capacity()) return true;
  if (!pool_) return false;
  const int64_t need = (positions - capacity() + block_ - 1) / block_;
  const size_t first = ids_.size();
  if (!pool_->Take(need, &ids_)) return false;
  for (size_t b = first; b < ids_.size(); ++b) SetBlock(b, ids_[b]);
  return true;
}

void KvCache::SetBlock(size_t b, int32_t id) {
  ids_[b] = id;
  for (int64_t l = 0; l < n_layer_; ++l) {
    auto& kt = k_[static_cast<size_t>(l)];
    auto& vt = v_[static_cast<size_t>(l)];
    if (kt.size() <= b) {
      kt.resize(b + 1);
      vt.resize(b + 1);
    }
    kt[b] = pool_->K(id, l);
    vt[b] = pool_->V(id, l);
  }
}

void KvCache::Release() {
  if (!pool_) return;
  pool_->Give(ids_);
  ids_.clear();
  for (auto& t : k_) t.clear();
  for (auto& t : v_) t.clear();
  size_ = 0;
  published_ = 0;
}

int64_t KvCache::AdoptPrefix(std::span<const int32_t> tokens) {
  if (!pool_) return 0;
  FRUGAL_CHECK(ids_.empty() && size_ == 0);
  const int64_t k = pool_->Match(tokens, &ids_);
  for (size_t b = 0; b < ids_.size(); ++b) SetBlock(b, ids_[b]);
  published_ = k;
  size_ = k * block_;
  // The positions after the chain that a cached block already holds (the end of an earlier
  // turn): copied into a block of this cache's own, which it then writes on from there. The
  // copy is what this sequence would compute (each position's keys and values depend only on
  // the tokens up to it), so nothing changes in the answers.
  const auto at = static_cast<size_t>(size_);
  if (at >= tokens.size()) return size_;
  const auto [from, j] = pool_->MatchTail(ids_.empty() ? -1 : ids_.back(), tokens.subspan(at));
  if (from < 0) return size_;
  std::vector<int32_t> own;
  if (pool_->Take(1, &own)) {
    const size_t bytes = static_cast<size_t>(j * kv_dim_) * KvTypeBytes(type_);
    for (int64_t l = 0; l < n_layer_; ++l) {
      std::memcpy(pool_->K(own[0], l), pool_->K(from, l), bytes);
      std::memcpy(pool_->V(own[0], l), pool_->V(from, l), bytes);
    }
    ids_.push_back(own[0]);
    SetBlock(ids_.size() - 1, own[0]);
    size_ += j;
  }
  pool_->Give(std::span<const int32_t>(&from, 1));
  return size_;
}

int64_t KvCache::ExtendPrefix(std::span<const int32_t> tokens) {
  if (!pool_) return 0;
  const int64_t start = size_;
  while (size_ == published_ * block_ && size_ + block_ <= static_cast<int64_t>(tokens.size()) &&
         static_cast<int64_t>(ids_.size()) > published_) {
    const auto b = static_cast<size_t>(published_);
    const int32_t parent = b == 0 ? -1 : ids_[b - 1];
    const int32_t shared = pool_->MatchNext(
        parent, tokens.subspan(b * static_cast<size_t>(block_), static_cast<size_t>(block_)));
    if (shared < 0) break;
    const int32_t own = ids_[b];
    SetBlock(b, shared);
    pool_->Give(std::span<const int32_t>(&own, 1));
    ++published_;
    size_ += block_;
  }
  return size_ - start;
}

void KvCache::PublishTail(std::span<const int32_t> tokens) {
  if (!pool_) return;
  FRUGAL_CHECK(static_cast<int64_t>(tokens.size()) >= size_);
  const int64_t rest = size_ - published_ * block_;
  if (rest <= 0 || rest >= block_ || static_cast<int64_t>(ids_.size()) <= published_) return;
  const auto b = static_cast<size_t>(published_);
  const int32_t holder = pool_->PublishTail(
      b == 0 ? -1 : ids_[b - 1],
      tokens.subspan(b * static_cast<size_t>(block_), static_cast<size_t>(rest)), ids_[b]);
  // An earlier block holds the same tail (the pool took a reference on it for us): it stays
  // cached, ours goes back free on Release. -1: the parent left the index; nothing is kept.
  if (holder >= 0 && holder != ids_[b]) pool_->Give(std::span<const int32_t>(&holder, 1));
}

void KvCache::PublishFullBlocks(std::span<const int32_t> tokens) {
  if (!pool_) return;
  FRUGAL_CHECK(static_cast<int64_t>(tokens.size()) >= size_);
  while ((published_ + 1) * block_ <= size_) {
    const auto b = static_cast<size_t>(published_);
    const int32_t parent = b == 0 ? -1 : ids_[b - 1];
    const int32_t own = ids_[b];
    const int32_t holder = pool_->Publish(
        parent, tokens.subspan(b * static_cast<size_t>(block_), static_cast<size_t>(block_)), own);
    if (holder < 0) return;
    if (holder != own) {
      // Another sequence computed the same positions first: use its block, give ours back.
      SetBlock(b, holder);
      pool_->Give(std::span<const int32_t>(&own, 1));
    }
    ++published_;
  }
}

}  // namespace frugal
