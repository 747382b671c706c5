// The paged KV cache: blocks from a pool, capacity growing by Reserve, blocks back on Release.
#include "models/kv_cache.h"

#include <gtest/gtest.h>

#include <set>

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

}  // namespace
}  // namespace frugal
