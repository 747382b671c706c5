// The paged KV cache: blocks from a pool, capacity growing by Reserve, blocks back on Release.
#include "models/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <vector>

namespace frugal {
namespace {

TEST(KvCacheTest, PagedCacheTakesWholeBlocksAndGivesThemBack) {
  KvBlockPool pool(/*n_layer=*/2, /*kv_dim=*/8, /*block_tokens=*/16, /*n_blocks=*/5, KvType::kF16);
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

// Position p of a layer of a cache, as a byte address.
const char* Addr(void* p) { return static_cast<const char*>(p); }
const char* Addr(const void* p) { return static_cast<const char*>(p); }

TEST(KvCacheTest, PositionsOfDifferentBlocksAndLayersNeverOverlap) {
  for (KvType type : {KvType::kF16, KvType::kF32}) {
    const auto bytes = static_cast<int64_t>(KvTypeBytes(type));
    KvBlockPool pool(3, 4, 4, 8, type);
    EXPECT_EQ(pool.block_bytes(), static_cast<size_t>(2 * 3 * 4 * 4 * bytes));
    KvCache a(pool), b(pool);
    ASSERT_TRUE(a.Reserve(10));
    ASSERT_TRUE(b.Reserve(7));
    std::set<const char*> seen;
    for (KvCache* c : {&a, &b}) {
      for (int64_t l = 0; l < 3; ++l) {
        for (int64_t p = 0; p < c->capacity(); ++p) {
          for (const char* x : {Addr(c->K(l, p)), Addr(c->V(l, p))}) {
            // kv_dim elements from x on belong to this position only.
            for (int64_t e = 0; e < 4 * bytes; ++e) {
              EXPECT_TRUE(seen.insert(x + e).second) << "layer " << l << " pos " << p;
            }
          }
          // The block table agrees with K / V.
          EXPECT_EQ(Addr(c->KBlocks(l)[p / 4]) + (p % 4) * 4 * bytes, Addr(c->K(l, p)));
          EXPECT_EQ(Addr(c->VBlocks(l)[p / 4]) + (p % 4) * 4 * bytes, Addr(c->V(l, p)));
        }
      }
    }
    // Written values stay where they were written, as halves or floats.
    auto key3 = [&](KvCache& c, int64_t p) {
      float k[4];
      if (type == KvType::kF16) {
        Fp16ToFp32Row(static_cast<const uint16_t*>(c.K(2, p)), k, 4);
      } else {
        std::memcpy(k, c.K(2, p), sizeof k);
      }
      return k[3];
    };
    for (int64_t p = 0; p < a.capacity(); ++p) {
      const float k[4] = {0, 0, 0, static_cast<float>(p) + 0.25f}, v[4] = {};
      a.Write(2, p, k, v);
    }
    for (int64_t p = 0; p < b.capacity(); ++p) {
      const float k[4] = {0, 0, 0, -1.0f}, v[4] = {};
      b.Write(2, p, k, v);
    }
    for (int64_t p = 0; p < a.capacity(); ++p) EXPECT_EQ(key3(a, p), static_cast<float>(p) + 0.25f);
  }
}

TEST(KvCacheTest, HalvesTakeHalfTheBytesOfFloats) {
  EXPECT_EQ(KvBlockPool::BlockBytes(30, 192, 16, KvType::kF16) * 2,
            KvBlockPool::BlockBytes(30, 192, 16, KvType::kF32));
  EXPECT_EQ(KvBlockPool::BlockBytes(30, 192, 1, KvType::kF16), size_t{2 * 30 * 192 * 2});
}

TEST(KvCacheTest, WriteRoundsToNearestEvenHalves) {
  KvCache c(1, 2, 8, KvType::kF16);
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to the even, 1.
  const float k[8] = {1.0f + 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-12f,
                      65520.0f,        -0.0f,
                      0x1p-25f,        0x1p-24f,
                      1e-30f,          3.0f};
  const uint16_t want[8] = {0x3c00, 0x3c01, 0x7c00, 0x8000, 0x0000, 0x0001, 0x0000, 0x4200};
  c.Write(0, 1, k, k);
  for (int e = 0; e < 8; ++e) {
    EXPECT_EQ(static_cast<const uint16_t*>(c.K(0, 1))[e], want[e]) << e;
    EXPECT_EQ(static_cast<const uint16_t*>(c.V(0, 1))[e], want[e]) << e;
  }
}

TEST(KvCacheTest, ContiguousCacheIsOneBlock) {
  for (KvType type : {KvType::kF16, KvType::kF32}) {
    KvCache c(2, 10, 4, type);
    EXPECT_FALSE(c.paged());
    EXPECT_EQ(c.capacity(), 10);
    EXPECT_EQ(c.blocks(), 1);
    EXPECT_TRUE(c.Reserve(10));
    EXPECT_FALSE(c.Reserve(11));
    EXPECT_EQ(Addr(c.K(1, 3)),
              Addr(c.KBlocks(1)[0]) + 12 * static_cast<int64_t>(KvTypeBytes(type)));
  }
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
  KvBlockPool pool(/*n_layer=*/2, /*kv_dim=*/4, /*block_tokens=*/4, /*n_blocks=*/10, KvType::kF16);
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

TEST(KvPrefixCacheTest, AFinishedSequencesTailIsCopiedNotShared) {
  KvBlockPool pool(/*n_layer=*/2, /*kv_dim=*/4, /*block_tokens=*/4, /*n_blocks=*/10, KvType::kF32);
  const auto tokens = Iota(10);  // 2 full blocks and 2 positions of a third
  auto a = Computed(pool, tokens);
  auto value = [](int64_t l, int64_t pos, int kv) {
    return static_cast<float>(100 * l + 10 * pos + kv);
  };
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t pos = 0; pos < 10; ++pos) {
      const std::vector<float> k(4, value(l, pos, 0)), v(4, value(l, pos, 1));
      a->Write(l, pos, k.data(), v.data());
    }
  }
  a->PublishTail(tokens);  // a is done
  EXPECT_EQ(pool.cached_blocks(), 3);
  const void* a_tail = a->KBlocks(0)[2];
  a.reset();
  EXPECT_EQ(pool.evictable_blocks(), 3);

  // The next turn runs on from those 10 tokens: two blocks shared, the tail's two positions
  // copied into a block of its own.
  const auto next = Iota(14);
  EXPECT_EQ(pool.MatchLength(next), 2);  // a tail is never a whole block
  EXPECT_EQ(pool.MatchPositions(next), 10);
  KvCache b(pool);
  EXPECT_EQ(b.AdoptPrefix(next), 10);
  EXPECT_EQ(b.shared_positions(), 8);
  EXPECT_NE(b.KBlocks(0)[2], a_tail);
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t pos = 8; pos < 10; ++pos) {
      EXPECT_EQ(static_cast<const float*>(b.K(l, pos))[3], value(l, pos, 0));
      EXPECT_EQ(static_cast<const float*>(b.V(l, pos))[0], value(l, pos, 1));
    }
  }
  EXPECT_EQ(pool.free_blocks(), 10 - 3);  // b holds 2 shared blocks and its copy
  // Leaving the tail after one position copies one; at once, none.
  auto diverge = next;
  diverge[9] = 99;
  EXPECT_EQ(pool.MatchPositions(diverge), 9);
  diverge[8] = 99;
  EXPECT_EQ(pool.MatchPositions(diverge), 8);
  // A whole block after the chain serves as a tail too: 3 of its positions at most.
  EXPECT_EQ(pool.MatchPositions(std::span<const int32_t>(tokens).first(7)), 7);
  b.Release();
  EXPECT_EQ(pool.free_blocks(), 10);

