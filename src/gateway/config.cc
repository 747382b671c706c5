#include "gateway/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "cache/redis_client.h"
#include "http/auth.h"

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

// A list of {key, name, rate_per_s, burst}. A key without a name is refused: the name is the
// tenant, the cache's scope of its answers, and must not depend on the list's order.
Status ReadApiKeys(const YAML::Node& ks, std::vector<ApiKeyConfig>& out) {
  if (!ks.IsSequence()) return InvalidArgument("api_keys must be a list");
  for (const auto& k : ks) {
    FRUGAL_RETURN_IF_ERROR(CheckKeys(k, "an api key", {"key", "name", "rate_per_s", "burst"}));
    ApiKeyConfig a;
    Get(k, "key", a.key);
    Get(k, "name", a.name);
    Get(k, "rate_per_s", a.rate_per_s);
    Get(k, "burst", a.burst);
    if (a.name.empty()) {
      return InvalidArgument("api key #" + std::to_string(out.size() + 1) +
                             " has no name: every key needs its own (the tenant, which scopes "
                             "its cached answers)");
    }
    out.push_back(a);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<GatewayConfig> ParseGatewayConfig(const std::string& text) {
  GatewayConfig c;
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsNull()) return c;
    FRUGAL_RETURN_IF_ERROR(CheckKeys(
        root, "the config",
        {"listen", "policy", "workers", "health", "retries", "cache", "api_keys", "api_keys_file",
         "admin_token", "admin_token_file", "admin_listen", "status_access", "worker_api_key_file",
         "limits", "default_max_tokens", "prefix_routing"}));
    if (const auto l = root["listen"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(l, "listen", {"host", "port", "http_threads"}));
      Get(l, "host", c.host);
      Get(l, "port", c.port);
      Get(l, "http_threads", c.http_threads);
    }
    Get(root, "policy", c.policy);
    Get(root, "prefix_routing", c.prefix_routing);
    Get(root, "admin_token", c.admin_token);
    Get(root, "admin_token_file", c.admin_token_file);
    Get(root, "api_keys_file", c.api_keys_file);
    Get(root, "admin_listen", c.admin_listen);
    Get(root, "status_access", c.status_access);
    Get(root, "worker_api_key_file", c.worker_api_key_file);
    Get(root, "default_max_tokens", c.default_max_tokens);
    if (const auto ws = root["workers"]) {
      if (!ws.IsSequence()) return InvalidArgument("workers must be a list");
      for (const auto& w : ws) {
        FRUGAL_RETURN_IF_ERROR(
            CheckKeys(w, "a worker", {"name", "url", "weight", "kind", "api_key_file"}));
        WorkerConfig wc;
        Get(w, "name", wc.name);
        Get(w, "url", wc.url);
        Get(w, "weight", wc.weight);
        Get(w, "api_key_file", wc.api_key_file);
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
      FRUGAL_RETURN_IF_ERROR(
          CheckKeys(l, "limits",
                    {"max_body_bytes", "request_timeout_s", "max_connections", "max_messages",
                     "max_stop_bytes", "auth_failures_per_min"}));
      Get(l, "max_body_bytes", c.max_body_bytes);
      Get(l, "request_timeout_s", c.request_timeout_s);
      Get(l, "max_connections", c.max_connections);
      Get(l, "max_messages", c.request_limits.max_messages);
      Get(l, "max_stop_bytes", c.request_limits.max_stop_bytes);
      Get(l, "auth_failures_per_min", c.auth_failures_per_min);
    }
    if (const auto k = root["cache"]) {
      FRUGAL_RETURN_IF_ERROR(CheckKeys(k, "cache",
                                       {"enabled",
                                        "model",
                                        "threads",
                                        "threshold",
                                        "namespace_thresholds",
                                        "ttl_s",
                                        "capacity",
                                        "snapshot",
                                        "snapshot_interval_s",
                                        "context_turns",
                                        "nondeterministic",
                                        "exact_match",
                                        "decision",
                                        "target_precision",
                                        "hnsw_m",
                                        "hnsw_ef_construction",
                                        "hnsw_ef_search",
                                        "redis",
                                        "redis_prefix",
                                        "redis_timeout_ms",
                                        "redis_user",
                                        "redis_password_file",
                                        "redis_tls",
                                        "redis_tls_ca_file",
                                        "redis_tls_cert_file",
                                        "redis_tls_key_file",
                                        "redis_tls_server_name",
                                        "audit_rate",
                                        "audit_min_similarity",
                                        "audit_max_in_flight"}));
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
      if (const auto d = k["decision"]) {
        FRUGAL_ASSIGN_OR_RETURN(c.cache.decision, cache::ParseDecisionKind(d.as<std::string>()));
      }
      Get(k, "target_precision", c.cache.target_precision);
      Get(k, "hnsw_m", c.cache.hnsw_m);
      Get(k, "hnsw_ef_construction", c.cache.hnsw_ef_construction);
      Get(k, "hnsw_ef_search", c.cache.hnsw_ef_search);
      Get(k, "redis", c.cache.redis);
      Get(k, "redis_prefix", c.cache.redis_prefix);
      Get(k, "redis_timeout_ms", c.cache.redis_timeout_ms);
      Get(k, "redis_user", c.cache.redis_user);
      Get(k, "redis_password_file", c.cache.redis_password_file);
      Get(k, "redis_tls", c.cache.redis_tls);
      Get(k, "redis_tls_ca_file", c.cache.redis_tls_ca_file);
      Get(k, "redis_tls_cert_file", c.cache.redis_tls_cert_file);
      Get(k, "redis_tls_key_file", c.cache.redis_tls_key_file);
      Get(k, "redis_tls_server_name", c.cache.redis_tls_server_name);
      Get(k, "audit_rate", c.cache_audit.rate);
      Get(k, "audit_min_similarity", c.cache_audit.min_similarity);
      Get(k, "audit_max_in_flight", c.cache_audit.max_in_flight);
      if (const auto nt = k["namespace_thresholds"]) {
        if (!nt.IsMap()) return InvalidArgument("cache.namespace_thresholds must be a mapping");
        for (const auto& kv : nt)
          c.cache.namespace_threshold[kv.first.as<std::string>()] = kv.second.as<float>();
      }
    }
    if (const auto ks = root["api_keys"]) FRUGAL_RETURN_IF_ERROR(ReadApiKeys(ks, c.api_keys));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
  FRUGAL_RETURN_IF_ERROR(ValidateGatewayConfig(c));
  return c;
}

Status LoadGatewaySecrets(GatewayConfig& c, std::vector<std::string>* warnings) {
  std::string warning;
  auto note = [&] {
    if (warnings && !warning.empty()) warnings->push_back(warning);
    warning.clear();
  };
  if (!c.admin_token_file.empty()) {
    auto t = http::ReadSecretFile(c.admin_token_file, &warning);
    if (!t.ok()) return t.status().WithContext("admin_token_file");
    c.admin_token = *t;
    note();
  } else if (c.admin_token.empty()) {
    if (const char* env = std::getenv("FRUGAL_ADMIN_TOKEN"); env && *env) c.admin_token = env;
  }
  if (!c.api_keys_file.empty()) {
    std::ifstream f(c.api_keys_file);
    if (!f) return NotFound("cannot read api_keys_file " + c.api_keys_file);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      FRUGAL_RETURN_IF_ERROR(
          ReadApiKeys(YAML::Load(ss.str()), c.api_keys).WithContext(c.api_keys_file));
    } catch (const YAML::Exception& e) {
      return InvalidArgument(c.api_keys_file + ": " + e.what());
    }
    (void)http::ReadSecretFile(c.api_keys_file, &warning);  // only for the permission warning
    note();
  }
  if (!c.worker_api_key_file.empty()) {
    auto k = http::ReadSecretFile(c.worker_api_key_file, &warning);
    if (!k.ok()) return k.status().WithContext("worker_api_key_file");
    c.worker_api_key = *k;
    note();
  }
  for (auto& w : c.workers) {
    if (w.api_key_file.empty()) continue;
    auto k = http::ReadSecretFile(w.api_key_file, &warning);
    if (!k.ok()) return k.status().WithContext("worker " + w.name + "'s api_key_file");
    w.api_key = *k;
    note();
  }
  return ValidateGatewayConfig(c);
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
  if (!(c.cache.target_precision >= 0.5 && c.cache.target_precision <= 1))
    return InvalidArgument("cache.target_precision must be in [0.5, 1]");
  if (!(c.cache_audit.rate >= 0 && c.cache_audit.rate <= 1))
    return InvalidArgument("cache.audit_rate must be in [0, 1]");
  if (!(c.cache_audit.min_similarity >= 0 && c.cache_audit.min_similarity <= 1))
    return InvalidArgument("cache.audit_min_similarity must be in [0, 1]");
  if (c.cache_audit.max_in_flight < 0)
    return InvalidArgument("cache.audit_max_in_flight must be >= 0 (0 = no cap)");
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
  // The address, the credentials (the password file is read) and the TLS files.
  FRUGAL_RETURN_IF_ERROR(cache::ValidateRedisConfig(c.cache));
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
  if (c.status_access != "public" && c.status_access != "admin")
    return InvalidArgument("status_access must be public or admin");
  if (c.status_access == "admin" && c.admin_token.empty() && c.admin_token_file.empty() &&
      c.admin_listen.empty()) {
    return InvalidArgument("status_access: admin needs an admin token (admin_token_file)");
  }
  if (!c.admin_listen.empty()) {
    const size_t colon = c.admin_listen.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return InvalidArgument("admin_listen must be host:port");
    const std::string port = c.admin_listen.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) ||
        std::stoi(port) > 65535) {
      return InvalidArgument("admin_listen must be host:port (port 0-65535)");
    }
  }
  if (c.max_connections < 0) return InvalidArgument("limits.max_connections must be >= 0");
  if (c.request_limits.max_messages < 1 || c.request_limits.max_stop_bytes < 1)
    return InvalidArgument("limits.max_messages and limits.max_stop_bytes must be >= 1");
  if (!(c.auth_failures_per_min > 0))
    return InvalidArgument("limits.auth_failures_per_min must be > 0");
  std::set<std::string> keys, names;
  for (const auto& k : c.api_keys) {
    if (k.name.empty()) return InvalidArgument("an api key has no name");
    if (!names.insert(k.name).second)
      return InvalidArgument("api key name '" + k.name + "' is used twice: names must be unique");
    if (k.key.empty()) return InvalidArgument("api key '" + k.name + "' is empty");
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
