// The semantic cache's Redis backend against a real redis-stack-server (started per test on
// 127.0.0.1 and a free port): replicas sharing one Redis, the guard and TTL, restart, rotation
// through the alias under load, a Redis that is down or restarts, and what is refused.
#include "cache/redis_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "../unit/testing/bow_embedder.h"
#include "redis_server.h"

namespace frugal::cache {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kScope = ScopeKey({"shop", "smollm2", "You are a helpful assistant.", "t=0"});

struct Fixture {
  testing::RedisServer server;
  std::shared_ptr<BagOfWordsEmbedder> emb = std::make_shared<BagOfWordsEmbedder>();

  RedisCacheOptions Options() const {
    RedisCacheOptions o;
    o.redis = server.Options();
    o.prefix = "test:cache";
    o.cache.exact_match =
        false;  // these tests are about the index; ExactRepeat... covers the shortcut
    return o;
  }
  std::unique_ptr<RedisCache> Open(RedisCacheOptions o) {
    auto c = RedisCache::Open(emb, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::unique_ptr<RedisCache> Open() { return Open(Options()); }
};

#define START_REDIS(f)                          \
  do {                                          \
    const std::string why = (f).server.Start(); \
    ASSERT_TRUE(why.empty()) << why;            \
  } while (0)
// With redis-server arguments and how to reach it (a password, TLS).
#define START_REDIS_WITH(f, args, probe)                     \
  do {                                                       \
    const std::string why = (f).server.Start((args), probe); \
    ASSERT_TRUE(why.empty()) << why;                         \
  } while (0)

// Polls until `pred` holds or `limit` passes; the time it took.
template <typename Pred>
double WaitMs(Pred pred, std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  while (!pred() && Clock::now() - t0 < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

TEST(RedisCacheTest, ReplicasSeeEachOthersInsertsAndInvalidations) {
  Fixture f;
  START_REDIS(f);
  auto a = f.Open();
  auto b = f.Open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  auto hit_on_b = [&] {
    auto r = b->Lookup(kScope, "shop", "how is shipping charged");
    return r.ok() && r->hit && r->response == "By weight.";
  };
  const double seen_ms = WaitMs(hit_on_b, std::chrono::seconds(1));
  EXPECT_TRUE(hit_on_b()) << "B did not see A's insert";
  EXPECT_LT(seen_ms, 1000.0);
  std::printf("insert on A visible on B after %.1f ms\n", seen_ms);

  // Scope: another system prompt sees nothing.
  const std::string other = ScopeKey({"shop", "smollm2", "You are a pirate.", "t=0"});
  auto miss = b->Lookup(other, "shop", "how is shipping charged");
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->hit);

  // Invalidation by exact query on B reaches A.
  EXPECT_EQ(b->InvalidateQuery(kScope, "how is shipping charged"), 1u);
  auto gone = a->Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->hit);

  // By namespace: only that namespace's entries go, whichever replica wrote them.
  const std::string acme = ScopeKey({"acme", "smollm2", "", "t=0"});
  ASSERT_TRUE(a->Insert(kScope, "shop", "do you ship to canada", "Yes.").ok());
  ASSERT_TRUE(a->Insert(acme, "acme", "do you ship to canada", "No.").ok());
  ASSERT_TRUE(b->Insert(acme, "acme", "what are your opening hours", "9 to 5.").ok());
  EXPECT_EQ(a->size(), 3u);
  EXPECT_EQ(b->InvalidateNamespace("acme"), 2u);
  auto acme_gone = a->Lookup(acme, "acme", "do you ship to canada");
  auto shop_kept = a->Lookup(kScope, "shop", "do you ship to canada");
  ASSERT_TRUE(acme_gone.ok() && shop_kept.ok());
  EXPECT_FALSE(acme_gone->hit);
  EXPECT_TRUE(shop_kept->hit);
  EXPECT_EQ(shop_kept->response, "Yes.");

  // The same query again: the newer answer replaces the older (one key per scope + query).
  ASSERT_TRUE(b->Insert(kScope, "shop", "do you ship to canada", "Yes, in 5 days.").ok());
  auto newer = a->Lookup(kScope, "shop", "do you ship to canada");
  ASSERT_TRUE(newer.ok() && newer->hit);
  EXPECT_EQ(newer->response, "Yes, in 5 days.");
  EXPECT_EQ(a->size(), 1u);

  EXPECT_EQ(a->Clear(), 1u);
  EXPECT_EQ(b->size(), 0u);
}

TEST(RedisCacheTest, ExactRepeatHitsWithoutEmbeddingOnEveryReplica) {
  Fixture f;
  START_REDIS(f);
  auto o = f.Options();
  o.cache.exact_match = true;
  auto a = f.Open(o);
  auto b = f.Open(o);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Insert(kScope, "shop", "price of item 1299", "$12.50").ok());
  const int calls = f.emb->calls.load();
  auto r = b->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit && r->exact);
  EXPECT_EQ(r->response, "$12.50");
  EXPECT_EQ(f.emb->calls.load(), calls) << "an exact repeat is one HMGET, no embedding";
  // Any other text takes the vector path, with the guard.
  auto near = b->Lookup(kScope, "shop", "price of item 1300");
  ASSERT_TRUE(near.ok());
  EXPECT_FALSE(near->exact || near->hit);
  EXPECT_EQ(f.emb->calls.load(), calls + 1);
  // Invalidation on A reaches B's shortcut too.
  EXPECT_EQ(a->InvalidateQuery(kScope, "price of item 1299"), 1u);
  auto gone = b->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->hit);
  EXPECT_NE(b->metrics().Render().find("frugal_cache_exact_hits_total 1"), std::string::npos)
      << b->metrics().Render();
  // Redis gone: the shortcut is a quick miss, not an error.
  f.server.Stop();
  const auto t0 = Clock::now();
  auto down = b->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(down.ok());
  EXPECT_FALSE(down->hit);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.5);
}

