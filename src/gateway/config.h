// The gateway's configuration: one YAML file (docs/gateway.md lists every field), overridable by
// command-line flags. Unknown keys are refused so a typo never silently falls back to a default.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "balancer/worker_pool.h"
#include "cache/cache.h"
#include "frugal/status.h"

namespace frugal::gateway {

struct WorkerConfig {
  std::string name, url;
  double weight = 1;
  WorkerKind kind = WorkerKind::kAuto;  // frugal | vllm | sglang | llamacpp | tgi | openai | auto
};

struct ApiKeyConfig {
  std::string key;
  std::string name;       // the tenant: also the cache namespace of its requests
  double rate_per_s = 0;  // token-bucket refill, requests per second; 0 = unlimited
  double burst = 0;       // bucket size; 0 = max(1, rate_per_s)
};

// The cache's part of the configuration lives with the cache (cache/cache.h).
using CacheConfig = cache::CacheConfig;

struct GatewayConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  int http_threads = 2;
  int64_t max_body_bytes = 1 << 20;
  double request_timeout_s = 600;
  std::string policy = "p2c";
  std::vector<WorkerConfig> workers;
  HealthOptions health;
  int max_retries = 2;  // other workers tried after a failure before the first byte
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
