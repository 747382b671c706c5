// Quality of cache hits on labelled query pairs (`frugal cache-eval`): how many of the hits a
// cache would serve are right (precision) and how many of the same-intent pairs it would serve
// (recall), for the shipped decision (the embedder's recall threshold + its calibrated
// verifier), by language and kind, and for a sweep of cosine thresholds with and without the
// verifier.
#pragma once

#include <string>
#include <vector>

#include "cache/decision.h"
#include "cache/embedder.h"
#include "cache/verifier.h"
#include "frugal/status.h"

namespace frugal::cache {

// One line of a pairs file: {"a": ..., "b": ..., "same": true|false} (+ optional "kind", "lang").
// b is the lookup, a the cached query. A missing lang is detected from the text (DetectLang).
struct LabelledPair {
  std::string a, b;
  bool same = false;
  std::string kind, lang;
};
StatusOr<std::vector<LabelledPair>> LoadPairs(const std::string& path);
// "zh" when either text has a Chinese character, else "en".
std::string DetectLang(const std::string& a, const std::string& b);

struct PairScore {
  float similarity = 0;
  PairFeatures features;  // the rule verifier's inputs (`cache-eval --features`)
  Verdict verdict;        // the decision's (learned when given, else rules), whatever the cosine
  Verdict rules;          // the rule verifier's (PairVerifier), whatever the cosine
  bool opaque = false;    // the lookup has too many tokens the embedder cannot see
};

// Embeds both sides of every pair (each text once) and asks the verifiers, as
// SemanticCache::Lookup does: `learned` when given (verdict), and the rule verifier (rules).
StatusOr<std::vector<PairScore>> ScorePairs(Embedder& embedder, const PairVerifier& verifier,
                                            const std::vector<LabelledPair>& pairs,
                                            double max_unknown_share = 0.1,
                                            const LearnedVerifier* learned = nullptr);

struct Confusion {
  int64_t tp = 0, fp = 0, fn = 0, tn = 0;
  double precision() const {
    return tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 1.0;
  }
  double recall() const {
    return tp + fn > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 0.0;
  }
  void Add(bool hit, bool same) { (hit ? (same ? tp : fp) : (same ? fn : tn)) += 1; }
};

// Whether the cache would serve pair i: cosine >= threshold and (verifier off or it accepts).
bool WouldHit(const PairScore& s, float threshold, bool verifier);

struct EvalRow {
  float threshold = 0;
  bool guard = false;
  Confusion c;
};
std::vector<EvalRow> Evaluate(const std::vector<PairScore>& scores,
                              const std::vector<LabelledPair>& pairs,
                              const std::vector<float>& thresholds);

}  // namespace frugal::cache