TEST(RedisCacheTest, ThresholdGuardAndTtl) {
  Fixture f;
  START_REDIS(f);
  auto o = f.Options();
  o.cache.namespace_threshold["loose"] =
      0.5f;  // the bag-of-words vectors of these pairs are ~0.8 apart
  o.cache.ttl = std::chrono::seconds(1);
  auto c = f.Open(o);
  ASSERT_TRUE(c);
  const std::string loose = ScopeKey({"loose", "m", "", "t=0"});
  ASSERT_TRUE(c->Insert(loose, "loose", "price of item 1299", "$12.50").ok());
  ASSERT_TRUE(c->Insert(loose, "loose", "is the blue kettle in stock", "Yes.").ok());

  auto numbers = c->Lookup(loose, "loose", "price of item 1300");
  ASSERT_TRUE(numbers.ok());
  EXPECT_GE(numbers->similarity, 0.5f);
  EXPECT_FALSE(numbers->hit);
  EXPECT_TRUE(numbers->rejected_by_guard);
  EXPECT_EQ(numbers->cached_query, "price of item 1299");

  auto negation = c->Lookup(loose, "loose", "is the blue kettle not in stock");
  ASSERT_TRUE(negation.ok());
  EXPECT_FALSE(negation->hit);
  EXPECT_TRUE(negation->rejected_by_guard);

  auto same = c->Lookup(loose, "loose", "Price of item 1299?");
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->hit);
  EXPECT_EQ(same->response, "$12.50");

  // The default threshold (0.92) in another namespace: the same near pair is no candidate at all.
  ASSERT_TRUE(c->Insert(kScope, "shop", "is the blue kettle in stock", "Yes.").ok());
  auto strict = c->Lookup(kScope, "shop", "is the red kettle in stock");
  ASSERT_TRUE(strict.ok());
  EXPECT_FALSE(strict->hit);
  EXPECT_FALSE(strict->rejected_by_guard);

  // TTL: Redis expires the entries.
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  auto expired = c->Lookup(loose, "loose", "price of item 1299");
  ASSERT_TRUE(expired.ok());
  EXPECT_FALSE(expired->hit);
  EXPECT_EQ(c->size(), 0u);

  const std::string m = c->metrics().Render();
  EXPECT_NE(m.find("frugal_cache_rejected_by_guard_total 2"), std::string::npos) << m;
  EXPECT_NE(m.find("frugal_cache_hits_total 1"), std::string::npos) << m;
}

// The learned decision reads the candidate's vector: the KNN reply carries it, so the verifier
// gets the stored vector (the one the entry was inserted with) and need not embed again.
class VectorRecorder : public HitVerifier {
 public:
  Verdict Verify(std::string_view, std::string_view, float, Embedder&) const override {
    return {false, 0, "no vectors"};
  }
  Verdict VerifyWithVectors(std::string_view, std::string_view, float, Embedder&,
                            const PairVectors& v) const override {
    cached.assign(v.cached.begin(), v.cached.end());
    query.assign(v.query.begin(), v.query.end());
    return {true, 1, ""};
  }
  const char* name() const override { return "recorder"; }
  mutable std::vector<float> cached, query;
};

TEST(RedisCacheTest, TheVerifierGetsTheStoredVector) {
  Fixture f;
  START_REDIS(f);
  auto o = f.Options();
  auto rec = std::make_shared<VectorRecorder>();
  o.cache.verifier = rec;
  o.cache.namespace_threshold["loose"] = 0.5f;
  auto c = f.Open(o);
  ASSERT_TRUE(c);
  const std::string loose = ScopeKey({"loose", "m", "", "t=0"});
  ASSERT_TRUE(c->Insert(loose, "loose", "price of item 1299", "$12.50").ok());
  auto r = c->Lookup(loose, "loose", "Price of item 1299?");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit);
  auto want = f.emb->Embed("price of item 1299");
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(rec->cached.size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) EXPECT_FLOAT_EQ(rec->cached[i], (*want)[i]) << i;
  EXPECT_EQ(rec->query, r->embedding);
}

