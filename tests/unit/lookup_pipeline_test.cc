// The one lookup pipeline (cache/lookup.h) against a fake in-memory store: no Redis, no model
// (the bag-of-words embedder). What both backends now share: exact text, threshold, verifier,
// unreadable queries, the length cap, store errors, and each lookup counted once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cache/lookup.h"
#include "testing/bow_embedder.h"

namespace frugal::cache {
namespace {

// A store in a vector: (scope, query) is the exact key; a search ranks the scope's rows by
// cosine. Its rows can be edited to hold what a shared store might (another scope, garbage).
class FakeStore : public CacheStore {
 public:
  struct Row {
    StoredEntry entry;
    std::vector<float> vector;
  };

  FakeStore(std::shared_ptr<Embedder> embedder, std::shared_ptr<const HitVerifier> verifier)
      : embedder_(std::move(embedder)), verifier_(std::move(verifier)) {}

  std::unique_ptr<ModelLease> Lease(bool for_insert) override {
    auto lease = std::make_unique<ModelLease>();
    lease->embedder = embedder_;
    if (!for_insert) lease->verifier = verifier_;
    if (for_insert) lease->next_embedder = next_embedder;
    return lease;
  }
  StatusOr<std::optional<StoredEntry>> GetExact(const std::string& scope,
                                                std::string_view query) override {
    ++gets;
    if (!exact_error.ok()) return exact_error;
    for (const Row& r : rows) {
      if (r.entry.scope == scope && r.entry.query == query) return std::optional(r.entry);
    }
    return std::optional<StoredEntry>();
  }
  StatusOr<std::vector<StoredEntry>> Search(const ModelLease& lease, const std::string& scope,
                                            std::span<const float> vector, size_t k,
                                            float /*threshold*/) override {
    ++searches;
    EXPECT_EQ(lease.embedder, embedder_);
    if (!search_error.ok()) return search_error;
    std::vector<StoredEntry> found;
    for (const Row& r : rows) {
      if (r.entry.scope != scope) continue;  // as a partition or a TAG filter would
      StoredEntry e = r.entry;
      float dot = 0;
      for (size_t i = 0; i < vector.size(); ++i) dot += vector[i] * r.vector[i];
      if (!e.malformed) e.similarity = dot;
      found.push_back(std::move(e));
    }
    std::stable_sort(found.begin(), found.end(), [](const StoredEntry& a, const StoredEntry& b) {
      return a.similarity.value_or(2.0f) > b.similarity.value_or(2.0f);
    });
    if (found.size() > k) found.resize(k);
    return found;
  }
  void Touch(const StoredEntry& /*entry*/) override { ++touches; }
  Status Put(const ModelLease& /*lease*/, const std::string& scope, std::string_view ns,
             std::string_view query, std::string_view response, std::vector<float> vector,
             const std::vector<float>* next_vector) override {
    std::erase_if(rows,
                  [&](const Row& r) { return r.entry.scope == scope && r.entry.query == query; });
    Row r;
    r.entry.id = rows.size() + 1;
    r.entry.scope = scope;
    r.entry.ns = std::string(ns);
    r.entry.query = std::string(query);
    r.entry.response = std::string(response);
    r.vector = std::move(vector);
    rows.push_back(std::move(r));
    next_vectors += next_vector != nullptr;
    return Status::Ok();
  }

  std::vector<Row> rows;
  Status exact_error = Status::Ok(), search_error = Status::Ok();
  std::shared_ptr<Embedder> next_embedder;
  int gets = 0, searches = 0, touches = 0, next_vectors = 0;

