// The semantic cache with a deterministic bag-of-words embedder (no model): scopes, threshold,
// guard, TTL, eviction, invalidation, partitions growing into HNSW, rotation under load,
// snapshots.
#include "cache/semantic_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "testing/bow_embedder.h"

namespace frugal::cache {
namespace {

struct Fixture {
  std::shared_ptr<BagOfWordsEmbedder> emb = std::make_shared<BagOfWordsEmbedder>();
  std::atomic<int64_t> now{1'000'000};
  CacheOptions Options() {
    CacheOptions o;
    o.now_ms = [this] { return now.load(); };
    return o;
  }
  std::unique_ptr<SemanticCache> Open(CacheOptions o) {
    auto c = SemanticCache::Open(emb, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }
};

const std::string kScope = ScopeKey({"shop", "smollm2", "You are a helpful assistant.", "t=0"});

TEST(SemanticCacheTest, HitsWithinItsScopeOnly) {
  Fixture f;
  auto c = f.Open(f.Options());
  ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  auto r = c->Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit);
  EXPECT_EQ(r->response, "By weight.");
  EXPECT_NEAR(r->similarity, 1.0f, 1e-5);
  // Another system prompt, model or namespace: another scope, no hit.
  for (const ScopeSpec& s :
       {ScopeSpec{"shop", "smollm2", "Be terse.", "t=0"},
        ScopeSpec{"shop", "llama", "You are a helpful assistant.", "t=0"},
        ScopeSpec{"other", "smollm2", "You are a helpful assistant.", "t=0"}}) {
    auto o = c->Lookup(ScopeKey(s), s.ns, "how is shipping charged");
    ASSERT_TRUE(o.ok());
    EXPECT_FALSE(o->hit) << s.ns << " " << s.model << " " << s.context;
  }
  // Below the threshold: a different question.
  auto d = c->Lookup(kScope, "shop", "what colours does the jacket come in");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->hit);
  EXPECT_LT(d->similarity, 0.92f);
}

TEST(SemanticCacheTest, InsertAfterAMissReusesTheLookupsVector) {
  Fixture f;
  auto c = f.Open(f.Options());
  auto miss = c->Lookup(kScope, "shop", "when does my parcel arrive");
  ASSERT_TRUE(miss.ok());
  ASSERT_FALSE(miss->hit);
  const int calls = f.emb->calls.load();
  ASSERT_TRUE(c->Insert(kScope, "shop", "when does my parcel arrive", "In 3 days.", &*miss).ok());
  EXPECT_EQ(f.emb->calls.load(), calls) << "the miss's vector is reused, not recomputed";
  auto hit = c->Lookup(kScope, "shop", "when does my parcel arrive");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit);
  EXPECT_EQ(hit->response, "In 3 days.");
  // A lookup made by another embedder (a rotation to a new model in between) is not reused.
  LookupResult foreign = *miss;
  foreign.embedded_by = std::make_shared<BagOfWordsEmbedder>();
  ASSERT_TRUE(c->Insert(kScope, "shop", "is the parcel insured", "Yes.", &foreign).ok());
  EXPECT_EQ(f.emb->calls.load(), calls + 1);  // the insert embedded; the exact repeat did not
}

