// The learned hit decision (docs/cache.md, "The decision"): a small MLP over features of the two
// queries' sentence vectors (the shipped one is five MLPs side by side, their logits averaged),
// trained offline by scripts/train_cache_decision.py on public intent and paraphrase data and the
// project's own pairs, and shipped per embedder in data/cache_decision/<embedder>.json (compiled
// in, found by the embedder's fingerprint).
//
// LearnedVerifier decides in two steps:
//  1. The hard vetoes of the rule verifier that are right whatever the wording (verifier.h): the
//     two queries name other quantities, one is negated, one uses the opposite of a word of the
//     other, a long message differs in content, a query is longer than the verifier reads.
//  2. A hit when both texts have the same content up to synonyms, stems, typos, fillers and
//     notation (the rule verifier's strict reading: the same question typed again), or when
//     P(same) from the model reaches the threshold the dev-split calibration of the query's
//     language (en / zh) gives for the target precision (cache.target_precision). The
//     calibration counts this whole decision's hits (step 1 and the strict reading included,
//     Verdict::same_content), not the score's alone.
//
// Features (DecisionFeatures; the training script computes the same): |u - v| and u * v of the
// unit vectors (2 x dim), their cosine, and four overlap shares of the texts (words and Han
// characters, Han character bigrams, whether Chinese, the length ratio), which do not depend on
// how a Chinese text is segmented.
//
// Thread safety: the model is immutable; LearnedVerifier's methods are const and may run
// concurrently.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/embedder.h"
#include "cache/verifier.h"
#include "frugal/status.h"

namespace frugal::cache {

inline constexpr int kNumOverlapFeatures = 4;
inline constexpr const char* kOverlapFeatureNames[kNumOverlapFeatures] = {
    "unit_jaccard", "han_bigram_jaccard", "han", "length_ratio"};

// The query's language for the calibration: "zh" when either text has a Han character.
enum class DecisionLang { kEn = 0, kZh = 1 };

struct CalibrationPoint {
  double threshold = 0;  // P(same) >= this is a hit
  double precision = 0;  // on the dev split, candidates of this language at this threshold
  double recall = 0;
};

struct DecisionModel {
  std::string embedder;                                   // what it was trained for (display)
  std::string fingerprint;                                // Embedder::fingerprint() it applies to
  float recall_threshold = kUncalibratedRecallThreshold;  // candidates: cosine >= this
  int dim = 0;                                            // sentence vector size
  int hidden = 0;                                         // MLP hidden units
  std::vector<float> mu, sd;  // feature standardisation (2 dim + 1 + kNumOverlapFeatures each)
  std::vector<float> w1;      // hidden x inputs, row-major
  std::vector<float> b1, w2;  // hidden each
  float b2 = 0;
  std::vector<CalibrationPoint> calibration[2];  // by DecisionLang, thresholds ascending

  int inputs() const { return 2 * dim + 1 + kNumOverlapFeatures; }
  // P(same) for features of DecisionFeatures (inputs() floats).
  double Score(std::span<const float> features) const;
  // The lowest threshold from which the dev-split precision of `lang` stays >= target
  // (non-decreasing in target); 1.0 (almost never a hit) when no threshold reaches it.
  double ThresholdFor(DecisionLang lang, double target_precision) const;
};

// Parses a decision file (data/cache_decision/*.json). InvalidArgument says what is wrong: not
// JSON, a missing member, arrays of the wrong size, non-finite numbers, an empty or unsorted
// calibration.
StatusOr<DecisionModel> ParseDecisionModel(std::string_view json);
// The model shipped for this fingerprint (compiled in), or null.
const DecisionModel* FindDecisionModel(const std::string& fingerprint);

// The model's input for a pair: u and v are the two queries' vectors (unit length or not), a
// and b their texts.
std::vector<float> DecisionFeatures(std::span<const float> u, std::span<const float> v,
                                    std::string_view a, std::string_view b);
DecisionLang LangOf(std::string_view a, std::string_view b);

class LearnedVerifier : public HitVerifier {
 public:
  LearnedVerifier(std::shared_ptr<const DecisionModel> model, double target_precision);
  // Embeds both texts (a store that hands back no vectors).
  Verdict Verify(std::string_view query, std::string_view cached, float cosine,
                 Embedder& embedder) const override;
  Verdict VerifyWithVectors(std::string_view query, std::string_view cached, float cosine,
                            Embedder& embedder, const PairVectors& vectors) const override;
  const char* name() const override { return "learned"; }
  // The decision on the vectors (step 1 and 2).
  Verdict Decide(std::string_view query, std::string_view cached, std::span<const float> qv,
                 std::span<const float> cv) const;
  const DecisionModel& model() const { return *model_; }
  double threshold(DecisionLang lang) const { return threshold_[static_cast<int>(lang)]; }
  double target_precision() const { return target_; }

 private:
  std::shared_ptr<const DecisionModel> model_;
  double target_;
  double threshold_[2];
};

}  // namespace frugal::cache