 private:
  std::shared_ptr<Embedder> embedder_;
  std::shared_ptr<const HitVerifier> verifier_;
};

// Reads no text it is asked about when `unreadable`; fails when `broken`.
class TestEmbedder : public BagOfWordsEmbedder {
 public:
  StatusOr<std::vector<float>> Embed(std::string_view text) override {
    if (broken) return Internal("the embedder is broken");
    return BagOfWordsEmbedder::Embed(text);
  }
  double UnknownShare(std::string_view /*text*/) const override { return unreadable ? 1.0 : 0.0; }
  bool broken = false, unreadable = false;
};

class AcceptAll : public HitVerifier {
 public:
  Verdict Verify(std::string_view, std::string_view, float, Embedder&) const override {
    Verdict v;
    v.accept = true;
    return v;
  }
  const char* name() const override { return "accept-all"; }
};

const std::string kScope = ScopeKey({"shop", "m", "", "t=0"});

struct Fixture {
  std::shared_ptr<TestEmbedder> emb = std::make_shared<TestEmbedder>();
  FakeStore store{emb, DefaultVerifier(*emb)};  // the strict rule: no content difference
  CacheOptions opt;
  MetricsRegistry registry;
  CacheMetrics cm;
  LookupPipeline pipeline{store, opt, cm};

  Fixture() {
    opt.threshold = 0.8f;  // one word of seven differs: bag-of-words cosine ~0.86
    cm.Register(
        registry, [] { return 0.0; }, "search");
  }
  double Metric(const std::string& name) const {
    const std::string text = registry.Render();
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + name.size() + 2, nullptr);
  }
  void Insert(const std::string& q, const std::string& a, std::string_view ns = "shop") {
    ASSERT_TRUE(pipeline.Insert(kScope, ns, q, a, nullptr).ok());
  }
};

TEST(LookupPipelineTest, ExactTextHitsWithoutEmbedding) {
  Fixture f;
  f.Insert("price of item 1299", "$12.50");
  const int calls = f.emb->calls.load();
  auto r = f.pipeline.Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->hit && r->exact);
  EXPECT_EQ(r->response, "$12.50");
  EXPECT_EQ(r->similarity, 1.0f);
  EXPECT_EQ(f.emb->calls.load(), calls);
  EXPECT_EQ(f.store.searches, 0);
  EXPECT_EQ(f.store.touches, 1);
  EXPECT_EQ(f.Metric("frugal_cache_exact_hits_total"), 1);
  // Off: the same text goes through the vectors (and still hits).
  f.opt.exact_match = false;
  auto v = f.pipeline.Lookup(kScope, "shop", "price of item 1299");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->hit);
  EXPECT_FALSE(v->exact);
  EXPECT_EQ(f.store.searches, 1);
}

TEST(LookupPipelineTest, SemanticHitAboveTheThresholdMissBelow) {
  Fixture f;
  f.Insert("how is shipping charged", "By weight.");
  auto hit = f.pipeline.Lookup(kScope, "shop", "How is shipping charged?");
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->hit);
  EXPECT_FALSE(hit->exact);
  EXPECT_EQ(hit->response, "By weight.");
  EXPECT_EQ(hit->cached_query, "how is shipping charged");
  EXPECT_NEAR(hit->similarity, 1.0f, 1e-5);
  EXPECT_FALSE(hit->embedding.empty());
  EXPECT_EQ(hit->embedded_by, f.emb);
  auto miss = f.pipeline.Lookup(kScope, "shop", "what colours does the jacket come in");
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->hit);
  EXPECT_FALSE(miss->rejected_by_guard);
  EXPECT_TRUE(miss->cached_query.empty());
  EXPECT_LT(miss->similarity, 0.8f) << "the nearest entry's cosine, for the record";
  // A namespace's own threshold: the same pair hits where it is loose enough.
  f.opt.guard = false;
  f.opt.namespace_threshold["shop"] = miss->similarity - 0.01f;
  EXPECT_TRUE(f.pipeline.Lookup(kScope, "shop", "what colours does the jacket come in")->hit);
  EXPECT_EQ(f.Metric("frugal_cache_hits_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_misses_total"), 1);
}

TEST(LookupPipelineTest, TheVerifierRefusesAnotherNumber) {
  Fixture f;
  f.Insert("what is the price of item 1299 today", "$24.99");
  auto r = f.pipeline.Lookup(kScope, "shop", "what is the price of item 1300 today");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->hit);
  EXPECT_TRUE(r->rejected_by_guard);
  EXPECT_STREQ(r->refusal, "numbers");
  EXPECT_EQ(r->cached_query, "what is the price of item 1299 today");
  EXPECT_GT(r->similarity, 0.8f);
  EXPECT_EQ(f.store.touches, 0);
  EXPECT_EQ(f.Metric("frugal_cache_rejected_by_guard_total"), 1);
  EXPECT_EQ(f.Metric("frugal_cache_verifier_refusals_total{reason=\"numbers\"}"), 1);
  // Without the guard the cosine alone decides: a (false) hit.
  f.opt.guard = false;
  EXPECT_TRUE(f.pipeline.Lookup(kScope, "shop", "what is the price of item 1300 today")->hit);
}

