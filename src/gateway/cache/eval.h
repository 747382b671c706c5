// Quality of cache hits on labelled query pairs (`frugal cache-eval`): for each threshold, with
// and without the hit verifier, how many of the hits a cache would serve are right (precision)
// and how many of the same-intent pairs it would serve (recall).
#pragma once

#include <string>
#include <vector>

#include "frugal/status.h"
#include "gateway/cache/embedder.h"
#include "gateway/cache/guard.h"

namespace frugal::cache {

// One line of a pairs file: {"a": ..., "b": ..., "same": true|false} (+ optional "kind", "lang").
struct LabelledPair {
  std::string a, b;
  bool same = false;
  std::string kind, lang;
};
StatusOr<std::vector<LabelledPair>> LoadPairs(const std::string& path);

struct EvalRow {
  float threshold = 0;
  bool guard = false;
  double precision = 0;  // hits that were right / hits (1 when there are no hits)
  double recall = 0;     // same-intent pairs served / same-intent pairs
  int64_t tp = 0, fp = 0, fn = 0, tn = 0;
};

struct PairScore {
  float similarity = 0;
  bool guard_accepts = false;
};

// Embeds both sides of every pair (b is the lookup, a the cached query) and scores them the way
// SemanticCache::Lookup decides a hit.
StatusOr<std::vector<PairScore>> ScorePairs(Embedder& embedder, const HitVerifier& verifier,
                                            const std::vector<LabelledPair>& pairs, double max_unknown_share = 0.1);
std::vector<EvalRow> Evaluate(const std::vector<LabelledPair>& pairs, const std::vector<PairScore>& scores,
                              const std::vector<float>& thresholds);

}  // namespace frugal::cache
