// The gateway's configuration: one YAML file (docs/gateway.md lists every field), overridable by
// command-line flags. Unknown keys are refused so a typo never silently falls back to a default.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/openai.h"
#include "balancer/worker_pool.h"
#include "cache/cache.h"
#include "frugal/status.h"

namespace frugal::gateway {

struct WorkerConfig {
  std::string name, url;
  double weight = 1;
  WorkerKind kind = WorkerKind::kAuto;  // frugal | vllm | sglang | llamacpp | tgi | openai | auto
  // The key the gateway sends the worker (Authorization: Bearer), read from this file (first
  // line); empty: the config's worker_api_key_file, else none.
  std::string api_key_file;
  std::string api_key;  // filled from the file by LoadGatewaySecrets; never in the YAML
};

struct ApiKeyConfig {
  std::string key;
  std::string name;       // the tenant: also the cache namespace of its requests; required, unique
  double rate_per_s = 0;  // token-bucket refill, requests per second; 0 = unlimited
  double burst = 0;       // bucket size; 0 = max(1, rate_per_s)
};

// The cache's part of the configuration lives with the cache (cache/cache.h).
using CacheConfig = cache::CacheConfig;

// The cache audit (gateway/audit.h), read from the YAML's cache section: a gateway concern, so
// it lives here rather than in cache::CacheConfig.
struct CacheAuditConfig {
  double rate = 0.01;  // cache.audit_rate: share of served hits also sent to a worker; 0..1
  // cache.audit_min_similarity: the two answers' embedding cosine at or above which they mean
  // the same (docs/cache.md "The audit" has the measurement behind the default); 0..1
  double min_similarity = 0.85;
  // cache.audit_max_in_flight: audits running at once; a sampled hit beyond it is counted
  // `capped` and not sent (gateway/audit.h). 0 = no cap.
  int max_in_flight = 2;
};

struct GatewayConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  int http_threads = 2;
  int64_t max_body_bytes = 1 << 20;
  double request_timeout_s = 600;
  std::string policy = "p2c";
  // Cost each worker for the prompt past the longest prefix of the request the gateway sent it
  // before (balancer/prefix_index.h), so follow-up turns go where their KV is. false: off.
  bool prefix_routing = true;
  std::vector<WorkerConfig> workers;
  HealthOptions health;
  int max_retries = 2;  // other workers tried after a failure before the first byte
  int64_t retry_backoff_ms = 25;
  int64_t default_max_tokens = 256;  // the cost estimate of a request that names none
  CacheConfig cache;
  CacheAuditConfig cache_audit;
  std::vector<ApiKeyConfig> api_keys;  // empty: no key needed
  std::string api_keys_file;        // a YAML list of API keys like api_keys, added to them at start
  std::string admin_token;          // empty: admin API off
  std::string admin_token_file;     // the admin token's file (first line); FRUGAL_ADMIN_TOKEN too
  std::string worker_api_key_file;  // the key sent to every worker without its own api_key_file
  std::string worker_api_key;       // filled from it by LoadGatewaySecrets; never in the YAML
  // "host:port": a second listener for the admin API, /status, /status.json and /metrics, which
  // the public listener then does not serve (404). Empty: one listener for everything.
  std::string admin_listen;
  // Who may read /status, /status.json and /metrics on the public listener: "public" (workers'
  // addresses and errors left out unless the admin token is sent) or "admin" (the token needed).
  std::string status_access = "public";
  api::RequestLimits request_limits;  // limits.max_messages, limits.max_stop_bytes
  int max_connections = 0;            // limits.max_connections; 0 = half the open-file limit
  double auth_failures_per_min = 10;  // limits.auth_failures_per_min: per address, burst 20
};

// Reads the secrets the config names from files and the environment: admin_token_file (else
// FRUGAL_ADMIN_TOKEN when no token is set), api_keys_file, each worker's api_key_file (else
// worker_api_key_file). Then validates again (the keys' names). Warnings (a secret file others
// can read) go to `warnings`.
Status LoadGatewaySecrets(GatewayConfig& c, std::vector<std::string>* warnings = nullptr);

StatusOr<GatewayConfig> ParseGatewayConfig(const std::string& yaml_text);
StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path);
// Refuses inconsistent values (no workers is allowed: they can be added through the admin API).
Status ValidateGatewayConfig(const GatewayConfig& c);

}  // namespace frugal::gateway