TEST(SemanticCacheTest, ExactRepeatHitsWithoutEmbedding) {
  Fixture f;
  int64_t now = 1'000'000;
  auto o = f.Options();
  o.now_ms = [&] { return now; };
  o.ttl = std::chrono::seconds(10);
  auto c = f.Open(o);
  ASSERT_TRUE(c->Insert(kScope, "shop", "price of item 1299", "$12.50").ok());
  const int calls = f.emb->calls.load();
  auto r = c->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit && r->exact);
  EXPECT_EQ(r->response, "$12.50");
  EXPECT_EQ(r->similarity, 1.0f);
  EXPECT_EQ(f.emb->calls.load(), calls);
  // Not for another scope, nor for a text that differs at all (those take the vector path).
  auto other = c->Lookup(ScopeKey({"shop", "other-model", "", ""}), "shop", "price of item 1299");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->hit);
  auto near = c->Lookup(kScope, "shop", "price of item 1300");
  ASSERT_TRUE(near.ok());
  EXPECT_FALSE(near->exact);
  EXPECT_FALSE(near->hit) << "the guard still refuses another number";
  EXPECT_EQ(f.emb->calls.load(), calls + 2);
  // Expired entries and invalidated ones are not served.
  now += 11'000;
  auto expired = c->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(expired.ok());
  EXPECT_FALSE(expired->hit);
  ASSERT_TRUE(c->Insert(kScope, "shop", "price of item 1299", "$13.00").ok());
  auto newer = c->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(newer.ok());
  EXPECT_TRUE(newer->exact);
  EXPECT_EQ(newer->response, "$13.00");
  EXPECT_EQ(c->InvalidateQuery(kScope, "price of item 1299"), 1u);
  auto gone = c->Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->hit);
}

TEST(SemanticCacheTest, PerNamespaceThreshold) {
  Fixture f;
  auto o = f.Options();
  o.guard = false;  // thresholds alone ("order" / "parcel" is a substitution the guard refuses)
  o.namespace_threshold["loose"] = 0.5f;
  auto c = f.Open(o);
  const std::string loose = ScopeKey({"loose", "m", "", ""}),
                    strict = ScopeKey({"strict", "m", "", ""});
  ASSERT_TRUE(c->Insert(loose, "loose", "when does my order arrive", "2 days").ok());
  ASSERT_TRUE(c->Insert(strict, "strict", "when does my order arrive", "2 days").ok());
  const auto a = c->Lookup(loose, "loose", "when does my parcel arrive");
  const auto b = c->Lookup(strict, "strict", "when does my parcel arrive");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(a->similarity, 0.5f);
  EXPECT_LT(b->similarity, 0.92f);
  EXPECT_TRUE(a->hit);
  EXPECT_FALSE(b->hit);
}

TEST(SemanticCacheTest, GuardRejectsOtherNumbersAndNegation) {
  Fixture f;
  auto guarded = f.Options();
  guarded.threshold = 0.8f;  // one word of seven differs: bag-of-words cosine ~0.86
  auto c = f.Open(guarded);
  ASSERT_TRUE(c->Insert(kScope, "shop", "what is the price of item 1299 today", "$24.99").ok());
  ASSERT_TRUE(c->Insert(kScope, "shop", "can I return opened items at the store", "Yes").ok());
  // The bag-of-words vectors of these are close (one word differs), so only the guard stops them.
  for (const char* q :
       {"what is the price of item 1300 today", "can I not return opened items at the store"}) {
    auto r = c->Lookup(kScope, "shop", q);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->hit) << q;
    EXPECT_TRUE(r->rejected_by_guard) << q << " similarity " << r->similarity;
  }
  EXPECT_NE(c->metrics().Render().find("frugal_cache_rejected_by_guard_total 2"), std::string::npos)
      << c->metrics().Render();
  auto o = f.Options();
  o.guard = false;
  o.threshold = 0.8f;
  auto unguarded = f.Open(o);
  ASSERT_TRUE(
      unguarded->Insert(kScope, "shop", "what is the price of item 1299 today", "$24.99").ok());
  auto r = unguarded->Lookup(kScope, "shop", "what is the price of item 1300 today");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit) << "without the guard the near-duplicate is a (false) hit; similarity "
                      << r->similarity;
}

