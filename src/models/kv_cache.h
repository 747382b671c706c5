// Key/value caches of decoder sequences.
//
// KvBlockPool: one preallocated pool of fixed-size blocks (paged, as vLLM's PagedAttention): a
// block holds `block_tokens` positions of keys and values for every layer, as IEEE halves or
// floats (KvType, kernels.h). The memory is reserved at start but touched only when a block is
// first written.
//
// Prefix caching (the worker's; vLLM's automatic prefix caching): a full block can be published
// under the tokens it holds and the block before it (its parent), so the blocks of one prompt
// form a chain from position 0. A new sequence takes the longest chain that matches its tokens
// (Match), copies the positions of the cached block after it that agree with its next tokens
// (a full block, or the tail a finished sequence left mid-block: MatchTail, PublishTail), and
// computes only the rest. Blocks are reference-counted: a block is shared by every
// sequence using it, and when the last one lets go a published block stays cached, evictable;
// Take evicts the least recently used of those, deepest first, only when no free block is left.
// Keys are (parent block, the block's token ids) compared exactly, not a hash alone, so two
// prompts can never share a block by collision. Why a chain of blocks and not a radix tree
// (SGLang): the pool is already paged, a block is the unit of sharing and eviction, and a chain
// lookup is one hash probe per block (docs/architecture.md).
//
// KvCache: the cache of one sequence, either contiguous (owns room for n_ctx positions: the CLI
// paths) or paged (a table of blocks taken from a KvBlockPool; its capacity grows with Reserve,
// and its references go back to the pool on Release or destruction).
//
// Thread safety: the pool's bookkeeping (references, the prefix index, the free and LRU lists)
// is behind its own mutex, so MatchLength may be asked from any thread; block contents are not:
// a KvCache belongs to the one thread that schedules sequences (kernels may read/write disjoint
// positions from pool threads within one Forward call). A published block is never written
// again: sequences write only past the blocks they share.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "kernels/kernels.h"

namespace frugal {

class KvBlockPool {
 public:
  KvBlockPool(int64_t n_layer, int64_t kv_dim, int64_t block_tokens, int64_t n_blocks, KvType type);

