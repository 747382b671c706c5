#include "cache/cache.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "cache/redis_cache.h"
#include "cache/semantic_cache.h"

namespace frugal::cache {
namespace {

uint64_t Fnv1a(std::string_view s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

std::string HashHex(std::string_view s) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(Fnv1a(s, 0xcbf29ce484222325ull)),
                static_cast<unsigned long long>(Fnv1a(s, 0x84222325cbf29ce4ull)));
  return buf;
}

float ThresholdFor(const CacheOptions& options, std::string_view ns, const Embedder& embedder) {
  auto it = options.namespace_threshold.find(std::string(ns));
  if (it != options.namespace_threshold.end()) return it->second;
  return options.threshold > 0 ? options.threshold : RecallThreshold(embedder);
}

int PickHit(std::span<const HitCandidate> candidates, const HitVerifier* guard, Embedder& embedder,
            bool opaque, std::string_view query, LookupResult* r) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    const HitCandidate& c = candidates[i];
    if (r->cached_query.empty()) {
      r->similarity = c.similarity;
      r->cached_query = std::string(c.query);
    }
    if (guard != nullptr) {
      const Verdict v = VerifyHit(*guard, opaque, query, c.query, c.similarity, embedder);
      if (!v.accept) {
        r->rejected_by_guard = true;
        if (*r->refusal == '\0') r->refusal = v.reason;
        continue;
      }
    }
    r->hit = true;
    r->rejected_by_guard = false;
    r->refusal = "";
    r->similarity = c.similarity;
    r->cached_query = std::string(c.query);
    r->response = std::string(c.response);
    return static_cast<int>(i);
  }
  return -1;
}

void CacheMetrics::Register(MetricsRegistry& r, std::function<double()> entries,
                            const char* search_help) {
  lookups = &r.AddCounter("frugal_cache_lookups", "Semantic cache lookups");
  hits = &r.AddCounter("frugal_cache_hits", "Lookups answered from the cache");
  exact_hits = &r.AddCounter("frugal_cache_exact_hits",
                             "Hits on the very same query text, answered without embedding");
  misses = &r.AddCounter("frugal_cache_misses", "Lookups not answered from the cache");
  rejected = &r.AddCounter("frugal_cache_rejected_by_guard",
                           "Lookups whose candidates the verifier all refused");
  refusals = &r.AddCounter("frugal_cache_verifier_refusals",
                           "Lookups the verifier refused, by the first candidate's reason "
                           "(numbers, negation, opposite, score, ...)",
                           "reason");
  too_long = &r.AddCounter("frugal_cache_too_long",
                           "Queries over the verifier's length cap: not embedded, not cached");
  scope_mismatches = &r.AddCounter(
      "frugal_cache_scope_mismatches",
      "Lookups that met an entry whose stored scope or namespace was not theirs (not used)");
  bad_entries = &r.AddCounter(
      "frugal_cache_bad_entries",
      "Lookups that met a malformed entry (a missing or mistyped field, a vector of the wrong "
      "size, a distance that is no number): not used");
  insertions = &r.AddCounter("frugal_cache_insertions", "Entries written");
  evictions = &r.AddCounter("frugal_cache_evictions", "Entries removed, by reason", "reason");
  rotations_total = &r.AddCounter("frugal_cache_rotations", "Index rotations completed");
  const std::vector<double> fine = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                    0.01,   0.025,   0.05,   0.1,   0.25,   1};
  embed_s = &r.AddHistogram("frugal_cache_embed_seconds", "Query embedding time per lookup", fine);
  search_s = &r.AddHistogram("frugal_cache_search_seconds", search_help, fine);
  rotation_s = &r.AddHistogram("frugal_cache_rotation_seconds", "Duration of index rotations",
                               MetricsRegistry::LatencyBuckets());
  r.AddGauge("frugal_cache_entries", "Live entries", std::move(entries));
  r.AddGauge("frugal_cache_hit_ratio", "Hits over lookups since start", [this] {
    const auto l = static_cast<double>(lookups_seen.load());
    return l > 0 ? static_cast<double>(hits_seen.load()) / l : 0.0;
  });
}

void CacheMetrics::Counted(const LookupResult& r) {
  if (r.hit) {
    hits->Add(1);
    if (r.exact) exact_hits->Add(1);
    hits_seen.fetch_add(1);
  } else {
    misses->Add(1);
    if (r.rejected_by_guard) {
      rejected->Add(1);
      refusals->Add(1, r.refusal);
    }
    if (r.too_long) too_long->Add(1);
  }
}

Verdict VerifyHit(const HitVerifier& verifier, bool opaque, std::string_view query,
                  std::string_view cached_query, float cosine, Embedder& embedder) {
  if (opaque) {
    Verdict v;
    v.accept = CanonicalText(query) == CanonicalText(cached_query);
    v.p_same = v.accept ? 1 : 0;
    v.reason = v.accept ? "" : "opaque";
    return v;
  }
  return verifier.Verify(query, cached_query, cosine, embedder);
}

std::string ScopeKey(const ScopeSpec& s) {
  // The namespace stays readable (invalidation by namespace needs no lookup table).
  return s.ns + "|" + HashHex(s.model + '\x1f' + s.context + '\x1f' + s.sampling);
}

namespace {

Status Readable(const char* key, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return InvalidArgument(std::string(key) + ": cannot read '" + path +
                           "': " + std::strerror(errno));
  std::fclose(f);
  return Status::Ok();
}

}  // namespace

