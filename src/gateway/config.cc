#include "gateway/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cache/redis_client.h"

namespace frugal::gateway {
namespace {

// Every key of `node` must be one of `allowed`.
Status CheckKeys(const YAML::Node& node, const std::string& where,
                 const std::set<std::string>& allowed) {
  if (!node.IsMap()) return InvalidArgument(where + " must be a mapping");
  for (const auto& kv : node) {
    const auto key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return InvalidArgument("unknown key '" + key + "' in " + where + " (known: " + list + ")");
    }
  }
  return Status::Ok();
}

template <typename T>
void Get(const YAML::Node& n, const char* key, T& out) {
  if (n[key]) out = n[key].as<T>();
}

}  // namespace

StatusOr<GatewayConfig> ParseGatewayConfig(const std::string& text) {
  GatewayConfig c;
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsNull()) return c;
    FRUGAL_RETURN_IF_ERROR(CheckKeys(root, "the config",
                                     {"listen", "policy", "workers", "health", "retries", "cache",
                                      "api_keys", "admin_token", "limits", "default_max_tokens"}));
    if (const auto l = root["listen"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(l, "listen", {"host", "port", "http_threads"}));
      Get(l, "host", c.host);
      Get(l, "port", c.port);
      Get(l, "http_threads", c.http_threads);
    }
    Get(root, "policy", c.policy);
    Get(root, "admin_token", c.admin_token);
    Get(root, "default_max_tokens", c.default_max_tokens);
    if (const auto ws = root["workers"]) {
      if (!ws.IsSequence()) return InvalidArgument("workers must be a list");
      for (const auto& w : ws) {
        FRUGAL_RETURN_IF_ERROR(CheckKeys(w, "a worker", {"name", "url", "weight", "kind"}));
        WorkerConfig wc;
        Get(w, "name", wc.name);
        Get(w, "url", wc.url);
        Get(w, "weight", wc.weight);
        std::string kind = "auto";
        Get(w, "kind", kind);
        auto k = ParseWorkerKind(kind);
        if (!k.ok()) return InvalidArgument("worker '" + wc.name + "': " + k.status().message());
        wc.kind = *k;
        if (wc.name.empty()) wc.name = "w" + std::to_string(c.workers.size());
        c.workers.push_back(wc);
      }
    }
    if (const auto h = root["health"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(
          h, "health", {"interval_ms", "timeout_ms", "eject_after", "restore_after", "max_queue"}));
      int64_t v = c.health.interval.count();
      Get(h, "interval_ms", v);
      c.health.interval = std::chrono::milliseconds(v);
      v = c.health.timeout.count();
      Get(h, "timeout_ms", v);
      c.health.timeout = std::chrono::milliseconds(v);
      Get(h, "eject_after", c.health.eject_after);
      Get(h, "restore_after", c.health.restore_after);
      Get(h, "max_queue", c.health.max_queue);
    }
    if (const auto r = root["retries"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(r, "retries", {"max", "backoff_ms"}));
      Get(r, "max", c.max_retries);
      Get(r, "backoff_ms", c.retry_backoff_ms);
    }
    if (const auto l = root["limits"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(l, "limits", {"max_body_bytes", "request_timeout_s"}));
      Get(l, "max_body_bytes", c.max_body_bytes);
      Get(l, "request_timeout_s", c.request_timeout_s);
    }
    if (const auto k = root["cache"]) {
      FRUGAL_RETURN_IF_ERROR(
          CheckKeys(k, "cache",
                    {"enabled", "model", "threads", "threshold", "namespace_thresholds", "ttl_s",
                     "capacity", "snapshot", "snapshot_interval_s", "context_turns",
                     "nondeterministic", "exact_match", "hnsw_m", "hnsw_ef_construction",
                     "hnsw_ef_search", "redis", "redis_prefix", "redis_timeout_ms"}));
      Get(k, "enabled", c.cache.enabled);
      Get(k, "model", c.cache.model);
      Get(k, "threads", c.cache.threads);
      Get(k, "threshold", c.cache.threshold);
      Get(k, "ttl_s", c.cache.ttl_s);
      Get(k, "capacity", c.cache.capacity);
      Get(k, "snapshot", c.cache.snapshot);
      Get(k, "snapshot_interval_s", c.cache.snapshot_interval_s);
      Get(k, "context_turns", c.cache.context_turns);
      Get(k, "nondeterministic", c.cache.nondeterministic);
      Get(k, "exact_match", c.cache.exact_match);
      Get(k, "hnsw_m", c.cache.hnsw_m);
      Get(k, "hnsw_ef_construction", c.cache.hnsw_ef_construction);
      Get(k, "hnsw_ef_search", c.cache.hnsw_ef_search);
      Get(k, "redis", c.cache.redis);
      Get(k, "redis_prefix", c.cache.redis_prefix);
      Get(k, "redis_timeout_ms", c.cache.redis_timeout_ms);
      if (const auto nt = k["namespace_thresholds"]) {
        if (!nt.IsMap()) return InvalidArgument("cache.namespace_thresholds must be a mapping");
        for (const auto& kv : nt)
          c.cache.namespace_threshold[kv.first.as<std::string>()] = kv.second.as<float>();
      }
    }
    if (const auto ks = root["api_keys"]) {
      if (!ks.IsSequence()) return InvalidArgument("api_keys must be a list");
      for (const auto& k : ks) {
        FRUGAL_RETURN_IF_ERROR(CheckKeys(k, "an api key", {"key", "name", "rate_per_s", "burst"}));
        ApiKeyConfig a;
        Get(k, "key", a.key);
        Get(k, "name", a.name);
        Get(k, "rate_per_s", a.rate_per_s);
        Get(k, "burst", a.burst);
        if (a.name.empty()) a.name = "key" + std::to_string(c.api_keys.size());
        c.api_keys.push_back(a);
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
  FRUGAL_RETURN_IF_ERROR(ValidateGatewayConfig(c));
  return c;
}

StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot open config file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  auto c = ParseGatewayConfig(ss.str());
  if (!c.ok()) return InvalidArgument(path + ": " + c.status().message());
  return c;
}