  // The same tail published again keeps one block.
  {
    auto again = Computed(pool, tokens);
    again->PublishTail(tokens);
  }
  EXPECT_EQ(pool.cached_blocks(), 3);
  EXPECT_EQ(pool.free_blocks(), 10);
  // Under pressure the tail, the deepest block, goes first.
  KvCache big(pool);
  ASSERT_TRUE(big.Reserve(4 * 8));
  EXPECT_EQ(pool.MatchPositions(next), 8);
  EXPECT_EQ(pool.cached_blocks(), 2);
}

TEST(KvPrefixCacheTest, ReleasedChainsStayCachedUntilTheirBlocksAreNeeded) {
  KvBlockPool pool(1, 4, 4, 6, KvType::kF16);
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
  KvBlockPool pool(1, 4, 4, 4, KvType::kF16);
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
  KvBlockPool pool(1, 4, 4, 5, KvType::kF16);
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
  KvBlockPool pool(1, 4, 4, 8, KvType::kF16);
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
  KvCache c(1, 16, 4, KvType::kF16);
  EXPECT_EQ(c.AdoptPrefix(Iota(8)), 0);
  c.set_size(8);
  c.PublishFullBlocks(Iota(8));
  EXPECT_EQ(c.shared_positions(), 0);
}

}  // namespace
}  // namespace frugal
