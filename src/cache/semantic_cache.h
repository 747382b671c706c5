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
// - Before an entry answers (exact text or vectors), its stored scope, namespace (and for the
//   exact text, query) must equal the lookup's; one that does not is skipped and counted in
//   frugal_cache_scope_mismatches.
// - Persistence: Snapshot() writes every live entry (with its embedding) to a file, atomically
//   and owner-only: a temp file of mode 0600, written, fsync'ed, renamed over the snapshot, and
//   the directory fsync'ed; Open() reloads it; a background thread snapshots every interval and
//   the destructor once more.
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

#include "cache/cache.h"
#include "cache/embedder.h"
#include "common/metrics.h"
#include "frugal/status.h"

namespace frugal::cache {

class SemanticCache : public Cache {
 public:
  static StatusOr<std::unique_ptr<SemanticCache>> Open(std::shared_ptr<Embedder> embedder,
                                                       CacheOptions options);
  ~SemanticCache() override;

  StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns,
                                std::string_view query) override;
  Status Insert(const std::string& scope, std::string_view ns, std::string_view query,
                std::string_view response, const LookupResult* looked_up = nullptr) override;

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