  KvType type() const { return type_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t total_blocks() const { return n_blocks_; }
  // Blocks Take can hand out now: never used, or cached with no reference (evictable).
  int64_t free_blocks() const;
  // Published blocks (referenced or not) and, of them, those no sequence references.
  int64_t cached_blocks() const;
  int64_t evictable_blocks() const;
  // Cached blocks taken out of the index to make room, since the pool was made.
  int64_t evicted_blocks() const;
  // Bytes of one block (keys and values of all layers).
  size_t block_bytes() const { return BlockBytes(n_layer_, kv_dim_, block_tokens_, type_); }
  static size_t BlockBytes(int64_t n_layer, int64_t kv_dim, int64_t block_tokens, KvType type) {
    return static_cast<size_t>(2 * n_layer * block_tokens * kv_dim) * KvTypeBytes(type);
  }

  // Appends n block ids, one reference each, to `ids`: free ones first, then the least recently
  // used unreferenced cached ones (leaving the prefix index); false (nothing taken) when fewer
  // than n are available.
  bool Take(int64_t n, std::vector<int32_t>* ids);
  // Drops one reference of each (a chain, in position order). An unreferenced published block
  // stays cached as the most recently used (deeper blocks of the chain evicted first); any other
  // goes back to the free list.
  void Give(std::span<const int32_t> ids);

  // The longest chain of published blocks holding tokens[0, k * block_tokens) for the largest
  // such k; takes a reference on each and appends them to `ids`. Returns k.
  int64_t Match(std::span<const int32_t> tokens, std::vector<int32_t>* ids);
  // The k Match would return now, taking nothing.
  int64_t MatchLength(std::span<const int32_t> tokens) const;
  // The published block holding `tokens` (block_tokens of them) after `parent` (-1: at position
  // 0), with a reference taken on it; -1 when there is none.
  int32_t MatchNext(int32_t parent, std::span<const int32_t> tokens);
  // Publishes block `id` (referenced by the caller) as holding `tokens` (block_tokens of them)
  // after `parent` (the published block before it in the same chain, or -1 at position 0).
  // Returns the block that now holds that content: `id`, or a block published earlier with the
  // same parent and tokens, on which the caller then holds a new reference (it should use that
  // one and Give `id` back). -1 when `parent` is not published (nothing is done).
  int32_t Publish(int32_t parent, std::span<const int32_t> tokens, int32_t id);
  // Publishes block `id` as a tail: the first tokens.size() (1 to block_tokens - 1) positions of
  // a block after `parent`, the last block of a sequence that ended mid-block. A tail is only
  // ever copied from (KvCache::AdoptPrefix), never shared in place. Returns as Publish does.
  int32_t PublishTail(int32_t parent, std::span<const int32_t> tokens, int32_t id);
  // The cached block after `parent` (a tail, or a full block) whose first tokens agree longest
  // with `tokens` (at most block_tokens - 1 of them are compared): its id, with a reference taken,
  // and the count j >= 1 that agree; {-1, 0} when none does.
  std::pair<int32_t, int64_t> MatchTail(int32_t parent, std::span<const int32_t> tokens);
  // The positions KvCache::AdoptPrefix would take now for `tokens`, taking nothing: Match's
  // whole blocks and MatchTail's j after them.
  int64_t MatchPositions(std::span<const int32_t> tokens) const;

  // Keys / values of `layer` in block `id`: [block_tokens][kv_dim] elements of type().
  void* K(int32_t id, int64_t layer) { return Base(id, layer, 0); }
  void* V(int32_t id, int64_t layer) { return Base(id, layer, 1); }

 private:
  void* Base(int32_t id, int64_t layer, int64_t kv) {
    const int64_t elems =
        ((static_cast<int64_t>(id) * n_layer_ + layer) * 2 + kv) * block_tokens_ * kv_dim_;
    return data_.get() + static_cast<size_t>(elems) * KvTypeBytes(type_);
  }

  struct Meta {
    int32_t refs = 0;
    bool cached = false;               // in index_
    int32_t parent = -1;               // cached: the block before it
    int32_t cached_children = 0;       // cached blocks whose parent this is (evicted after them)
    uint64_t key = 0;                  // cached: Key(parent, tokens)
    std::vector<int32_t> tokens;       // cached: the block's token ids
    std::list<int32_t>::iterator lru;  // cached and refs == 0: its place in lru_
  };
  uint64_t Key(int32_t parent, std::span<const int32_t> tokens) const;
  // The published block with this parent and tokens, or -1.
  int32_t Find(int32_t parent, std::span<const int32_t> tokens) const FRUGAL_REQUIRES(mu_);
  // The published chain holding tokens[0, k * block_tokens) for the largest such k, in order.
  std::vector<int32_t> ChainLocked(std::span<const int32_t> tokens) const FRUGAL_REQUIRES(mu_);
  std::pair<int32_t, int64_t> TailLocked(int32_t parent, std::span<const int32_t> tokens) const
      FRUGAL_REQUIRES(mu_);
  int32_t PublishLocked(int32_t parent, std::span<const int32_t> tokens, int32_t id)
      FRUGAL_REQUIRES(mu_);
  void RefLocked(int32_t id) FRUGAL_REQUIRES(mu_);
  // Takes one unreferenced cached block out of the index: the least recently used that no other
  // cached block names as parent.
  int32_t EvictLocked() FRUGAL_REQUIRES(mu_);

  const int64_t n_layer_, kv_dim_, block_tokens_, n_blocks_;
  const KvType type_;
  // [block][layer][k|v][block_tokens][kv_dim] elements of type_; not value-initialised.
  std::unique_ptr<char[]> data_;
  mutable Mutex mu_;
  std::vector<Meta> meta_ FRUGAL_GUARDED_BY(mu_);
  // A stack: the most recently freed block is reused first.
  std::vector<int32_t> free_ FRUGAL_GUARDED_BY(mu_);
  // Unreferenced cached blocks, least recently used first.
  std::list<int32_t> lru_ FRUGAL_GUARDED_BY(mu_);
  std::unordered_multimap<uint64_t, int32_t> index_ FRUGAL_GUARDED_BY(mu_);
  // Cached blocks by parent (-1: at position 0), for MatchTail.
  std::unordered_multimap<int32_t, int32_t> children_ FRUGAL_GUARDED_BY(mu_);
  int64_t evicted_ FRUGAL_GUARDED_BY(mu_) = 0;
};

class KvCache {
 public:
  // Contiguous: room for n_ctx positions, owned.
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_dim, KvType type);
  // Paged: no blocks yet; Reserve takes them from `pool`, which must outlive this cache.
  explicit KvCache(KvBlockPool& pool);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Positions the cache can hold now.
  int64_t capacity() const { return static_cast<int64_t>(ids_.size()) * block_; }
  int64_t kv_dim() const { return kv_dim_; }
  KvType type() const { return type_; }
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

