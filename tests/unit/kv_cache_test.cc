// The paged KV cache: blocks from a pool, capacity growing by Reserve, blocks back on Release.
#include "models/kv_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <span>
#include <vector>

namespace frugal {
namespace {

TEST(KvCacheTest, PagedCacheTakesWholeBlocksAndGivesThemBack) {
  KvBlockPool pool(/*n_layer=*/2, /*kv_dim=*/8, /*block_tokens=*/16, /*n_blocks=*/5);
  EXPECT_EQ(pool.free_blocks(), 5);
  {
    KvCache a(pool);
    EXPECT_EQ(a.capacity(), 0);
    EXPECT_TRUE(a.Reserve(17));  // two blocks
    EXPECT_EQ(a.capacity(), 32);
    EXPECT_EQ(pool.free_blocks(), 3);
    EXPECT_TRUE(a.Reserve(32));  // already there: nothing taken
    EXPECT_EQ(pool.free_blocks(), 3);
    KvCache b(pool);
    EXPECT_FALSE(b.Reserve(64));  // four blocks: only three free, nothing taken
    EXPECT_EQ(pool.free_blocks(), 3);
    EXPECT_EQ(b.capacity(), 0);
    EXPECT_TRUE(b.Reserve(48));
    EXPECT_EQ(pool.free_blocks(), 0);
    b.Release();
    EXPECT_EQ(pool.free_blocks(), 3);
    EXPECT_EQ(b.capacity(), 0);
  }  // a's destructor gives its blocks back
  EXPECT_EQ(pool.free_blocks(), 5);
}

TEST(KvCacheTest, PositionsOfDifferentBlocksAndLayersNeverOverlap) {
  KvBlockPool pool(3, 4, 4, 8);
  KvCache a(pool), b(pool);
  ASSERT_TRUE(a.Reserve(10));
  ASSERT_TRUE(b.Reserve(7));
  std::set<const float*> seen;
  for (KvCache* c : {&a, &b}) {
    for (int64_t l = 0; l < 3; ++l) {
      for (int64_t p = 0; p < c->capacity(); ++p) {
        for (const float* x : {c->K(l, p), c->V(l, p)}) {
          EXPECT_TRUE(seen.insert(x).second) << "layer " << l << " pos " << p;
        }
        // The block table agrees with K / V.
        EXPECT_EQ(c->KBlocks(l)[p / 4] + (p % 4) * 4, c->K(l, p));
        EXPECT_EQ(c->VBlocks(l)[p / 4] + (p % 4) * 4, c->V(l, p));
      }
    }
  }
  // Written values stay where they were written.
  for (int64_t p = 0; p < a.capacity(); ++p) a.K(2, p)[3] = static_cast<float>(p);
  for (int64_t p = 0; p < b.capacity(); ++p) b.K(2, p)[3] = -1.0f;
  for (int64_t p = 0; p < a.capacity(); ++p) EXPECT_EQ(a.K(2, p)[3], static_cast<float>(p));
}

TEST(KvCacheTest, ContiguousCacheIsOneBlock) {
  KvCache c(2, 10, 4);
  EXPECT_FALSE(c.paged());
  EXPECT_EQ(c.capacity(), 10);
  EXPECT_EQ(c.blocks(), 1);
  EXPECT_TRUE(c.Reserve(10));
  EXPECT_FALSE(c.Reserve(11));
  EXPECT_EQ(c.K(1, 3), c.KBlocks(1)[0] + 12);
}

// --- Prefix caching: published chains of full blocks, shared by reference, evicted LRU. ---

std::vector<int32_t> Iota(int n, int first = 1) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

// A cache that "computed" tokens: blocks for them, size set, full blocks published.
std::unique_ptr<KvCache> Computed(KvBlockPool& pool, const std::vector<int32_t>& tokens) {
  auto c = std::make_unique<KvCache>(pool);
  EXPECT_TRUE(c->Reserve(static_cast<int64_t>(tokens.size())));
  c->set_size(static_cast<int64_t>(tokens.size()));
  c->PublishFullBlocks(tokens);
  return c;
}

TEST(KvPrefixCacheTest, TheLongestPublishedChainIsSharedNotCopied) {
  KvBlockPool pool(/*n_layer=*/2, /*kv_dim=*/4, /*block_tokens=*/4, /*n_blocks=*/10);
  const auto tokens = Iota(10);  // 2 full blocks and 2 positions of a third
  auto a = Computed(pool, tokens);
  EXPECT_EQ(pool.cached_blocks(), 2);  // the partial third block is not published
  EXPECT_EQ(a->shared_positions(), 8);

  KvCache b(pool);
  EXPECT_EQ(b.AdoptPrefix(tokens), 8);
  EXPECT_EQ(b.size(), 8);
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t blk = 0; blk < 2; ++blk) EXPECT_EQ(b.KBlocks(l)[blk], a->KBlocks(l)[blk]);
  }
  // Shared blocks are not taken twice: a holds 3 blocks, b none of its own yet.
  EXPECT_EQ(pool.free_blocks(), 7);
  ASSERT_TRUE(b.Reserve(12));  // one more block, b's own
  EXPECT_EQ(pool.free_blocks(), 6);
  EXPECT_NE(b.KBlocks(0)[2], a->KBlocks(0)[2]);

