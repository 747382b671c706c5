// The hit decision. The index proposes candidates (cosine >= the embedder's recall threshold);
// the verifier decides whether a cached answer may answer the query.
//
// PairVerifier, the default, in three steps (docs/cache.md, "The decision"):
//  1. Refusals no score can overturn: the two queries name other quantities, one is negated,
//     one uses the opposite of a word of the other, they ask different questions (how long /
//     how) (text_signals.h), or a query is longer than the verifier reads (kMaxSignalBytes).
//     A long message (over kLongContentUnits content units on a side) must match in content
//     exactly: a sentence added to a long text is a small share of it, and the model reads
//     shares.
//  2. Features of the pair: the cosine, what content each side has that the other lacks (after
//     synonyms, stems and typos), and whether that difference is on one side only (an added or
//     dropped qualifier) or on both (a swapped object, or a synonym the lexicon lacks). How close
//     the embedder places the two differing spans was measured and left out: for
//     multilingual-e5-small it is the same for synonyms and for swapped objects (docs/cache.md).
//  3. A logistic model over those features, trained on data/cache_train (never on an evaluation
//     set) by scripts/train_cache_verifier.py, accepts when P(same) >= its operating point. The
//     model, the operating point and the recall threshold are calibrated per embedder and
//     recorded in data/cache_calibration/<embedder>.json with the precision they were chosen
//     for; an embedder without a calibration gets the strict rule: no difference in content at
//     all, and the cache's configured threshold.
//
// Thread safety: Verify is const and may run concurrently (the embedder serialises itself).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/embedder.h"
#include "cache/text_signals.h"
#include "frugal/status.h"

namespace frugal::cache {

struct Verdict {
  bool accept = false;
  double p_same = 0;  // the model's probability (1 / 0 for rule decisions)
  const char* reason =
      "";  // why it refused: "numbers", "negation", "opposite", "too_long", "score", ...
  // The learned decision accepted it by the strict reading (the same content on both sides),
  // whatever the score: what its calibration counts as a hit at every threshold.
  bool same_content = false;
};

// The two queries' vectors by the lookup's embedder, when the caller has them (empty: not known).
struct PairVectors {
  std::span<const float> query, cached;
};

class HitVerifier {
 public:
  virtual ~HitVerifier() = default;
  // Whether the answer cached for `cached` may answer `query`, whose vectors (by `embedder`)
  // have cosine `cosine`. A verifier may embed more text with `embedder`.
  virtual Verdict Verify(std::string_view query, std::string_view cached, float cosine,
                         Embedder& embedder) const = 0;
  // The same, with the vectors when the caller has them (a verifier that reads them need not
  // embed again); by default Verify.
  virtual Verdict VerifyWithVectors(std::string_view query, std::string_view cached, float cosine,
                                    Embedder& embedder, const PairVectors& /*vectors*/) const {
    return Verify(query, cached, cosine, embedder);
  }
  virtual const char* name() const = 0;
};

// The features the model reads, in order (kFeatureNames). Computed the same way for training
// (`frugal cache-eval --features`) and serving.
inline constexpr const char* kFeatureNames[] = {
    "cosine",              // sentence cosine
    "one_sided",           // content only one side has (1/0)
    "both_sided",          // each side has content the other lacks (1/0)
    "unmatched",           // unmatched content units, both sides (capped at 8)
    "unmatched_share",     // unmatched / all content units
    "max_side",            // the larger side's unmatched units (capped at 8)
    "question_one_sided",  // a wh-question against a yes/no question (1/0)
    "typos",               // units matched only as misspellings (capped at 4)
    "han",                 // Chinese text (1/0)
    "short",               // fewer than 3 content units on the shorter side (1/0)
    "cosine_one",   // cosine x one_sided: what the cosine says depends on the kind of difference
    "cosine_both",  // cosine x both_sided
};
inline constexpr int kNumFeatures =
    static_cast<int>(sizeof(kFeatureNames) / sizeof(kFeatureNames[0]));
inline constexpr int kLongContentUnits = 40;
// The "long_differs" veto's condition: a side of over kLongContentUnits content units, and some
// content of either side unmatched by the other.
inline bool LongContentDiffers(const PairDiff& d) {
  return (d.content_a > kLongContentUnits || d.content_b > kLongContentUnits) &&
         (d.unmatched_a > 0 || d.unmatched_b > 0);
}

struct PairFeatures {
  PairDiff diff;
  const char* veto = nullptr;  // set when step 1 refuses: the other fields are then unset
  double x[kNumFeatures] = {};
};

// Steps 1 and 2 (text only: no embedding beyond the cosine given).
PairFeatures ComputePairFeatures(std::string_view query, std::string_view cached, float cosine);

// The candidate cosine for an embedder without a calibration (the figure published for bge-m3;
// calibrated embedders carry their own, data/cache_calibration).
inline constexpr float kUncalibratedRecallThreshold = 0.92f;

// A verifier model and where it was calibrated.
struct VerifierCalibration {
  std::string embedder;                                   // what it was made for (display)
  std::string fingerprint;                                // Embedder::fingerprint() it applies to
  float recall_threshold = kUncalibratedRecallThreshold;  // candidates: cosine >= this
  std::vector<double> weights;                            // one per feature (kFeatureNames order)
  double bias = 0;
  double operating_point = 0.5;  // accept when P(same) >= this
  double target_precision = 0;   // what the operating point was chosen for
};

// Parses a calibration file's JSON.
StatusOr<VerifierCalibration> ParseCalibration(std::string_view json);
// The calibration shipped for this fingerprint (data/cache_calibration/, compiled in), or null.
const VerifierCalibration* FindCalibration(const std::string& fingerprint);

class PairVerifier : public HitVerifier {
 public:
  // Without a calibration: the strict rule (no content difference at all).
  explicit PairVerifier(std::shared_ptr<const VerifierCalibration> calibration = nullptr)
      : cal_(std::move(calibration)) {}
  Verdict Verify(std::string_view query, std::string_view cached, float cosine,
                 Embedder& embedder) const override;
  const char* name() const override { return cal_ ? "pair-classifier" : "strict"; }
  // The decision on computed features.
  Verdict Decide(const PairFeatures& f) const;
  const VerifierCalibration* calibration() const { return cal_.get(); }

 private:
  std::shared_ptr<const VerifierCalibration> cal_;
};

// Which decision the cache makes (cache.decision) and at what precision (cache.target_precision).
enum class DecisionKind {
  kLearned,  // the learned model (decision.h) where the embedder has one, else kRules
  kRules,    // the previous decision: PairVerifier with the embedder's calibration
};
struct DecisionOptions {
  DecisionKind kind = DecisionKind::kLearned;
  double target_precision = 0.95;  // dev-split precision the learned threshold is picked for
};
// "learned" / "rules"; InvalidArgument for anything else.
StatusOr<DecisionKind> ParseDecisionKind(std::string_view name);
const char* DecisionKindName(DecisionKind kind);

// The verifier for an embedder: the learned model (decision.h) at options.target_precision when
// asked for and shipped for it; else its calibration's PairVerifier, or the strict rule.
std::shared_ptr<const HitVerifier> DefaultVerifier(const Embedder& embedder,
                                                   const DecisionOptions& options = {});
// The candidate threshold for an embedder with that decision: the learned model's, else its
// calibration's, else kUncalibratedRecallThreshold.
float RecallThreshold(const Embedder& embedder, const DecisionOptions& options = {});

}  // namespace frugal::cache