// FT.INFO calls Redis has served, from INFO commandstats.
int64_t FtInfoCalls(RedisClient& redis) {
  auto r = redis.Command({"INFO", "commandstats"});
  if (!r.ok()) return -1;
  const std::string text = r->Text();
  const size_t at = text.find("cmdstat_FT.INFO:calls=");
  return at == std::string::npos ? 0 : std::strtoll(text.c_str() + at + 22, nullptr, 10);
}

TEST(RedisCacheTest, ScrapesReuseARecentEntriesCount) {
  Fixture f;
  START_REDIS(f);
  auto c = f.Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  ASSERT_TRUE(c->Insert(kScope, "shop", "do you ship to canada", "Yes.").ok());
  RedisClient admin(f.server.Options());
  const int64_t before = FtInfoCalls(admin);
  ASSERT_GE(before, 0);
  for (int i = 0; i < 20; ++i) {
    const std::string m = c->metrics().Render();
    ASSERT_NE(m.find("frugal_cache_entries 2"), std::string::npos) << m;
  }
  // Twenty scrapes, at most one FT.INFO; size() itself still asks (and is exact).
  EXPECT_LE(FtInfoCalls(admin) - before, 1);
  ASSERT_TRUE(c->Insert(kScope, "shop", "what are your opening hours", "9 to 5.").ok());
  EXPECT_EQ(c->size(), 3u);
}

TEST(RedisCacheTest, AnInstanceRestartKeepsTheEntries) {
  Fixture f;
  START_REDIS(f);
  {
    auto c = f.Open();
    ASSERT_TRUE(c);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(c->Insert(kScope, "shop", "question number " + std::to_string(i),
                            "answer " + std::to_string(i))
                      .ok());
    }
  }
  auto again = f.Open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->size(), 50u);
  for (int i = 0; i < 50; ++i) {
    auto r = again->Lookup(kScope, "shop", "question number " + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit) << i;
    EXPECT_EQ(r->response, "answer " + std::to_string(i));
  }
}

TEST(RedisCacheTest, RotationThroughTheAliasUnderLoadLosesNothing) {
  Fixture f;
  START_REDIS(f);
  auto o = f.Options();
  o.cache.candidates = 1;
  auto c = f.Open(o);
  auto replica = f.Open(o);
  ASSERT_TRUE(c && replica);
  constexpr int kSeed = 2000;
  for (int i = 0; i < kSeed; ++i) {
    ASSERT_TRUE(c->Insert(kScope, "shop", "seeded question " + std::to_string(i),
                          "seeded " + std::to_string(i))
                    .ok());
  }
  auto before = c->CurrentIndex();
  ASSERT_TRUE(before.ok()) << before.status().ToString();

  std::atomic<bool> stop{false};
  std::atomic<int> failed{0}, missed{0}, lookups{0};
  std::atomic<int> inserted{0};
  struct Timed {
    Clock::time_point at;
    double ms;
  };
  std::vector<std::vector<Timed>> lat(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      // Lookups of seeded entries through the other replica: each must hit.
      for (int i = t; !stop.load(); i += 2) {
        const int k = (i * 7919) % kSeed;
        const auto t0 = Clock::now();
        auto r = replica->Lookup(kScope, "shop", "seeded question " + std::to_string(k));
        lat[t].push_back(
            {t0, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
        lookups.fetch_add(1);
        if (!r.ok()) {
          failed.fetch_add(1);
        } else if (!r->hit || r->response != "seeded " + std::to_string(k)) {
          missed.fetch_add(1);
        }
        // Two busy clients, not a flood: the 2-core test machine also runs Redis's indexer.
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (c->Insert(kScope, "shop", "fresh question " + std::to_string(i),
                    "fresh " + std::to_string(i))
              .ok()) {
        inserted.fetch_add(1);
      } else {
        failed.fetch_add(1);
      }
      // Answers arrive at the pace of completions, not of a loop (a few hundred per second).
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  HnswParams p;
  p.m = 24;
  p.ef_construction = 100;
  const auto r1 = Clock::now();
  Status first = c->Rotate({nullptr, p});
  const auto r1_end = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto r2 = Clock::now();
  Status second = replica->Rotate();  // compaction, from the other replica
  const auto r2_end = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(first.ok()) << first.ToString();
  ASSERT_TRUE(second.ok()) << second.ToString();

  std::vector<double> all, rotating;
  for (const auto& v : lat) {
    for (const Timed& x : v) {
      all.push_back(x.ms);
      if ((x.at >= r1 && x.at <= r1_end) || (x.at >= r2 && x.at <= r2_end))
        rotating.push_back(x.ms);
    }
  }
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::printf(
      "rotations took %.0f and %.0f ms; %d lookups (p50 %.2f ms, p99 %.2f ms; during rotations: "
      "%zu, p99 %.2f ms), "
      "%d inserts, %d failed, %d missed\n",
      ms(r1, r1_end), ms(r2, r2_end), lookups.load(), Percentile(all, 0.5), Percentile(all, 0.99),
      rotating.size(), Percentile(rotating, 0.99), inserted.load(), failed.load(), missed.load());
  EXPECT_GT(rotating.size(), 0u);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(missed.load(), 0);
  EXPECT_GT(lookups.load(), 100);
  EXPECT_GT(inserted.load(), 10);

  auto after = c->CurrentIndex();
  ASSERT_TRUE(after.ok());
  EXPECT_NE(*after, *before);
  EXPECT_EQ(c->rotations(), 1);
  EXPECT_EQ(replica->rotations(), 1);
  // No entry lost: every seeded and every inserted one is in the new index and found.
  EXPECT_EQ(c->size(), static_cast<size_t>(kSeed + inserted.load()));
  for (int i = 0; i < inserted.load(); ++i) {
    auto r = c->Lookup(kScope, "shop", "fresh question " + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit) << "inserted during rotation and lost: " << i;
  }
}

TEST(RedisCacheTest, RedisDownMeansMissesAndComesBack) {
  Fixture f;
  // Not started yet: opening works, lookups miss without an error, inserts fail cleanly.
  auto o = f.Options();
  o.redis.retry_after = std::chrono::milliseconds(200);
  auto c = f.Open(o);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->reachable());
  auto down = c->Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_FALSE(down->hit);
  EXPECT_FALSE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  EXPECT_EQ(c->InvalidateNamespace("shop"), 0u);
  EXPECT_NE(c->metrics().Render().find("frugal_cache_backend_errors_total{op=\"lookup\"}"),
            std::string::npos);

  // Redis comes up: the index is created and the cache works.
  START_REDIS(f);
  bool inserted = false;
  WaitMs(
      [&] {
        return inserted = c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok();
      },
      std::chrono::seconds(3));
  ASSERT_TRUE(inserted);
  auto up = c->Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(up.ok());
  EXPECT_TRUE(up->hit);
  EXPECT_TRUE(c->reachable());

  // A crash: lookups miss (never fail) while it is down ...
  f.server.Stop();
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    auto r = c->Lookup(kScope, "shop", "how is shipping charged");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->hit);
    EXPECT_LT(ms, 1500.0);  // bounded by the connect timeout, not hanging
  }
  // ... and after a restart without persistence, the index is recreated on first use.
  START_REDIS(f);
  inserted = false;
  WaitMs(
      [&] {
        return inserted = c->Insert(kScope, "shop", "when is shipping free", "Over $50.").ok();
      },
      std::chrono::seconds(3));
  ASSERT_TRUE(inserted);
  auto back = c->Lookup(kScope, "shop", "when is shipping free");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->hit);
}