TEST(LookupPipelineTest, ATooLongQueryIsNeitherLookedUpNorEmbeddedNorCached) {
  Fixture f;
  f.opt.max_semantic_bytes = 16;
  const std::string q = "a question longer than sixteen bytes";
  ASSERT_TRUE(f.pipeline.Insert(kScope, "shop", q, "no", nullptr).ok());
  EXPECT_TRUE(f.store.rows.empty());
  auto r = f.pipeline.Lookup(kScope, "shop", q);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->hit);
  EXPECT_TRUE(r->too_long);
  EXPECT_EQ(f.emb->calls.load(), 0);
  EXPECT_EQ(f.store.gets + f.store.searches, 0);
  EXPECT_EQ(f.Metric("frugal_cache_too_long_total"), 1);
  EXPECT_EQ(f.Metric("frugal_cache_misses_total"), 1);
}

TEST(LookupPipelineTest, AnUnreadableQueryHitsOnlyItsOwnText) {
  Fixture f;
  FakeStore store(f.emb, std::make_shared<AcceptAll>());
  LookupPipeline p(store, f.opt, f.cm);
  f.emb->unreadable = true;
  ASSERT_TRUE(p.Insert(kScope, "shop", "status of my order", "Shipped.", nullptr).ok());
  // The same words in another order: cosine 1 and a verifier that accepts anything, but the
  // embedder could not read either text.
  auto other = p.Lookup(kScope, "shop", "my order status");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->hit);
  EXPECT_TRUE(other->rejected_by_guard);
  EXPECT_STREQ(other->refusal, "opaque");
  auto same = p.Lookup(kScope, "shop", "Status of my order?");  // the same canonical text
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->hit);
  EXPECT_FALSE(same->exact);
  f.emb->unreadable = false;
  EXPECT_TRUE(p.Lookup(kScope, "shop", "my order status")->hit);
}

TEST(LookupPipelineTest, AFailingStoreIsAMissAFailingEmbedderAnError) {
  Fixture f;
  f.Insert("how is shipping charged", "By weight.");
  // The search fails: a miss, not an error (the store has logged and counted it); the query's
  // vector is kept for the insert that follows.
  f.store.search_error = IoError("search down");
  auto searched = f.pipeline.Lookup(kScope, "shop", "How is shipping charged?");
  ASSERT_TRUE(searched.ok()) << searched.status().ToString();
  EXPECT_FALSE(searched->hit);
  EXPECT_FALSE(searched->embedding.empty());
  // The exact get fails: a miss at once, nothing embedded or searched.
  f.store.exact_error = IoError("get down");
  const int calls = f.emb->calls.load(), searches = f.store.searches;
  auto got = f.pipeline.Lookup(kScope, "shop", "how is shipping charged");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->hit);
  EXPECT_EQ(f.emb->calls.load(), calls);
  EXPECT_EQ(f.store.searches, searches);
  // The embedder fails: the lookup's error, still counted as a miss.
  f.store.exact_error = Status::Ok();
  f.emb->broken = true;
  auto embedded = f.pipeline.Lookup(kScope, "shop", "How is shipping charged?");
  EXPECT_FALSE(embedded.ok());
  EXPECT_FALSE(f.pipeline.Insert(kScope, "shop", "is parking free", "Yes", nullptr).ok());
  EXPECT_EQ(f.Metric("frugal_cache_lookups_total"), 3);
  EXPECT_EQ(f.Metric("frugal_cache_misses_total"), 3);
  EXPECT_EQ(f.Metric("frugal_cache_hits_total"), 0);
  EXPECT_EQ(f.Metric("frugal_cache_insertions_total"), 1);
}