Status ValidateGatewayConfig(const GatewayConfig& c) {
  FRUGAL_RETURN_IF_ERROR(MakePolicy(c.policy).status());
  if (c.http_threads < 1 || c.http_threads > 256)
    return InvalidArgument("listen.http_threads must be 1..256");
  if (c.max_body_bytes < 1) return InvalidArgument("limits.max_body_bytes must be >= 1");
  if (!(c.request_timeout_s > 0)) return InvalidArgument("limits.request_timeout_s must be > 0");
  // Upper bounds keep every duration far from chrono's overflow (and from nonsense).
  if (!(c.request_timeout_s <= 1e6))
    return InvalidArgument("limits.request_timeout_s must be at most 1000000");
  if (c.health.interval.count() < 10 || c.health.interval.count() > 3'600'000)
    return InvalidArgument("health.interval_ms must be 10..3600000");
  if (c.health.timeout.count() < 1 || c.health.timeout.count() > 3'600'000)
    return InvalidArgument("health.timeout_ms must be 1..3600000");
  if (c.retry_backoff_ms > 60'000)
    return InvalidArgument("retries.backoff_ms must be at most 60000");
  if (c.health.eject_after < 1 || c.health.restore_after < 1)
    return InvalidArgument("health.eject_after and restore_after must be >= 1");
  if (c.health.max_queue < 1) return InvalidArgument("health.max_queue must be >= 1");
  if (c.max_retries < 0 || c.max_retries > 10) return InvalidArgument("retries.max must be 0..10");
  if (c.retry_backoff_ms < 0) return InvalidArgument("retries.backoff_ms must be >= 0");
  if (c.default_max_tokens < 1) return InvalidArgument("default_max_tokens must be >= 1");
  if (!(c.cache.threshold >= 0 && c.cache.threshold <= 1))
    return InvalidArgument("cache.threshold must be in [0, 1] (0: the embedder's calibrated one)");
  for (const auto& [ns, t] : c.cache.namespace_threshold) {
    if (!(t > 0 && t <= 1))
      return InvalidArgument("cache.namespace_thresholds." + ns + " must be in (0, 1]");
  }
  if (c.cache.ttl_s < 1 || c.cache.capacity < 1)
    return InvalidArgument("cache.ttl_s and cache.capacity must be >= 1");
  if (c.cache.threads < 1) return InvalidArgument("cache.threads must be >= 1");
  if (c.cache.hnsw_m < 2 || c.cache.hnsw_m > 256)
    return InvalidArgument("cache.hnsw_m must be 2..256");
  if (c.cache.hnsw_ef_construction < c.cache.hnsw_m || c.cache.hnsw_ef_construction > 10'000) {
    return InvalidArgument("cache.hnsw_ef_construction must be hnsw_m..10000");
  }
  if (c.cache.hnsw_ef_search < 4 || c.cache.hnsw_ef_search > 10'000) {
    return InvalidArgument(
        "cache.hnsw_ef_search must be 4..10000 (at least the 4 candidates a lookup checks)");
  }
  if (c.cache.ttl_s > 10LL * 366 * 86400)
    return InvalidArgument("cache.ttl_s must be at most 10 years");
  if (!c.cache.redis.empty())
    FRUGAL_RETURN_IF_ERROR(
        cache::ParseRedisAddress(c.cache.redis).status().WithContext("cache.redis"));
  if (c.cache.redis_timeout_ms < 1 || c.cache.redis_timeout_ms > 60'000)
    return InvalidArgument("cache.redis_timeout_ms must be 1..60000");
  if (!c.cache.redis.empty() && !c.cache.snapshot.empty())
    return InvalidArgument(
        "cache.snapshot is for the embedded cache; with cache.redis, Redis persists the entries");
  if (c.cache.snapshot_interval_s < 0 || c.cache.snapshot_interval_s > 10'000'000)
    return InvalidArgument("cache.snapshot_interval_s must be 0..10000000");
  // The pool's own rules (names, URLs, weights, duplicates), so a config it would refuse at start
  // is refused here, as a config error.
  WorkerPool probe(c.health);
  for (const auto& w : c.workers) {
    Status st = probe.Add(w.name, w.url, w.weight);
    if (!st.ok()) return InvalidArgument("workers: " + st.message());
  }
  std::set<std::string> keys;
  for (const auto& k : c.api_keys) {
    if (k.key.empty()) return InvalidArgument("an api key is empty");
    if (!keys.insert(k.key).second)
      return InvalidArgument("api key '" + k.name + "' is listed twice");
    if (k.rate_per_s < 0 || k.burst < 0)
      return InvalidArgument("api key '" + k.name + "': rate and burst must be >= 0");
    // A bucket smaller than one token could never pay for a request.
    if (k.burst > 0 && k.burst < 1)
      return InvalidArgument("api key '" + k.name + "': burst must be 0 (= max(1, rate)) or >= 1");
  }
  return Status::Ok();
}

}  // namespace frugal::gateway