  // Prefix caching (paged, empty cache): takes the longest published chain matching `tokens`
  // (KvBlockPool::Match) as this cache's first blocks, then copies into a block of its own the
  // positions of the cached block after that chain that agree with the next tokens (a tail or
  // a full block: KvBlockPool::MatchTail), and sets size() to the positions it then holds.
  // Returns that size (0 for a contiguous cache).
  int64_t AdoptPrefix(std::span<const int32_t> tokens);
  // Catching up (paged): while every block so far is shared and the cache ends on a block
  // boundary, takes the next published blocks that match `tokens` (the ids at positions from 0;
  // only whole blocks within them) in place of its own, not yet written, blocks: another
  // sequence has just computed what this one was about to. Returns the positions gained.
  int64_t ExtendPrefix(std::span<const int32_t> tokens);
  // Publishes the full blocks of [0, size()) not published yet; `tokens` are the ids at those
  // positions (at least size() of them). A block whose content another block already holds is
  // replaced by that one (same keys and values, bit for bit), so chains stay whole. Stops at the
  // first block that cannot be published.
  void PublishFullBlocks(std::span<const int32_t> tokens);
  // When every full block is published and the cache ends mid-block: publishes that last block
  // as a tail (KvBlockPool::PublishTail) of the positions it holds, so that a sequence whose
  // tokens run on from these (the next turn of a conversation) copies them instead of computing
  // them. For a sequence that is done: its cache is not written after.
  void PublishTail(std::span<const int32_t> tokens);
  // Positions at the start that came from, or went into, the prefix index.
  int64_t shared_positions() const { return published_ * block_; }

  // Where position `pos` of `layer` keeps its kv_dim keys / values (elements of type()).
  void* K(int64_t layer, int64_t pos) { return At(k_, layer, pos); }
  void* V(int64_t layer, int64_t pos) { return At(v_, layer, pos); }
  // Stores the kv_dim keys and values of `layer` at `pos`, converted to type() (halves: round to
  // nearest even, the same bits at every CPU level).
  void Write(int64_t layer, int64_t pos, const float* k, const float* v);
  // Block tables of one layer, for the attention kernel (kernels.h: KvBlocks).
  const void* const* KBlocks(int64_t layer) const { return k_[static_cast<size_t>(layer)].data(); }
  const void* const* VBlocks(int64_t layer) const { return v_[static_cast<size_t>(layer)].data(); }
  // One key/value head of `layer`, `offset` elements into each position, for the kernels.
  KvBlocks Head(int64_t layer, int64_t offset) const {
    return KvBlocks{KBlocks(layer), VBlocks(layer), offset, block_, kv_dim_, type_};
  }

 private:
  void* At(std::vector<std::vector<void*>>& t, int64_t layer, int64_t pos) {
    return static_cast<char*>(t[static_cast<size_t>(layer)][static_cast<size_t>(pos / block_)]) +
           static_cast<size_t>((pos % block_) * kv_dim_) * KvTypeBytes(type_);
  }

  int64_t n_layer_, kv_dim_, block_;
  KvType type_;
  int64_t size_ = 0;
  KvBlockPool* pool_ = nullptr;  // paged only
  // Contiguous only: [layer][k|v][n_ctx][kv_dim]. Not value-initialised (as the pool's blocks):
  // positions are read only after they are written, and zero-filling the whole context touched
  // every page up front (470 MB for Qwen2.5-1.5B at 8192 tokens, for an 8-token answer).
  std::unique_ptr<char[]> owned_;
  void SetBlock(size_t b, int32_t id);

  std::vector<int32_t> ids_;               // blocks (contiguous: the single block 0)
  int64_t published_ = 0;                  // leading blocks in the prefix index
  std::vector<std::vector<void*>> k_, v_;  // [layer][block] -> first position of the block
};

}  // namespace frugal