// A verifier that takes its time on one query: the cache must not hold a lock meanwhile.
class SlowVerifier : public HitVerifier {
 public:
  Verdict Verify(std::string_view query, std::string_view, float, Embedder&) const override {
    if (query.find("slow") != std::string_view::npos) {
      verifying.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
    Verdict v;
    v.accept = true;
    return v;
  }
  const char* name() const override { return "slow"; }
  mutable std::atomic<bool> verifying{false};
};

TEST(SemanticCacheTest, VerifierRunsOutsideTheLocks) {
  Fixture f;
  auto o = f.Options();
  auto slow_verifier = std::make_shared<SlowVerifier>();
  o.verifier = slow_verifier;
  auto c = f.Open(o);
  const std::string other = ScopeKey({"other", "m", "", ""});
  ASSERT_TRUE(c->Insert(kScope, "shop", "a slow question about returns", "A").ok());
  ASSERT_TRUE(c->Insert(other, "other", "store hours on sunday", "10-16").ok());
  std::thread slow(
      [&] { EXPECT_TRUE(c->Lookup(kScope, "shop", "A slow question about returns!")->hit); });
  // Once the slow lookup is inside its verification (a second long), a lookup and an insert
  // elsewhere must not wait for it. Waiting for the flag, not a fixed sleep: under ASan the slow
  // lookup's own embedding can take longer than any sleep short enough to keep the test quick.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!slow_verifier->verifying.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(slow_verifier->verifying.load());
  const auto t0 = std::chrono::steady_clock::now();
  auto quick = c->Lookup(other, "other", "Store hours on Sunday?");
  ASSERT_TRUE(c->Insert(other, "other", "is parking free", "Yes").ok());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  slow.join();
  ASSERT_TRUE(quick.ok());
  EXPECT_TRUE(quick->hit);
  EXPECT_LT(ms, 500.0) << "a lookup and an insert waited for another lookup's verification";
}

TEST(SemanticCacheTest, QueryLongerThanTheVerifierReadsIsNeverEmbeddedNorCached) {
  Fixture f;
  auto c = f.Open(f.Options());
  const std::string huge(1 << 20, 'x');
  ASSERT_TRUE(c->Insert(kScope, "shop", "store hours on sunday", "10-16").ok());
  const int calls = f.emb->calls.load();
  std::atomic<bool> done{false};
  // A stream of 1 MB lookups and inserts next to short lookups: the short ones keep their pace.
  std::thread big([&] {
    while (!done.load()) {
      auto r = c->Lookup(kScope, "shop", huge);
      EXPECT_TRUE(r.ok() && !r->hit && r->too_long);
      EXPECT_TRUE(c->Insert(kScope, "shop", huge, "no").ok());
    }
  });
  double worst = 0;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c->Lookup(kScope, "shop", "Store hours on Sunday?");
    worst = std::max(
        worst,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit);
  }
  done = true;
  big.join();
  EXPECT_EQ(c->size(), 1u) << "the 1 MB query is not cached";
  EXPECT_EQ(f.emb->calls.load(), calls + 200) << "only the short lookups were embedded";
  EXPECT_LT(worst, 50.0) << "a short lookup waited behind a 1 MB one";
  EXPECT_NE(c->metrics().Render().find("frugal_cache_too_long_total"), std::string::npos);
}

TEST(SemanticCacheTest, CalibratedThresholdAndVerifierFollowTheEmbedder) {
  Fixture f;
  auto c = f.Open(f.Options());
  // The bag-of-words embedder has no calibration: 0.92 and the strict rule.
  CacheOptions o;
  EXPECT_FLOAT_EQ(ThresholdFor(o, "any", *f.emb), 0.92f);
  o.threshold = 0.8f;
  o.namespace_threshold["t"] = 0.95f;
  EXPECT_FLOAT_EQ(ThresholdFor(o, "any", *f.emb), 0.8f);
  EXPECT_FLOAT_EQ(ThresholdFor(o, "t", *f.emb), 0.95f);
  EXPECT_STREQ(DefaultVerifier(*f.emb)->name(), "strict");
  ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  auto r = c->Lookup(kScope, "shop",
                     "How is shipping charged?");  // not the same text: through the verifier
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit) << r->similarity;
}

