// The metrics every cache backend exports, under the same names (frugal_cache_*). A lookup's
// outcome is counted by the one lookup pipeline (lookup.h); a backend adds what only it has
// (the Redis cache's frugal_cache_backend_errors and frugal_cache_backend_up).
//
// Thread safety: the counters and histograms may be used from any thread once registered.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "common/metrics.h"

namespace frugal::cache {

struct LookupResult;

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

}  // namespace frugal::cache