TEST(LookupPipelineTest, EntriesOfAnotherScopeOrMalformedNeverAnswerAndCountOncePerLookup) {
  Fixture f;
  f.opt.guard = false;
  f.Insert("how is shipping charged", "By weight.");
  f.Insert("How is shipping charged!", "By size.");
  f.Insert("how is shipping charged?", "By volume.");
  // As a shared store might hold them: two of another namespace under this scope, one garbled.
  f.store.rows[0].entry.ns = "acme";
  f.store.rows[1].entry.ns = "acme";
  f.store.rows[2].entry.malformed = true;
  for (const bool exact : {true, false}) {
    f.opt.exact_match = exact;
    auto r = f.pipeline.Lookup(kScope, "shop", "how is shipping charged");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->hit) << r->response;
  }
  EXPECT_EQ(f.Metric("frugal_cache_lookups_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_misses_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_scope_mismatches_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_bad_entries_total"), 2);
  // Gone entries (removed since the index listed them) are skipped without a count.
  f.store.rows[2].entry.malformed = false;
  f.store.rows[2].entry.gone = true;
  EXPECT_FALSE(f.pipeline.Lookup(kScope, "shop", "how is shipping charged")->hit);
  EXPECT_EQ(f.Metric("frugal_cache_bad_entries_total"), 2);
}

TEST(LookupPipelineTest, MetricsCountEachLookupOnce) {
  Fixture f;
  f.Insert("how is shipping charged", "By weight.");
  f.Insert("what is the price of item 1299 today", "$24.99");
  const char* queries[] = {"how is shipping charged",                // exact hit
                           "How is shipping charged?",               // semantic hit
                           "what is the price of item 1300 today",   // refused
                           "what colours does the jacket come in"};  // miss
  for (const char* q : queries) ASSERT_TRUE(f.pipeline.Lookup(kScope, "shop", q).ok());
  EXPECT_EQ(f.Metric("frugal_cache_lookups_total"), 4);
  EXPECT_EQ(f.Metric("frugal_cache_hits_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_exact_hits_total"), 1);
  EXPECT_EQ(f.Metric("frugal_cache_misses_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_rejected_by_guard_total"), 1);
  EXPECT_EQ(f.Metric("frugal_cache_hit_ratio"), 0.5);
  EXPECT_EQ(f.Metric("frugal_cache_insertions_total"), 2);
  EXPECT_EQ(f.Metric("frugal_cache_scope_mismatches_total"), 0);
  EXPECT_EQ(f.Metric("frugal_cache_bad_entries_total"), 0);
}

TEST(LookupPipelineTest, InsertReusesTheMissesVectorAndEmbedsForTheNextModel) {
  Fixture f;
  auto miss = f.pipeline.Lookup(kScope, "shop", "when does my parcel arrive");
  ASSERT_TRUE(miss.ok());
  const int calls = f.emb->calls.load();
  ASSERT_TRUE(
      f.pipeline.Insert(kScope, "shop", "when does my parcel arrive", "In 3 days.", &*miss).ok());
  EXPECT_EQ(f.emb->calls.load(), calls) << "the miss's vector is reused";
  ASSERT_EQ(f.store.rows.size(), 1u);
  EXPECT_EQ(f.store.rows[0].vector, miss->embedding);
  // Made by another embedder (a rotation in between): embedded again.
  LookupResult other = *miss;
  other.embedded_by = std::make_shared<BagOfWordsEmbedder>();
  ASSERT_TRUE(f.pipeline.Insert(kScope, "shop", "is the parcel insured", "Yes.", &other).ok());
  EXPECT_EQ(f.emb->calls.load(), calls + 1);
  // During a rotation to another model, the next model's vector too.
  auto next = std::make_shared<BagOfWordsEmbedder>("next", 32);
  f.store.next_embedder = next;
  ASSERT_TRUE(f.pipeline.Insert(kScope, "shop", "is parking free", "Yes.", nullptr).ok());
  EXPECT_EQ(next->calls.load(), 1);
  EXPECT_EQ(f.store.next_vectors, 1);
  EXPECT_EQ(f.Metric("frugal_cache_insertions_total"), 3);
}

}  // namespace
}  // namespace frugal::cache
