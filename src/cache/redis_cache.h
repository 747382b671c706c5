// The semantic cache's shared backend: entries and their HNSW index live in Redis with the
// RediSearch module (redis-stack-server), so every gateway replica pointed at the same Redis and
// prefix sees the others' inserts and invalidations at once, and a gateway restart loses nothing.
//
// Layout under `prefix` (default "frugal:cache"):
//   {prefix}:e:{HashHex(scope \x1f query)}  a hash per entry: sh (scope hash, TAG), nh (namespace
//                                           hash, TAG), scope, ns, query, response, the vector
//                                           (FLOAT32) in the model's field (v, then v1, v2, ...
//                                           after rotations to new models), t (ms since the
//                                           epoch); PEXPIRE = the TTL
//   {prefix}:idx                            the alias every lookup searches
//   {prefix}:idx:{N}                        the index behind it: FT.CREATE ... ON HASH PREFIX 1
//                                           {prefix}:e: ... VECTOR HNSW ... DISTANCE_METRIC COSINE
//   {prefix}:meta                           the embedding model's name, dim and vector field (a
//                                           replica with another model is refused); next_* while
//                                           a rotation to a new model runs
//   {prefix}:gen, {prefix}:fieldgen,        the index and field counters and the lock of a
//   {prefix}:rotating                       rotation
//
// - Lookup: the query's vector against the scope's entries, nearest first: by default a KNN
//   query with the scope as filter, `(@sh:{..})=>[KNN candidates @v $vec]`, cut at the
//   threshold; or (search = kRange) a range query at the threshold,
//   `@sh:{..} @v:[VECTOR_RANGE (1 - threshold) $vec]`. The rest of a lookup (the exact text,
//   the threshold, the checks below, the verifier, the metrics) is the one pipeline both
//   backends run (lookup.h); this backend is its store (redis_cache_impl.h).
// - Nothing Redis returns is trusted unchecked: before an entry answers (the exact-text path's
//   HMGET or a search result), its stored scope and namespace must equal the lookup's (the sh
//   TAG and the key are hashes), and its fields be well-formed (strings present, a numeric
//   distance, a vector of the model's size). Otherwise it is a miss for that entry, counted in
//   frugal_cache_scope_mismatches / frugal_cache_bad_entries.
// - The same query in the same scope has one key: a newer answer replaces the older, and
//   invalidation by exact query is one DEL.
// - Rotation: a new index over the same key prefix (new HNSW parameters, or compaction), which
//   RediSearch fills in the background from the existing hashes while the old one serves; inserts
//   meanwhile land in both, because both index the prefix; when it is complete FT.ALIASUPDATE
//   switches the alias atomically and the old index is dropped (its hashes stay). A lock key keeps
//   replicas from rotating at the same time.
// - Rotation to a new embedding model: the new model gets a new vector field. Every entry is
//   given its vector in that field (its query embedded again; SCAN in pages, never recreating a
//   key removed meanwhile), which a new index over the field reads, while the old index serves
//   and this instance's inserts write both vectors; a second pass catches what other replicas
//   wrote with the old model. Then, with no lookup or insert of this instance in flight (a
//   gate, about a millisecond), the alias and the meta switch to the new model. The old index
//   is dropped and the old vectors deleted. Other replicas call Rotate with the same model:
//   they find it done, switch, and backfill what they wrote meanwhile; until then their
//   lookups miss (their field is not in the index).
// - Capacity: Redis bounds it (maxmemory with volatile-lru/volatile-ttl evicts the entries, which
//   all carry a TTL); `capacity` is not enforced here.
// - Redis unreachable or failing: Lookup returns a miss (never an error), Insert and the
//   invalidations fail or return 0, and the error is logged (once per outage) and counted in
//   frugal_cache_backend_errors. Once Redis is back the index is recreated if it was lost.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "cache/cache.h"
#include "cache/redis_client.h"

namespace frugal::cache {

enum class RedisSearch { kKnn, kRange };

struct RedisCacheOptions {
  CacheOptions cache;  // threshold, namespace thresholds, ttl, hnsw, candidates, guard, verifier
  RedisOptions redis;
  std::string prefix = "frugal:cache";
  std::chrono::seconds rotation_timeout{600};  // longest wait for a new index to fill
  // How a lookup searches: the `candidates` nearest entries of the scope (KNN with the scope as
  // a filter, then the threshold) or a range query at the threshold (VECTOR_RANGE). The range
  // search of RediSearch 2.10 is the less exact: with its default $EPSILON 0.01 it missed an
  // entry's own vector in 917 of 3000 lookups on one tight cluster, 60 at 0.2, none at 0.5 but
  // once in ~600 after a rotation; KNN missed none (docs/cache.md).
  RedisSearch search = RedisSearch::kKnn;
  double range_epsilon = 0.5;  // $EPSILON of the range query
};

class RedisCache : public Cache {
 public:
  // Fails only on bad options (TLS files that cannot be used included), on a Redis that answers
  // with a conflict (another embedding model under the prefix), or on one that refuses this
  // client (credentials, certificate: RedisClient's InvalidArgument); an unreachable Redis opens
  // and misses until it is back.
  static StatusOr<std::unique_ptr<RedisCache>> Open(std::shared_ptr<Embedder> embedder,
                                                    RedisCacheOptions options);
  ~RedisCache() override;

  StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns,
                                std::string_view query) override;
  Status Insert(const std::string& scope, std::string_view ns, std::string_view query,
                std::string_view response, const LookupResult* looked_up = nullptr) override;
  size_t InvalidateNamespace(std::string_view ns) override;
  size_t InvalidateQuery(const std::string& scope, std::string_view query) override;
  size_t Clear() override;
  // New HNSW parameters, compaction, or a new embedding model (see the header comment).
  Status Rotate(const RotateOptions& options = {}) override;
  size_t size() const override;
  int64_t rotations() const override;
  MetricsRegistry& metrics() override { return metrics_; }

  // The index the alias points at now (for tests and /status).
  StatusOr<std::string> CurrentIndex() const;
  bool reachable() const;

  struct Impl;

 private:
  explicit RedisCache(std::unique_ptr<Impl> impl);
  static StatusOr<std::string> CurrentIndexOf(RedisClient& redis, const std::string& alias);
  std::unique_ptr<Impl> impl_;
  MetricsRegistry metrics_;
};

}  // namespace frugal::cache