// Rotation to a new embedding model (another name and dimension): the rotating instance keeps
// serving every lookup while each entry gets the new model's vector and a new index is built
// on it; a replica that wrote with the old model meanwhile adopts the new one and nothing it
// wrote is lost; the old vectors are freed.
TEST(RedisCacheTest, RotationToANewEmbeddingModelUnderLoadLosesNothing) {
  Fixture f;
  START_REDIS(f);
  auto o = f.Options();
  o.cache.candidates = 1;
  auto c = f.Open(o);
  auto replica = f.Open(o);
  ASSERT_TRUE(c && replica);
  constexpr int kSeed = 1000;
  for (int i = 0; i < kSeed; ++i) {
    ASSERT_TRUE(c->Insert(kScope, "shop", "seeded question " + std::to_string(i),
                          "seeded " + std::to_string(i))
                    .ok());
  }
  auto v2 = std::make_shared<BagOfWordsEmbedder>("bow-v2", 32);
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0}, missed{0}, lookups{0}, fresh{0}, from_replica{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; !stop.load(); i += 2) {
        const int k = (i * 7919) % kSeed;
        auto r = c->Lookup(kScope, "shop", "seeded question " + std::to_string(k));
        lookups.fetch_add(1);
        if (!r.ok()) {
          failed.fetch_add(1);
        } else if (!r->hit || r->response != "seeded " + std::to_string(k)) {
          missed.fetch_add(1);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; !stop.load(); ++i) {
      (c->Insert(kScope, "shop", "fresh question " + std::to_string(i),
                 "fresh " + std::to_string(i))
               .ok()
           ? fresh
           : failed)
          .fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  threads.emplace_back([&] {  // the other replica still embeds with the old model
    for (int i = 0; !stop.load(); ++i) {
      if (replica
              ->Insert(kScope, "shop", "replica question " + std::to_string(i),
                       "replica " + std::to_string(i))
              .ok()) {
        from_replica.fetch_add(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int calls_before = v2->calls.load();
  const auto r0 = Clock::now();
  Status st = c->Rotate({v2, std::nullopt});
  const double rotate_ms = std::chrono::duration<double, std::milli>(Clock::now() - r0).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::printf(
      "rotation to a new model took %.0f ms; %d lookups, %d fresh inserts, %d from the replica, %d "
      "failed, %d missed\n",
      rotate_ms, lookups.load(), fresh.load(), from_replica.load(), failed.load(), missed.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(missed.load(), 0);
  EXPECT_GT(lookups.load(), 100);
  EXPECT_GE(v2->calls.load() - calls_before, kSeed);  // every entry embedded again
  EXPECT_EQ(c->rotations(), 1);

  // The replica moves to the model too: it adopts (no second migration) and backfills what it
  // wrote with the old model alone.
  ASSERT_TRUE(
      replica->Rotate({std::make_shared<BagOfWordsEmbedder>("bow-v2", 32), std::nullopt}).ok());
  auto expect_hit = [&](RedisCache& cache, const std::string& q, const std::string& a) {
    auto r = cache.Lookup(kScope, "shop", q);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->hit && r->response == a) << q << " -> " << (r->hit ? r->response : "miss");
  };
  for (int i = 0; i < kSeed; i += 37)
    expect_hit(*replica, "seeded question " + std::to_string(i), "seeded " + std::to_string(i));
  for (int i = 0; i < fresh.load(); ++i)
    expect_hit(*c, "fresh question " + std::to_string(i), "fresh " + std::to_string(i));
  for (int i = 0; i < from_replica.load(); ++i) {
    expect_hit(*c, "replica question " + std::to_string(i), "replica " + std::to_string(i));
  }
  EXPECT_EQ(c->size(), static_cast<size_t>(kSeed + fresh.load() + from_replica.load()));

  // The prefix now belongs to the new model; the old vectors are gone from the entries.
  auto old_model = RedisCache::Open(f.emb, o);
  EXPECT_EQ(old_model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(RedisCache::Open(std::make_shared<BagOfWordsEmbedder>("bow-v2", 32), o).ok());
  // Checked on the seeded entries: an entry the replica wrote after the switch, before it
  // adopted the rotation, keeps its old vector until its TTL ends (docs/cache.md).
  RedisClient admin(f.server.Options());
  int seeded = 0;
  std::string cursor = "0";
  do {
    auto page = admin.Command({"SCAN", cursor, "MATCH", "test:cache:e:*", "COUNT", "500"});
    ASSERT_TRUE(page.ok() && page->elements.size() == 2);
    cursor = page->elements[0].Text();
    for (const RedisReply& k : page->elements[1].elements) {
      auto fields = admin.Command({"HMGET", k.Text(), "query", "v", "v1"});
      auto ttl = admin.Command({"PTTL", k.Text()});
      ASSERT_TRUE(fields.ok() && fields->elements.size() == 3 && ttl.ok());
      if (fields->elements[0].Text().rfind("seeded question ", 0) != 0) continue;
      ++seeded;
      EXPECT_TRUE(fields->elements[1].is_nil()) << k.Text() << " still has the old vector";
      EXPECT_FALSE(fields->elements[2].is_nil()) << k.Text() << " has no new vector";
      EXPECT_GT(ttl->integer, 0);  // the TTL survives the rewrite
    }
  } while (cursor != "0");
  EXPECT_EQ(seeded, kSeed);
}

// The Redis backend's capacity bound is Redis's own: maxmemory with volatile-lru. Every entry
// carries a TTL, so under memory pressure Redis evicts the least recently used entries (and
// RediSearch drops them from the index) instead of refusing writes.
TEST(RedisCacheTest, CapacityIsMaxmemoryWithLruEviction) {
  Fixture f;
  START_REDIS(f);
  auto c = f.Open();
  ASSERT_TRUE(c);
  RedisClient admin(f.server.Options());
  auto info_field = [&](const char* section, const std::string& name) -> int64_t {
    auto r = admin.Command({"INFO", section});
    if (!r.ok()) return -1;
    const std::string t = r->Text();
    const size_t at = t.find(name + ":");
    return at == std::string::npos ? -1
                                   : std::strtoll(t.c_str() + at + name.size() + 1, nullptr, 10);
  };
  const int64_t base = info_field("memory", "used_memory");
  ASSERT_GT(base, 0);
  ASSERT_TRUE(admin.Command({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}).ok());
  ASSERT_TRUE(admin.Command({"CONFIG", "SET", "maxmemory", std::to_string(base + (4 << 20))}).ok());
  const std::string answer(1024, 'x');  // ~1.5 KB per entry with its vector: 4000 need ~6 MB
  constexpr int kEntries = 4000, kNewest = 100;
  int failed = 0;
  auto insert = [&](int i) {
    failed += !c->Insert(kScope, "shop", "question number " + std::to_string(i),
                         answer + std::to_string(i))
                   .ok();
  };
  for (int i = 0; i < kEntries - kNewest; ++i) insert(i);
  // Redis's LRU clock ticks once a second: the newest entries must be a tick younger than the
  // rest to be the ones LRU keeps.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  for (int i = kEntries - kNewest; i < kEntries; ++i) insert(i);
  EXPECT_EQ(failed, 0);  // evicted, never refused
  const int64_t evicted = info_field("stats", "evicted_keys");
  const size_t kept = c->size();
  std::printf("maxmemory base + 4 MB: %d inserts, %lld evicted, %zu kept, used_memory %lld bytes\n",
              kEntries, static_cast<long long>(evicted), kept,
              static_cast<long long>(info_field("memory", "used_memory")));
  EXPECT_GT(evicted, 0);
  EXPECT_LT(kept, static_cast<size_t>(kEntries));
  EXPECT_GT(kept, 100u);
  // The newest entries are still served.
  for (int i = kEntries - 20; i < kEntries; ++i) {
    auto r = c->Lookup(kScope, "shop", "question number " + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit && r->response == answer + std::to_string(i)) << i;
  }
}

TEST(RedisCacheTest, RefusesAnotherEmbeddingModelUnderThePrefix) {
  Fixture f;
  START_REDIS(f);
  auto c = f.Open();
  ASSERT_TRUE(c);
  auto other = RedisCache::Open(std::make_shared<BagOfWordsEmbedder>("bow-v2", 32), f.Options());
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("use another prefix"), std::string::npos)
      << other.status().ToString();
  // Under its own prefix it works.
  auto o = f.Options();
  o.prefix = "test:cache-v2";
  EXPECT_TRUE(RedisCache::Open(std::make_shared<BagOfWordsEmbedder>("bow-v2", 32), o).ok());

  RedisCacheOptions bad = f.Options();
  bad.prefix = "has space";
  EXPECT_FALSE(RedisCache::Open(f.emb, bad).ok());
  EXPECT_FALSE(ParseRedisAddress("redis://host:1/2").ok());  // no database selection
  EXPECT_FALSE(ParseRedisAddress("host:99999").ok());
  auto ok = ParseRedisAddress("redis://10.0.0.7:6380/");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->host, "10.0.0.7");
  EXPECT_EQ(ok->port, 6380);
}

// A metric's value in the exposition text (-1 when absent).
double MetricValue(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + name.size() + 2, nullptr);
}

TEST(RedisCacheTest, PasswordAndAclUser) {
  Fixture f;
  const std::string password = "default-user-pw-7f3a";
  RedisOptions admin_opt;
  admin_opt.password = password;
  START_REDIS_WITH(f, (std::vector<std::string>{"--requirepass", password}), admin_opt);
  RedisOptions admin_o = f.server.Options();
  admin_o.password = password;
  RedisClient admin(admin_o);
  // A Redis 6 ACL user with its own password.
  const std::string app_password = "app-user-pw-91c2";
  ASSERT_TRUE(
      admin.Command({"ACL", "SETUSER", "cacheapp", "on", ">" + app_password, "~*", "&*", "+@all"})
          .ok());

  // No password, a wrong one, or the right one for another user: refused at open, in one line
  // that names the server and holds no password; never "unreachable".
  std::vector<std::pair<std::string, std::string>> refused = {
      {"", ""}, {"", "wrong-pw"}, {"cacheapp", password}, {"nobody", app_password}};
  for (const auto& [user, pw] : refused) {
    RedisCacheOptions o = f.Options();
    o.redis.user = user;
    o.redis.password = pw;
    auto c = RedisCache::Open(f.emb, o);
    ASSERT_FALSE(c.ok()) << user << " / " << pw;
    const std::string m = c.status().message();
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << m;
    EXPECT_NE(m.find("127.0.0.1:" + std::to_string(f.server.port())), std::string::npos) << m;
    EXPECT_EQ(m.find("unreachable"), std::string::npos) << m;
    for (const std::string& secret : {password, app_password, std::string("wrong-pw")})
      EXPECT_EQ(m.find(secret), std::string::npos) << m;
    std::printf("refused (user '%s'): %s\n", user.c_str(), m.c_str());
  }

  // The default user's password, and the ACL user's.
  for (const auto& [user, pw] : std::vector<std::pair<std::string, std::string>>{
           {"", password}, {"cacheapp", app_password}}) {
    RedisCacheOptions o = f.Options();
    o.redis.user = user;
    o.redis.password = pw;
    auto c = f.Open(o);
    ASSERT_TRUE(c) << user;
    ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged " + user, "By weight.").ok());
    auto r = c->Lookup(kScope, "shop", "how is shipping charged " + user);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit) << user;
    EXPECT_TRUE(c->reachable());
    const std::string metrics = c->metrics().Render();
    EXPECT_EQ(metrics.find(pw), std::string::npos);
    EXPECT_EQ(MetricValue(metrics, "frugal_cache_backend_up"), 1) << metrics;
  }

  // Through the gateway's config: the user in the address, the password in a file.
  const std::string pw_file = (f.server.dir() / "redis-password").string();
  std::ofstream(pw_file) << app_password << "\n";
  CacheConfig config;
  config.redis = "redis://cacheapp@127.0.0.1:" + std::to_string(f.server.port());
  config.redis_prefix = "test:cache";
  config.redis_password_file = pw_file;
  auto opened = OpenCache(f.emb, config);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto hit = (*opened)->Lookup(kScope, "shop", "how is shipping charged cacheapp");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit && hit->exact);
}

// A CA, a server certificate for localhost and 127.0.0.1 and a client certificate, both signed
// by it, and another CA that signed neither: made with the openssl command line in `dir`.
struct TestPki {
  explicit TestPki(std::string d) : dir(std::move(d)) {}
  std::string dir, ca, server_cert, server_key, client_cert, client_key, other_ca;
  std::string Make() {
    ca = dir + "/ca.crt";
    server_cert = dir + "/server.crt";
    server_key = dir + "/server.key";
    client_cert = dir + "/client.crt";
    client_key = dir + "/client.key";
    other_ca = dir + "/other-ca.crt";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string sh =
        "set -e; cd '" + dir + "'; exec >openssl.log 2>&1; " +
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > server.ext; " +
        "openssl req -x509" + ec + " -keyout ca.key -out ca.crt -days 2 -subj /CN=FrugalTestCA; " +
        "openssl req -x509" + ec +
        " -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=SomeOtherCA; " + "openssl req" +
        ec + " -keyout server.key -out server.csr -subj /CN=localhost; " +
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial " +
        "-out server.crt -days 2 -extfile server.ext; " + "openssl req" + ec +
        " -keyout client.key -out client.csr -subj /CN=frugal-gateway; " +
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial " +
        "-out client.crt -days 2";
    const int rc = std::system(("sh -c \"" + sh + "\"").c_str());
    return rc == 0 ? "" : "openssl failed (see " + dir + "/openssl.log)";
  }
  RedisOptions Client(int port) const {
    RedisOptions o;
    o.port = port;
    o.tls = true;
    o.tls_ca_file = ca;
    o.tls_cert_file = client_cert;
    o.tls_key_file = client_key;
    o.connect_timeout = std::chrono::milliseconds(2000);  // handshakes on 2 busy cores
    return o;
  }
};

TEST(RedisCacheTest, Tls) {
  Fixture f;
  TestPki pki(f.server.dir().string());
  const std::string made = pki.Make();
  ASSERT_TRUE(made.empty()) << made;
  const std::string port = std::to_string(f.server.port());
  // TLS only (the plain port off); clients must show a certificate of the CA (Redis's default
  // tls-auth-clients yes).
  START_REDIS_WITH(f,
                   (std::vector<std::string>{"--port", "0", "--tls-port", port, "--tls-cert-file",
                                             pki.server_cert, "--tls-key-file", pki.server_key,
                                             "--tls-ca-cert-file", pki.ca}),
                   pki.Client(0));

  // Verified against the CA, by address (IP SAN) and by name (SNI + DNS SAN).
  for (const std::string& host : {std::string("127.0.0.1"), std::string("localhost")}) {
    RedisCacheOptions o = f.Options();
    o.redis = pki.Client(f.server.port());
    o.redis.host = host;
    o.cache.exact_match = host == "localhost";
    auto c = f.Open(o);
    ASSERT_TRUE(c) << host;
    ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
    auto r = c->Lookup(kScope, "shop", "how is shipping charged");
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit) << host;
    EXPECT_EQ(r->exact, host == "localhost");
  }
  RedisCacheOptions named = f.Options();
  named.redis = pki.Client(f.server.port());
  named.redis.tls_server_name = "localhost";
  EXPECT_TRUE(f.Open(named));

  // Refused: a CA that did not sign the server's certificate, a name the certificate does not
  // carry, no client certificate. Each a clear InvalidArgument at open, not an outage.
  struct Case {
    const char* what;
    std::function<void(RedisOptions&)> change;
    const char* says;
  };
  const Case cases[] = {
      {"another CA", [&](RedisOptions& o) { o.tls_ca_file = pki.other_ca; }, "verification"},
      {"another name", [](RedisOptions& o) { o.tls_server_name = "redis.example.com"; },
       "verification"},
      {"no client certificate",
       [](RedisOptions& o) {
         o.tls_cert_file.clear();
         o.tls_key_file.clear();
       },
       "certificate"},
  };
  for (const Case& k : cases) {
    RedisCacheOptions o = f.Options();
    o.redis = pki.Client(f.server.port());
    k.change(o.redis);
    auto c = RedisCache::Open(f.emb, o);
    ASSERT_FALSE(c.ok()) << k.what;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
    EXPECT_NE(c.status().message().find(k.says), std::string::npos) << c.status().ToString();
    std::printf("%s: %s\n", k.what, c.status().message().c_str());
  }
  // Plain text to the TLS port: no answer a client could take for Redis's.
  RedisOptions plain = f.server.Options();
  RedisClient p(plain);
  EXPECT_FALSE(p.Command({"PING"}).ok());
  EXPECT_FALSE(p.reachable());

  // Through the gateway's config: a rediss:// address and the TLS keys.
  CacheConfig config;
  config.redis = "rediss://localhost:" + port;
  config.redis_prefix = "test:cache";
  config.redis_tls_ca_file = pki.ca;
  config.redis_tls_cert_file = pki.client_cert;
  config.redis_tls_key_file = pki.client_key;
  auto opened = OpenCache(f.emb, config);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto hit = (*opened)->Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit);
}