TEST(SemanticCacheTest, EntriesExpireAfterTheirTtl) {
  Fixture f;
  auto o = f.Options();
  o.ttl = std::chrono::seconds(60);
  auto c = f.Open(o);
  ASSERT_TRUE(c->Insert(kScope, "shop", "store hours on sunday", "10-16").ok());
  f.now += 59'000;
  EXPECT_TRUE(c->Lookup(kScope, "shop", "store hours on sunday")->hit);
  f.now += 2'000;
  EXPECT_FALSE(c->Lookup(kScope, "shop", "store hours on sunday")->hit);
}

TEST(SemanticCacheTest, CapacityEvictsExpiredFirstThenLeastRecentlyUsed) {
  Fixture f;
  auto o = f.Options();
  o.capacity = 3;
  o.ttl = std::chrono::seconds(100);
  auto c = f.Open(o);
  ASSERT_TRUE(c->Insert(kScope, "shop", "alpha question one", "1").ok());  // t = 0
  f.now += 50'000;
  ASSERT_TRUE(c->Insert(kScope, "shop", "bravo question two", "2").ok());
  ASSERT_TRUE(c->Insert(kScope, "shop", "charlie question three", "3").ok());
  EXPECT_TRUE(
      c->Lookup(kScope, "shop", "alpha question one")->hit);  // recency: alpha, charlie, bravo
  ASSERT_TRUE(c->Insert(kScope, "shop", "delta question four", "4")
                  .ok());  // full: the LRU one (bravo) goes
  EXPECT_EQ(c->size(), 3u);
  EXPECT_FALSE(c->Lookup(kScope, "shop", "bravo question two")->hit);
  // Recency now: delta, alpha, charlie. At t = 110 alpha (from t = 0) has expired: it goes
  // before charlie, the least recently used.
  f.now += 60'000;
  ASSERT_TRUE(c->Insert(kScope, "shop", "echo question five", "5").ok());
  EXPECT_EQ(c->size(), 3u);
  EXPECT_TRUE(c->Lookup(kScope, "shop", "charlie question three")->hit);
  EXPECT_TRUE(c->Lookup(kScope, "shop", "delta question four")->hit);
  const std::string m = c->metrics().Render();
  EXPECT_NE(m.find("frugal_cache_evictions_total{reason=\"capacity\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("frugal_cache_evictions_total{reason=\"ttl\"} 1"), std::string::npos) << m;
}

TEST(SemanticCacheTest, Invalidation) {
  Fixture f;
  auto c = f.Open(f.Options());
  const std::string other = ScopeKey({"b2b", "m", "", ""});
  ASSERT_TRUE(c->Insert(kScope, "shop", "refund policy for shoes", "30 days").ok());
  ASSERT_TRUE(c->Insert(kScope, "shop", "gift card balance check", "online").ok());
  ASSERT_TRUE(c->Insert(other, "b2b", "refund policy for shoes", "60 days").ok());
  EXPECT_EQ(c->InvalidateQuery(kScope, "refund policy for shoes"), 1u);
  EXPECT_FALSE(c->Lookup(kScope, "shop", "refund policy for shoes")->hit);
  EXPECT_TRUE(c->Lookup(other, "b2b", "refund policy for shoes")->hit);
  EXPECT_EQ(c->InvalidateNamespace("b2b"), 1u);
  EXPECT_FALSE(c->Lookup(other, "b2b", "refund policy for shoes")->hit);
  EXPECT_EQ(c->Clear(), 1u);
  EXPECT_EQ(c->size(), 0u);
  // The same query again replaces, never duplicates.
  ASSERT_TRUE(c->Insert(kScope, "shop", "q", "old").ok());
  ASSERT_TRUE(c->Insert(kScope, "shop", "q", "new").ok());
  EXPECT_EQ(c->size(), 1u);
  EXPECT_EQ(c->Lookup(kScope, "shop", "q")->response, "new");
}

TEST(SemanticCacheTest, LargeScopeMovesToHnswAndStillFindsEveryEntry) {
  Fixture f;
  auto o = f.Options();
  o.exact_max = 64;
  o.exact_match = false;  // through the index, not the exact-text shortcut
  auto c = f.Open(o);
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(c->Insert(kScope, "shop",
                          "question number w" + std::to_string(i) + " about topic t" +
                              std::to_string(i % 17),
                          std::to_string(i))
                    .ok());
  }
  int hits = 0;
  for (int i = 0; i < 300; ++i) {
    auto r = c->Lookup(
        kScope, "shop",
        "question number w" + std::to_string(i) + " about topic t" + std::to_string(i % 17));
    ASSERT_TRUE(r.ok());
    hits += r->hit && r->response == std::to_string(i);
  }
  EXPECT_GE(hits, 297) << "HNSW recall of exact repeats";

  // Emptied (here by Clear), the partition starts over and grows into HNSW again.
  EXPECT_EQ(c->Clear(), 300u);
  EXPECT_EQ(c->indexed(), 0u);
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(
        c->Insert(kScope, "shop", "refill question r" + std::to_string(i), "r" + std::to_string(i))
            .ok());
  EXPECT_EQ(c->indexed(), 100u);
  int refound = 0;
  for (int i = 0; i < 100; ++i) {
    auto r = c->Lookup(kScope, "shop", "refill question r" + std::to_string(i));
    ASSERT_TRUE(r.ok());
    refound += r->hit && r->response == "r" + std::to_string(i);
  }
  EXPECT_GE(refound, 99);
  auto old = c->Lookup(kScope, "shop", "question number w5 about topic t5");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->hit) << "a cleared entry came back";
}