  // A prefix differing in its second block shares only the first; in its first, nothing.
  auto other = tokens;
  other[5] = 99;
  EXPECT_EQ(pool.MatchLength(other), 1);
  other[0] = 99;
  EXPECT_EQ(pool.MatchLength(other), 0);
  // Fewer tokens than a block: nothing to match.
  EXPECT_EQ(pool.MatchLength(std::span<const int32_t>(tokens).first(3)), 0);
}

TEST(KvPrefixCacheTest, ReleasedChainsStayCachedUntilTheirBlocksAreNeeded) {
  KvBlockPool pool(1, 4, 4, 6);
  const auto tokens = Iota(8);
  {
    auto a = Computed(pool, tokens);
    EXPECT_EQ(pool.evictable_blocks(), 0);
  }
  // Nothing references the chain: its blocks count as free, yet it can still be matched.
  EXPECT_EQ(pool.free_blocks(), 6);
  EXPECT_EQ(pool.cached_blocks(), 2);
  EXPECT_EQ(pool.evictable_blocks(), 2);
  EXPECT_EQ(pool.MatchLength(tokens), 2);
  // Taking every block evicts the chain: deepest block first.
  KvCache big(pool);
  ASSERT_TRUE(big.Reserve(4 * 5));
  EXPECT_EQ(pool.MatchLength(tokens), 1);
  ASSERT_TRUE(big.Reserve(4 * 6));
  EXPECT_EQ(pool.MatchLength(tokens), 0);
  EXPECT_EQ(pool.cached_blocks(), 0);
  EXPECT_EQ(pool.evicted_blocks(), 2);
  EXPECT_FALSE(big.Reserve(4 * 7));
}

TEST(KvPrefixCacheTest, ReferencedBlocksAreNeverEvicted) {
  KvBlockPool pool(1, 4, 4, 4);
  const auto tokens = Iota(8);
  auto a = Computed(pool, tokens);  // 2 blocks, published and referenced
  KvCache b(pool);
  ASSERT_EQ(b.AdoptPrefix(tokens), 8);
  a.reset();  // the creator goes (cancelled, say): b still holds the chain
  EXPECT_EQ(pool.evictable_blocks(), 0);
  KvCache c(pool);
  EXPECT_FALSE(c.Reserve(4 * 3));  // only 2 blocks can be had
  EXPECT_TRUE(c.Reserve(4 * 2));
  EXPECT_EQ(pool.MatchLength(tokens), 2);  // untouched
  b.Release();
  EXPECT_EQ(pool.evictable_blocks(), 2);
}

TEST(KvPrefixCacheTest, TheLeastRecentlyUsedChainGoesFirst) {
  KvBlockPool pool(1, 4, 4, 5);
  const auto x = Iota(8, 1), y = Iota(8, 100);
  Computed(pool, x).reset();
  Computed(pool, y).reset();
  {
    KvCache again(pool);  // x used again: y is now the least recently used
    ASSERT_EQ(again.AdoptPrefix(x), 8);
  }
  KvCache big(pool);
  ASSERT_TRUE(big.Reserve(4 * 2));  // the one never-used block, then y's deepest
  EXPECT_EQ(pool.MatchLength(x), 2);
  EXPECT_EQ(pool.MatchLength(y), 1);
  ASSERT_TRUE(big.Reserve(4 * 3));
  EXPECT_EQ(pool.MatchLength(x), 2);
  EXPECT_EQ(pool.MatchLength(y), 0);
}

TEST(KvPrefixCacheTest, SameContentComputedTwiceKeepsOneBlock) {
  KvBlockPool pool(1, 4, 4, 8);
  const auto tokens = Iota(9);
  // Two sequences prefill the same prompt at once, neither finding the other's blocks.
  KvCache a(pool), b(pool);
  ASSERT_TRUE(a.Reserve(9));
  ASSERT_TRUE(b.Reserve(9));
  EXPECT_EQ(pool.free_blocks(), 2);
  a.set_size(9);
  b.set_size(9);
  a.PublishFullBlocks(tokens);
  b.PublishFullBlocks(tokens);  // b switches to a's blocks and gives its own back
  EXPECT_EQ(b.KBlocks(0)[0], a.KBlocks(0)[0]);
  EXPECT_EQ(b.KBlocks(0)[1], a.KBlocks(0)[1]);
  EXPECT_NE(b.KBlocks(0)[2], a.KBlocks(0)[2]);
  EXPECT_EQ(pool.free_blocks(), 4);
  EXPECT_EQ(pool.cached_blocks(), 2);
  EXPECT_EQ(b.shared_positions(), 8);
  // b's tail block is its own: publishing further continues the same chain.
  ASSERT_TRUE(b.Reserve(12));
  b.set_size(12);
  auto longer = tokens;
  longer.insert(longer.end(), {50, 51, 52});
  b.PublishFullBlocks(longer);
  EXPECT_EQ(pool.MatchLength(longer), 3);
}

TEST(KvPrefixCacheTest, AContiguousCacheTakesNoPartInIt) {
  KvCache c(1, 16, 4);
  EXPECT_EQ(c.AdoptPrefix(Iota(8)), 0);
  c.set_size(8);
  c.PublishFullBlocks(Iota(8));
  EXPECT_EQ(c.shared_positions(), 0);
}

}  // namespace
}  // namespace frugal
