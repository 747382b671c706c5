#include "cache/cache.h"

#include <cstdio>
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

std::string ScopeKey(const ScopeSpec& s) {
  // The namespace stays readable (invalidation by namespace needs no lookup table).
  return s.ns + "|" + HashHex(s.model + '\x1f' + s.context + '\x1f' + s.sampling);
}

StatusOr<std::unique_ptr<Cache>> OpenCache(std::shared_ptr<Embedder> embedder,
                                           const CacheConfig& config) {
  CacheOptions co;
  co.threshold = config.threshold;
  co.namespace_threshold = config.namespace_threshold;
  co.exact_match = config.exact_match;
  co.decision.kind = config.decision;
  co.decision.target_precision = config.target_precision;
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
