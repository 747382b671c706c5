// The gateway's semantic cache (embedded backend): answers a query from an earlier answer whose
// query means the same, within one scope.
//
// - Scope: every entry belongs to a scope string (ScopeKey: namespace/tenant, model, a hash of
//   the system prompt and the earlier turns the answer depends on, the sampling parameters). A
//   lookup only sees its own scope: each scope is its own index partition, searched exactly
//   while small and through HNSW beyond `exact_max` entries.
// - A hit is a decision: the index proposes candidates with cosine >= the recall threshold (the
//   embedder's calibrated one, or per namespace), and the verifier (PairVerifier with the
//   embedder's calibration, verifier.h) decides; a candidate it refuses counts as
//   rejected_by_guard and is a miss. The verifier runs outside every lock.
// - A query longer than max_semantic_bytes is neither embedded nor cached (never a semantic hit
//   from text the embedder or the verifier did not read).
// - TTL per entry (default 24 h) and a capacity bound: expired entries go first, then the least
//   recently used. Invalidation by namespace, by exact query, or everything.
// - Rotation: Rotate() rebuilds every index (new HNSW parameters, a new embedding model, or just
//   compaction after deletions) while the current generation keeps serving; inserts meanwhile go
//   to both; then the current generation is switched atomically and the old one is freed when
//   its last reader leaves.
// - Persistence: Snapshot() writes every live entry (with its embedding) to a file, atomically
//   (temp + rename); Open() reloads it; a background thread snapshots every interval and the
//   destructor once more.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/metrics.h"
#include "frugal/status.h"
#include "cache/embedder.h"
#include "cache/verifier.h"
#include "cache/vector_index.h"

namespace frugal::cache {

struct CacheOptions {
  // Candidates: cosine >= this. 0 = the embedder's calibrated recall threshold
  // (data/cache_calibration), or 0.92 for an embedder without a calibration (the figure for
  // bge-m3; RecallThreshold).
  float threshold = 0;
  std::unordered_map<std::string, float> namespace_threshold;  // overrides by namespace
  std::chrono::seconds ttl{24 * 3600};                     // per entry, from insertion
  size_t capacity = 1'000'000;                             // entries; beyond: evict
  size_t exact_max = 4096;                                 // a scope's entries searched exactly up to this
  HnswParams hnsw;
  size_t candidates = 4;                                   // nearest entries checked per lookup
  bool guard = true;                                       // verify hits (false: the cosine alone decides)
  // A lookup of a stored query's very same text (in the same scope) hits without embedding or
  // searching; off: every lookup goes through the vectors.
  bool exact_match = true;
  // With the guard: a query with more than this share of tokens the embedder cannot see hits
  // only the same text (Embedder::UnknownShare).
  double max_unknown_share = 0.1;
  std::shared_ptr<const HitVerifier> verifier;             // null: the embedder's (DefaultVerifier)
  // Longer queries (bytes) are not embedded and not cached: the verifier reads this much.
  size_t max_semantic_bytes = kMaxSignalBytes;
  std::string snapshot_path;                               // "" = no persistence
  std::chrono::seconds snapshot_interval{300};             // 0 = only on shutdown
  // Milliseconds since the Unix epoch; injectable for tests (TTL).
  std::function<int64_t()> now_ms;
};

// What the answer depends on, hashed into one scope string.
struct ScopeSpec {
  std::string ns;          // namespace / tenant
  std::string model;
  std::string context;     // system prompt + the earlier turns that count
  std::string sampling;    // e.g. "t=0;top_p=1;max=256"
};
std::string ScopeKey(const ScopeSpec& s);

// The check a candidate over the threshold must pass (with the guard on): the verifier's, and for
// a query the embedder cannot see (`opaque`), the same text.
Verdict VerifyHit(const HitVerifier& verifier, bool opaque, std::string_view query, std::string_view cached_query,
                  float cosine, Embedder& embedder);

// The candidate threshold of a namespace: its override, else the configured one, else the
// embedder's calibrated one.
float ThresholdFor(const CacheOptions& options, std::string_view ns, const Embedder& embedder);


struct LookupResult {
  bool hit = false;
  std::string response;          // the cached answer (hit)
  std::string cached_query;      // the query it answered (hit, or the rejected candidate)
  float similarity = 0;          // of the best candidate
  bool rejected_by_guard = false;
  const char* refusal = "";      // the verifier's reason when rejected_by_guard ("numbers", ...)
  bool too_long = false;         // over max_semantic_bytes: not embedded
  bool exact = false;  // a hit on the very same query text in the scope: no embedding, no search
  double embed_ms = 0, search_ms = 0;
  // The query's vector and the embedder that made it: a miss answered later is inserted with it
  // instead of embedding the same text twice (Insert's `looked_up`).
  std::vector<float> embedding;
  std::shared_ptr<Embedder> embedded_by;
};

// A stored entry over the threshold, as a backend found it (views of copies the caller owns:
// the verifier runs with no lock held).
struct HitCandidate {
  float similarity = 0;
  std::string_view query, response;
};
// Both backends' choice among candidates (nearest first): the first that `guard` accepts (null:
// the guard is off) is the hit. Fills r's hit, similarity, cached_query (the hit, or else the
// nearest candidate), response, rejected_by_guard and refusal; returns the hit's index, or -1.
int PickHit(std::span<const HitCandidate> candidates, const HitVerifier* guard, Embedder& embedder, bool opaque,
            std::string_view query, LookupResult* r);

struct RotateOptions {
  std::shared_ptr<Embedder> embedder;  // null: keep the current one
  std::optional<HnswParams> hnsw;      // unset: keep
};

// What the gateway asks of a cache backend: the embedded SemanticCache below, or RedisCache
// (redis_cache.h) shared by several gateway replicas. Both count the same metrics.
class Cache {
 public:
  virtual ~Cache() = default;

