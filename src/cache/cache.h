// The semantic cache as the gateway sees it: the Cache interface both backends implement, the
// scope of an entry, a lookup's result, and OpenCache, which makes the configured backend. The
// backends: SemanticCache (semantic_cache.h, embedded) and RedisCache (redis_cache.h, shared by
// gateway replicas); both decide hits with the one lookup pipeline (lookup.h) and only store and
// search. Included here for callers: the configuration (cache_config.h) and the metrics
// (cache_metrics.h).
//
// Thread safety: every Cache method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_config.h"
#include "cache/cache_metrics.h"
#include "cache/embedder.h"
#include "cache/vector_index.h"
#include "common/metrics.h"
#include "frugal/status.h"

namespace frugal::cache {

// What the answer depends on, hashed into one scope string.
struct ScopeSpec {
  std::string ns;  // namespace / tenant
  std::string model;
  std::string context;   // system prompt + the earlier turns that count
  std::string sampling;  // e.g. "t=0;top_p=1;max=256"
};
std::string ScopeKey(const ScopeSpec& s);

struct LookupResult {
  bool hit = false;
  std::string response;      // the cached answer (hit)
  std::string cached_query;  // the query it answered (hit, or the rejected candidate)
  float similarity = 0;      // of the best candidate
  bool rejected_by_guard = false;
  const char* refusal = "";  // the verifier's reason when rejected_by_guard ("numbers", ...)
  bool too_long = false;     // over max_semantic_bytes: not embedded
  bool exact = false;  // a hit on the very same query text in the scope: no embedding, no search
  double embed_ms = 0, search_ms = 0;
  // The query's vector and the embedder that made it: a miss answered later is inserted with it
  // instead of embedding the same text twice (Insert's `looked_up`).
  std::vector<float> embedding;
  std::shared_ptr<Embedder> embedded_by;
};

struct RotateOptions {
  std::shared_ptr<Embedder> embedder;  // null: keep the current one
  std::optional<HnswParams> hnsw;      // unset: keep
};

// What the gateway asks of a cache backend: the embedded SemanticCache (semantic_cache.h), or
// RedisCache (redis_cache.h) shared by several gateway replicas. Both count the same metrics.
class Cache {
 public:
  virtual ~Cache() = default;

  virtual StatusOr<LookupResult> Lookup(const std::string& scope, std::string_view ns,
                                        std::string_view query) = 0;
  // looked_up: the Lookup of this query, whose vector is reused when the embedder is still the
  // current one (otherwise the query is embedded again).
  virtual Status Insert(const std::string& scope, std::string_view ns, std::string_view query,
                        std::string_view response, const LookupResult* looked_up = nullptr) = 0;

  // The number of entries removed.
  virtual size_t InvalidateNamespace(std::string_view ns) = 0;
  virtual size_t InvalidateQuery(const std::string& scope,
                                 std::string_view query) = 0;  // exact text
  virtual size_t Clear() = 0;

  // Rebuilds the index(es) in the calling thread while lookups and inserts go on; switches when
  // done. One rotation at a time (a second call waits).
  virtual Status Rotate(const RotateOptions& options = {}) = 0;

  virtual size_t size() const = 0;
  virtual int64_t rotations() const = 0;
  virtual MetricsRegistry& metrics() = 0;
};

// 128 bits of FNV-1a as 32 hex digits: scope keys and entry ids.
std::string HashHex(std::string_view s);

// The configured backend on `embedder`: RedisCache when config.redis is set, else SemanticCache.
// (config.enabled, model, threads, context_turns and nondeterministic are the caller's: which
// embedder, how many lanes, which requests are cached.)
StatusOr<std::unique_ptr<Cache>> OpenCache(std::shared_ptr<Embedder> embedder,
                                           const CacheConfig& config);

}  // namespace frugal::cache