StatusOr<RedisOptions> RedisOptionsFor(const CacheConfig& config) {
  auto parsed = ParseRedisAddress(config.redis);
  if (!parsed.ok()) return parsed.status().WithContext("cache.redis");
  RedisOptions o = std::move(parsed).value();
  o.command_timeout = std::chrono::milliseconds(config.redis_timeout_ms);
  if (!config.redis_user.empty()) {
    if (!o.user.empty() && o.user != config.redis_user)
      return InvalidArgument("cache.redis_user and the user in cache.redis differ: name one");
    o.user = config.redis_user;
  }
  if (!config.redis_password_file.empty()) {
    if (!o.password.empty()) {
      return InvalidArgument(
          "cache.redis holds a password and cache.redis_password_file names one: keep one");
    }
    FRUGAL_RETURN_IF_ERROR(Readable("cache.redis_password_file", config.redis_password_file));
    std::ifstream f(config.redis_password_file, std::ios::binary);
    std::getline(f, o.password);
    if (!o.password.empty() && o.password.back() == '\r') o.password.pop_back();
    if (o.password.empty()) {
      return InvalidArgument("cache.redis_password_file: the first line of '" +
                             config.redis_password_file + "' is empty");
    }
  } else if (o.password.empty()) {
    if (const char* env = std::getenv("FRUGAL_REDIS_PASSWORD"); env != nullptr) o.password = env;
  }
  if (!o.user.empty() && o.password.empty()) {
    return InvalidArgument("cache.redis: user '" + o.user +
                           "' without a password (cache.redis_password_file, the address's "
                           "user:password@ or FRUGAL_REDIS_PASSWORD)");
  }
  o.tls = o.tls || config.redis_tls;
  const std::pair<const char*, const std::string*> tls_files[] = {
      {"cache.redis_tls_ca_file", &config.redis_tls_ca_file},
      {"cache.redis_tls_cert_file", &config.redis_tls_cert_file},
      {"cache.redis_tls_key_file", &config.redis_tls_key_file}};
  for (const auto& [key, path] : tls_files) {
    if (path->empty()) continue;
    if (!o.tls)
      return InvalidArgument(std::string(key) +
                             " needs TLS (cache.redis_tls: true, or a rediss:// address)");
    FRUGAL_RETURN_IF_ERROR(Readable(key, *path));
  }
  if (!config.redis_tls_server_name.empty() && !o.tls) {
    return InvalidArgument(
        "cache.redis_tls_server_name needs TLS (cache.redis_tls: true, or a rediss:// address)");
  }
  if (config.redis_tls_cert_file.empty() != config.redis_tls_key_file.empty()) {
    return InvalidArgument(
        "cache.redis_tls_cert_file and cache.redis_tls_key_file go together (a client "
        "certificate and its key)");
  }
  o.tls_ca_file = config.redis_tls_ca_file;
  o.tls_cert_file = config.redis_tls_cert_file;
  o.tls_key_file = config.redis_tls_key_file;
  o.tls_server_name = config.redis_tls_server_name;
  return o;
}

Status ValidateRedisConfig(const CacheConfig& config) {
  if (!config.redis.empty()) return RedisOptionsFor(config).status();
  const std::pair<const char*, bool> set[] = {
      {"cache.redis_user", !config.redis_user.empty()},
      {"cache.redis_password_file", !config.redis_password_file.empty()},
      {"cache.redis_tls", config.redis_tls},
      {"cache.redis_tls_ca_file", !config.redis_tls_ca_file.empty()},
      {"cache.redis_tls_cert_file", !config.redis_tls_cert_file.empty()},
      {"cache.redis_tls_key_file", !config.redis_tls_key_file.empty()},
      {"cache.redis_tls_server_name", !config.redis_tls_server_name.empty()}};
  for (const auto& [key, on] : set) {
    if (on) return InvalidArgument(std::string(key) + " is set but cache.redis is not");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Cache>> OpenCache(std::shared_ptr<Embedder> embedder,
                                           const CacheConfig& config) {
  CacheOptions co;
  co.threshold = config.threshold;
  co.namespace_threshold = config.namespace_threshold;
  co.exact_match = config.exact_match;
  co.hnsw.m = static_cast<size_t>(config.hnsw_m);
  co.hnsw.ef_construction = static_cast<size_t>(config.hnsw_ef_construction);
  co.hnsw.ef_search = static_cast<size_t>(config.hnsw_ef_search);
  co.ttl = std::chrono::seconds(config.ttl_s);
  co.capacity = static_cast<size_t>(config.capacity);
  co.snapshot_path = config.snapshot;
  co.snapshot_interval = std::chrono::seconds(config.snapshot_interval_s);
  if (config.redis.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(auto c, SemanticCache::Open(std::move(embedder), std::move(co)));
    return std::unique_ptr<Cache>(std::move(c));
  }
  RedisCacheOptions ro;
  ro.cache = std::move(co);
  FRUGAL_ASSIGN_OR_RETURN(ro.redis, RedisOptionsFor(config));
  ro.prefix = config.redis_prefix;
  FRUGAL_ASSIGN_OR_RETURN(auto c, RedisCache::Open(std::move(embedder), std::move(ro)));
  return std::unique_ptr<Cache>(std::move(c));
}

}  // namespace frugal::cache
