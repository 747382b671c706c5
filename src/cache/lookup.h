// The one lookup pipeline: what decides a hit and what an insert does, written once for every
// backend. A backend (SemanticCache, RedisCache) implements CacheStore, which only stores and
// searches, and passes its Lookup and Insert to a LookupPipeline over it.
//
// A lookup, step by step:
//   1. A query longer than max_semantic_bytes is a miss (too_long): never embedded, not even
//      looked up by its text.
//   2. Exact text (exact_match): the entry stored under (scope, query) answers without embedding
//      if it is well-formed and holds this very scope, namespace and query.
//   3. The query is embedded by the store's current model (one ModelLease for the rest).
//   4. The scope's `candidates` nearest entries, nearest first, cut at the namespace's threshold
//      (ThresholdFor); an entry removed meanwhile is skipped, a malformed one or one whose stored
//      scope or namespace is not the lookup's is skipped and counted.
//   5. A query the embedder cannot read (UnknownShare > max_unknown_share, with the guard) hits
//      only its own text.
//   6. Pick: the first candidate the verifier accepts (none: rejected_by_guard, the first
//      refusal's reason); with the guard off, the nearest.
//   7. Metrics, once per lookup: lookups, then hits / exact hits or misses / rejections /
//      refusals / too long (CacheMetrics::Counted), and whether an entry of another scope
//      (scope_mismatches) or a malformed one (bad_entries) was met on the way.
// A store that fails (its exact get or its search) makes the lookup a miss, never an error: the
// store has logged and counted why. An embedder that fails is the lookup's error (and a miss).
//
// An insert: a query over max_semantic_bytes is not cached (Ok); the lookup's vector is reused
// when the same embedder made it; during a rotation to another model the next model's vector
// is made too; a stored entry counts in frugal_cache_insertions.
//
// Thread safety: a LookupPipeline keeps no state of its own; it may be used from any thread if
// its store may.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache.h"
#include "cache/cache_config.h"
#include "cache/cache_metrics.h"
#include "cache/embedder.h"
#include "cache/verifier.h"
#include "frugal/status.h"

namespace frugal::cache {

// One operation's hold on a store's current embedding model, from before it embeds until its
// last store call: a store derives from it to keep what it needs alive (the embedded cache its
// index generation; the Redis cache its vector field and its pass through the rotation gate).
struct ModelLease {
  virtual ~ModelLease() = default;
  std::shared_ptr<Embedder> embedder;
  std::shared_ptr<const HitVerifier> verifier;  // lookups: the embedder's, or the options'
  // Inserts, while a rotation to another model runs: that model (the entry needs its vector too).
  std::shared_ptr<Embedder> next_embedder;
};

// An entry as a store hands it back: copies, so the verifier runs with no lock held.
struct StoredEntry {
  // Cosine to the query (search results, nearest first); nullopt when the store gave no usable
  // distance (a malformed entry).
  std::optional<float> similarity;
  bool malformed = false;  // a field missing or mistyped, a vector of the wrong size: never used
  bool gone = false;       // removed or expired since the index listed it: skipped
  // Unset below the threshold (the pipeline stops there) and for gone or malformed entries.
  std::string scope, ns, query, response;
  // The entry's vector by the lease's model, when the store hands it back (the learned decision
  // reads it; empty: the verifier embeds the query again).
  std::vector<float> vector;
  uint64_t id = 0;  // the store's own handle (Touch)
};

// What a backend does for the pipeline: store and search, nothing that decides a hit.
class CacheStore {
 public:
  virtual ~CacheStore() = default;

  // The model a lookup (with the verifier) or an insert (with the next model while a rotation
  // to another one runs) uses; held until the operation is done.
  virtual std::unique_ptr<ModelLease> Lease(bool for_insert) = 0;
  // The live entry stored under (scope, query) (malformed, when it is not a well-formed entry),
  // or nullopt. An error: the store failed, and has logged and counted it.
  virtual StatusOr<std::optional<StoredEntry>> GetExact(const std::string& scope,
                                                        std::string_view query) = 0;
  // The scope's `k` nearest entries to `vector` (by lease's model), nearest first. `threshold`:
  // the lowest cosine the pipeline uses (a store may search by it, or leave the text of farther
  // entries unset). An error: as GetExact.
  virtual StatusOr<std::vector<StoredEntry>> Search(const ModelLease& lease,
                                                    const std::string& scope,
                                                    std::span<const float> vector, size_t k,
                                                    float threshold) = 0;
  // A hit on `entry` (recency, for eviction); a store may ignore it.
  virtual void Touch(const StoredEntry& entry) = 0;
  // Stores the entry (a newer answer to the same query in the scope replaces the older) with
  // its vector by lease.embedder and, when lease.next_embedder is set, `next_vector` by it.
  // An error: nothing was stored (a store error is logged and counted by the store).
  virtual Status Put(const ModelLease& lease, const std::string& scope, std::string_view ns,
                     std::string_view query, std::string_view response, std::vector<float> vector,
                     const std::vector<float>* next_vector) = 0;
};

// Lookup and Insert of the Cache interface, over a store. The store, options and metrics are
// its owner's (a backend's) and outlive it.
class LookupPipeline {
 public:
  LookupPipeline(CacheStore& store, const CacheOptions& options, CacheMetrics& metrics)
      : store_(store), opt_(options), cm_(metrics) {}

  StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns,
                                std::string_view query);
  Status Insert(const std::string& scope, std::string_view ns, std::string_view query,
                std::string_view response, const LookupResult* looked_up);

 private:
  CacheStore& store_;
  const CacheOptions& opt_;
  CacheMetrics& cm_;
};

// The check a candidate over the threshold must pass (with the guard on): the verifier's, and for
// a query the embedder cannot see (`opaque`), the same text.
Verdict VerifyHit(const HitVerifier& verifier, bool opaque, std::string_view query,
                  std::string_view cached_query, float cosine, Embedder& embedder,
                  const PairVectors& vectors = {});

// A stored entry over the threshold (views of copies the caller owns).
struct HitCandidate {
  float similarity = 0;
  std::string_view query, response;
  std::span<const float> vector;  // the entry's vector; empty when the store gave none
};
// The choice among candidates (nearest first): the first that `guard` accepts (null: the guard
// is off) is the hit. Fills r's hit, similarity, cached_query (the hit, or else the nearest
// candidate), response, rejected_by_guard and refusal; returns the hit's index, or -1.
// `query_vector`: the lookup's vector (empty: unknown).
int PickHit(std::span<const HitCandidate> candidates, const HitVerifier* guard, Embedder& embedder,
            bool opaque, std::string_view query, LookupResult* r,
            std::span<const float> query_vector = {});

}  // namespace frugal::cache