TEST(RedisCacheTest, AnEntryWhoseStoredScopeDiffersIsAMiss) {
  Fixture f;
  START_REDIS(f);
  RedisClient admin(f.server.Options());
  for (const bool exact : {true, false}) {
    SCOPED_TRACE(exact ? "exact text" : "vectors");
    auto o = f.Options();
    o.cache.exact_match = exact;
    auto c = f.Open(o);
    ASSERT_TRUE(c);
    const std::string q = "how is shipping charged";
    const std::string key = "test:cache:e:" + HashHex(kScope + '\x1f' + q);
    // Another scope's entry under this scope's key and TAG (sh untouched): as if written by
    // another tenant through a hash collision, or by hand.
    ASSERT_TRUE(c->Insert(kScope, "shop", q, "By weight.").ok());
    ASSERT_TRUE(
        admin.Command({"HSET", key, "scope", ScopeKey({"acme", "smollm2", "", "t=0"})}).ok());
    auto r = c->Lookup(kScope, "shop", q);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->hit) << r->response;
    EXPECT_EQ(MetricValue(c->metrics().Render(), "frugal_cache_scope_mismatches_total"), 1);
    // The namespace too.
    ASSERT_TRUE(c->Insert(kScope, "shop", q, "By weight.").ok());
    ASSERT_TRUE(admin.Command({"HSET", key, "ns", "acme"}).ok());
    auto n = c->Lookup(kScope, "shop", q);
    ASSERT_TRUE(n.ok());
    EXPECT_FALSE(n->hit);
    EXPECT_EQ(MetricValue(c->metrics().Render(), "frugal_cache_scope_mismatches_total"), 2);
    // Written again by the cache: its own scope hits again.
    ASSERT_TRUE(c->Insert(kScope, "shop", q, "By weight.").ok());
    auto again = c->Lookup(kScope, "shop", q);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->hit);
    EXPECT_EQ(again->exact, exact);
    EXPECT_EQ(c->Clear(), 1u);
  }
}