TEST(VectorIndexTest, HnswRecallAgainstExactSearch) {
  std::mt19937 rng(3);
  std::normal_distribution<float> n;
  const int dim = 32, count = 3000;
  auto exact = NewExactIndex(dim);
  auto hnsw = NewHnswIndex(dim, HnswParams{}, 100);  // grows by resizing
  std::vector<float> v(dim);
  for (int i = 0; i < count; ++i) {
    for (float& x : v) x = n(rng);
    Normalize(v);
    ASSERT_TRUE(exact->Add(static_cast<uint64_t>(i), v).ok());
    ASSERT_TRUE(hnsw->Add(static_cast<uint64_t>(i), v).ok());
  }
  for (uint64_t i = 0; i < 100; ++i) {
    exact->Remove(i);
    hnsw->Remove(i);
  }
  EXPECT_EQ(exact->size(), 2900u);
  EXPECT_EQ(hnsw->size(), 2900u);
  int agree = 0;
  for (int q = 0; q < 200; ++q) {
    for (float& x : v) x = n(rng);
    Normalize(v);
    const auto a = exact->Search(v, 1), b = hnsw->Search(v, 1);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_GE(b[0].label, 100u) << "a removed vector was returned";
    agree += a[0].label == b[0].label;
    // The same neighbour: HNSW reports the same cosine (its distance is 1 - dot).
    if (a[0].label == b[0].label) {
      EXPECT_NEAR(b[0].similarity, a[0].similarity, 1e-5);
    }
  }
  EXPECT_GE(agree, 196) << "recall@1 below 0.98";

  // The query-time beam can be changed on a live index: a beam of 1 loses neighbours the
  // default finds, and going back restores the recall exactly (the graph is unchanged).
  auto recall = [&](std::mt19937 r) {
    int same = 0;
    for (int q = 0; q < 200; ++q) {
      for (float& x : v) x = n(r);
      Normalize(v);
      same += exact->Search(v, 1)[0].label == hnsw->Search(v, 1)[0].label;
    }
    return same;
  };
  const int at_default = recall(std::mt19937(11));
  hnsw->SetEfSearch(1);
  EXPECT_LT(recall(std::mt19937(11)), at_default);
  hnsw->SetEfSearch(HnswParams{}.ef_search);
  EXPECT_EQ(recall(std::mt19937(11)), at_default);
}

