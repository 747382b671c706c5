#include "cache/cache_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "cache/cache.h"

namespace frugal::cache {

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

}  // namespace frugal::cache