TEST(RedisCacheTest, AMalformedEntryIsAMissNeverACrash) {
  Fixture f;
  START_REDIS(f);
  RedisClient admin(f.server.Options());
  const std::string q = "how is shipping charged";
  const std::string key = "test:cache:e:" + HashHex(kScope + '\x1f' + q);
  struct Damage {
    const char* what;
    std::vector<std::vector<std::string>> commands;
  };
  const std::vector<Damage> damages = {
      {"no response", {{"HDEL", key, "response"}}},
      {"no scope", {{"HDEL", key, "scope"}}},
      {"no query", {{"HDEL", key, "query"}}},
      {"a vector of 3 bytes", {{"HSET", key, "v", "abc"}}},
      {"a vector of twice the size", {{"HSET", key, "v", std::string(2 * 64 * 4, '\x01')}}},
      {"a string, not a hash", {{"DEL", key}, {"SET", key, "By weight."}}},
      {"a list, not a hash", {{"DEL", key}, {"RPUSH", key, "a", "b"}}},
  };
  for (const bool exact : {true, false}) {
    auto o = f.Options();
    o.cache.exact_match = exact;
    auto c = f.Open(o);
    ASSERT_TRUE(c);
    double bad = 0;
    for (const Damage& d : damages) {
      SCOPED_TRACE(std::string(d.what) + (exact ? ", exact text" : ", vectors"));
      ASSERT_TRUE(admin.Command({"DEL", key}).ok());
      ASSERT_TRUE(c->Insert(kScope, "shop", q, "By weight.").ok());
      ASSERT_TRUE(c->Lookup(kScope, "shop", q)->hit);  // whole, it answers
      for (const auto& cmd : d.commands) ASSERT_TRUE(admin.Command(cmd).ok());
      auto r = c->Lookup(kScope, "shop", q);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_FALSE(r->hit) << r->response;
      const std::string metrics = c->metrics().Render();
      const double now_bad = MetricValue(metrics, "frugal_cache_bad_entries_total");
      // The exact-text path reads the entry itself; the vector search never sees an entry
      // RediSearch could not index (a wrong-sized vector, not a hash): a plain miss there.
      const bool seen_by_search = std::string_view(d.what).starts_with("no ");
      if (exact || seen_by_search) {
        EXPECT_EQ(now_bad, bad + 1) << metrics;
      }
      bad = now_bad;
      EXPECT_EQ(metrics.find("frugal_cache_backend_errors_total{op=\"lookup\"}"), std::string::npos)
          << "a malformed entry is not an outage";
    }
    ASSERT_TRUE(admin.Command({"DEL", key}).ok());
  }
}

}  // namespace
}  // namespace frugal::cache