  virtual StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns, std::string_view query) = 0;
  // looked_up: the Lookup of this query, whose vector is reused when the embedder is still the
  // current one (otherwise the query is embedded again).
  virtual Status Insert(const std::string& scope, std::string_view ns, std::string_view query, std::string_view response,
                        const LookupResult* looked_up = nullptr) = 0;

  // The number of entries removed.
  virtual size_t InvalidateNamespace(std::string_view ns) = 0;
  virtual size_t InvalidateQuery(const std::string& scope, std::string_view query) = 0;  // exact text
  virtual size_t Clear() = 0;

  // Rebuilds the index(es) in the calling thread while lookups and inserts go on; switches when
  // done. One rotation at a time (a second call waits).
  virtual Status Rotate(const RotateOptions& options = {}) = 0;

  virtual size_t size() const = 0;
  virtual int64_t rotations() const = 0;
  virtual MetricsRegistry& metrics() = 0;
};

// The metrics every backend counts, under the same names (frugal_cache_*).
struct CacheMetrics {
  MetricsRegistry::Counter *lookups = nullptr, *hits = nullptr, *misses = nullptr, *rejected = nullptr,
                           *insertions = nullptr, *evictions = nullptr, *rotations_total = nullptr,
                           *exact_hits = nullptr, *refusals = nullptr, *too_long = nullptr;
  MetricsRegistry::Histogram *embed_s = nullptr, *search_s = nullptr, *rotation_s = nullptr;
  std::atomic<int64_t> lookups_seen{0}, hits_seen{0};  // for the hit-ratio gauge

  // Adds them to r, with the gauges frugal_cache_entries (from `entries`) and
  // frugal_cache_hit_ratio. `search_help` describes what the backend's search time includes.
  void Register(MetricsRegistry& r, std::function<double()> entries, const char* search_help);
  // One lookup's outcome.
  void Counted(const LookupResult& r);
};

// 128 bits of FNV-1a as 32 hex digits: scope keys and entry ids.
std::string HashHex(std::string_view s);

class SemanticCache : public Cache {
 public:
  static StatusOr<std::unique_ptr<SemanticCache>> Open(std::shared_ptr<Embedder> embedder, CacheOptions options);
  ~SemanticCache() override;

  StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns, std::string_view query) override;
  Status Insert(const std::string& scope, std::string_view ns, std::string_view query, std::string_view response,
                const LookupResult* looked_up = nullptr) override;

  size_t InvalidateNamespace(std::string_view ns) override;
  size_t InvalidateQuery(const std::string& scope, std::string_view query) override;
  size_t Clear() override;

  Status Rotate(const RotateOptions& options = {}) override;
  Status Snapshot(const std::string& path) const;

  size_t size() const override;
  // Vectors in the serving generation's indexes: equal to size() unless an entry is missing
  // from the index (what a rotation must never cause).
  size_t indexed() const;
  int64_t rotations() const override;
  MetricsRegistry& metrics() override { return metrics_; }

  struct Impl;

 private:
  explicit SemanticCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  MetricsRegistry metrics_;
};

}  // namespace frugal::cache