TEST(SemanticCacheTest, RotationUnderLoadLosesNothing) {
  Fixture f;
  auto o = f.Options();
  o.exact_max = 200;
  auto c = f.Open(o);
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(c->Insert(kScope, "shop", "seed entry s" + std::to_string(i), "x").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, inserted{0};
  std::vector<std::vector<double>> lat(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      while (!stop) {
        const auto t0 = std::chrono::steady_clock::now();
        // Capitalised: the same vector, but not the same text, so the lookup searches the index.
        auto r = c->Lookup(kScope, "shop", "Seed entry s" + std::to_string(rng() % 1000));
        lat[static_cast<size_t>(t)].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        if (!r.ok() || !r->hit) ++failures;
      }
    });
  }
  // Inserts go on through both rotations at a bounded pace: as fast as a core allows they ran to
  // 30,000 entries on a fast machine, where HNSW's approximate search misses some of the seeds
  // among so many near-equal neighbours (that is recall, which vector_index tests measure, not
  // what a rotation loses).
  threads.emplace_back([&] {
    for (int i = 0; !stop && i < 6000; ++i) {
      if (!c->Insert(kScope, "shop", "new entry n" + std::to_string(i), std::to_string(i)).ok())
        ++failures;
      ++inserted;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  HnswParams p;
  p.m = 32;
  p.ef_search = 128;
  ASSERT_TRUE(c->Rotate({nullptr, p}).ok());  // new HNSW parameters
  ASSERT_TRUE(c->Rotate({std::make_shared<BagOfWordsEmbedder>("bow-v2"), std::nullopt})
                  .ok());  // new model: re-embed
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(c->rotations(), 2);
  ASSERT_GT(inserted.load(), 0);
  // Every entry is in the new index (HNSW search itself is approximate, so this is counted),
  // and each one answers its own query.
  EXPECT_EQ(c->indexed(), c->size());
  for (int i = 0; i < inserted.load(); ++i) {
    auto r = c->Lookup(kScope, "shop", "new entry n" + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->hit && r->response == std::to_string(i)) << "entry " << i << " lost in rotation";
  }
  std::vector<double> all = lat[0];
  all.insert(all.end(), lat[1].begin(), lat[1].end());
  std::sort(all.begin(), all.end());
  std::printf("lookups during rotation: %zu, p50 %.3f ms, p99 %.3f ms; inserts %d\n", all.size(),
              all[all.size() / 2], all[all.size() * 99 / 100], inserted.load());
}

TEST(SemanticCacheTest, SnapshotSurvivesRestartAndDropsExpired) {
  Fixture f;
  const auto path = (std::filesystem::temp_directory_path() /
                     ("frugal_cache_" + std::to_string(::getpid()) + ".snap"))
                        .string();
  std::filesystem::remove(path);
  auto o = f.Options();
  o.snapshot_path = path;
  o.snapshot_interval = std::chrono::seconds(0);
  o.ttl = std::chrono::seconds(100);
  {
    auto c = f.Open(o);
    ASSERT_TRUE(c->Insert(kScope, "shop", "old entry", "a").ok());
    f.now += 60'000;
    ASSERT_TRUE(c->Insert(kScope, "shop", "newer entry", "b").ok());
  }  // snapshot on shutdown
  ASSERT_TRUE(std::filesystem::exists(path));
  f.now += 50'000;  // "old entry" expired, "newer entry" not
  const int calls_before = f.emb->calls.load();
  {
    auto c = f.Open(o);
    EXPECT_EQ(f.emb->calls.load(), calls_before)
        << "the same model's vectors are reloaded, not recomputed";
    EXPECT_EQ(c->size(), 1u);
    EXPECT_EQ(c->indexed(), 1u);  // the reloaded entry is searchable, not only stored
    EXPECT_EQ(c->Lookup(kScope, "shop", "newer entry")->response, "b");
    EXPECT_FALSE(c->Lookup(kScope, "shop", "old entry")->hit);
  }
  // A corrupt snapshot is refused, not crashed on.
  {
    std::fstream s(path, std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(40);
    s.write("\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  }
  auto bad = SemanticCache::Open(f.emb, o);
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss) << bad.status().ToString();
  std::filesystem::remove(path);
}

TEST(SemanticCacheTest, AnEntryOfAnotherScopeOrNamespaceNeverAnswers) {
  Fixture f;
  auto c = f.Open(f.Options());
  // The exact-text table joins scope and query with a separator either may hold: this entry's
  // scope + query is, byte for byte, kScope + the lookup's query below.
  const std::string joined = kScope + '\x1e' + "how is";
  ASSERT_TRUE(c->Insert(joined, "shop", "shipping charged", "Secret of another scope.").ok());
  auto r = c->Lookup(kScope, "shop", std::string("how is\x1eshipping charged"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->hit) << r->response;
  EXPECT_NE(c->metrics().Render().find("frugal_cache_scope_mismatches_total 1"), std::string::npos)
      << c->metrics().Render();

  // A lookup that names another namespace than the entry's (same scope string): neither the
  // exact text nor the vectors answer it, and the lookup is counted once.
  ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
  for (const char* q : {"how is shipping charged", "How is shipping charged?"}) {
    auto other = c->Lookup(kScope, "acme", q);
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->hit) << q;
  }
  EXPECT_NE(c->metrics().Render().find("frugal_cache_scope_mismatches_total 3"), std::string::npos)
      << c->metrics().Render();
  // Its own scope and namespace still hit, both ways, and count nothing more.
  EXPECT_TRUE(c->Lookup(kScope, "shop", "how is shipping charged")->hit);
  EXPECT_TRUE(c->Lookup(kScope, "shop", "How is shipping charged?")->hit);
  EXPECT_NE(c->metrics().Render().find("frugal_cache_scope_mismatches_total 3"), std::string::npos)
      << c->metrics().Render();
  EXPECT_NE(c->metrics().Render().find("frugal_cache_bad_entries_total 0"), std::string::npos);
}

TEST(SemanticCacheTest, SnapshotIsOwnerOnlyWhateverTheUmask) {
  Fixture f;
  const auto dir =
      std::filesystem::temp_directory_path() / ("frugal_snap_mode_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cache.snap").string();
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  auto o = f.Options();
  o.snapshot_path = path;
  o.snapshot_interval = std::chrono::seconds(0);
  const mode_t old_umask = ::umask(0);  // the most permissive: a plain create would be 0666
  {
    // A temp file left world-readable by an earlier run is no way around it either.
    std::ofstream(path + ".tmp") << "stale";
    std::filesystem::permissions(path + ".tmp", std::filesystem::perms::all);
    auto c = f.Open(o);
    ASSERT_TRUE(c->Insert(kScope, "shop", "how is shipping charged", "By weight.").ok());
    ASSERT_TRUE(c->Snapshot(path).ok());
    EXPECT_EQ(mode(path), 0600);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  ::umask(old_umask);
  EXPECT_EQ(mode(path), 0600);  // the save at shutdown too

  // A snapshot written before (world-readable) still loads, and is owner-only once saved again.
  ::chmod(path.c_str(), 0644);
  {
    auto c = f.Open(o);
    EXPECT_EQ(c->size(), 1u);
    EXPECT_EQ(c->Lookup(kScope, "shop", "how is shipping charged")->response, "By weight.");
  }
  EXPECT_EQ(mode(path), 0600);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace frugal::cache
