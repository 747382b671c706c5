#include "cache/verifier.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "cache/shipped.h"
#include "cache_calibrations.h"  // generated from data/cache_calibration/*.json

namespace frugal::cache {
namespace {

double Cap(int v, int cap) { return static_cast<double>(std::min(v, cap)); }

}  // namespace

PairFeatures ComputePairFeatures(std::string_view query, std::string_view cached, float cosine) {
  PairFeatures f;
  const TextSignals a = AnalyzeText(cached), b = AnalyzeText(query);
  f.diff = Compare(a, b);
  const PairDiff& d = f.diff;
  if (d.too_long) {
    f.veto = "too_long";
    return f;
  }
  if (d.numbers_differ) {
    f.veto = "numbers";
  } else if (d.negation_differs) {
    f.veto = "negation";
  } else if (d.opposite) {
    f.veto = "opposite";
  } else if (d.question_differs) {
    f.veto = "question";
  } else if (LongContentDiffers(d)) {
    f.veto = "long_differs";
  }
  if (f.veto != nullptr) return f;
  const bool one_sided = (d.unmatched_a > 0) != (d.unmatched_b > 0);
  const bool both_sided = d.unmatched_a > 0 && d.unmatched_b > 0;
  const int content = d.content_a + d.content_b, unmatched = d.unmatched_a + d.unmatched_b;
  double* x = f.x;
  x[0] = cosine;
  x[1] = one_sided ? 1 : 0;
  x[2] = both_sided ? 1 : 0;
  x[3] = Cap(unmatched, 8);
  x[4] = content > 0 ? static_cast<double>(unmatched) / content : 0;
  x[5] = Cap(std::max(d.unmatched_a, d.unmatched_b), 8);
  x[6] = d.question_one_sided ? 1 : 0;
  x[7] = Cap(d.typo_matches, 4);
  x[8] = a.has_han || b.has_han ? 1 : 0;
  x[9] = std::min(d.content_a, d.content_b) < 3 ? 1 : 0;
  x[10] = one_sided ? cosine : 0;
  x[11] = both_sided ? cosine : 0;
  return f;
}

Verdict PairVerifier::Decide(const PairFeatures& f) const {
  Verdict v;
  if (f.veto != nullptr) {
    v.reason = f.veto;
    return v;
  }
  if (!cal_) {
    // Uncalibrated: the same content on both sides (up to synonyms, stems, typos and fillers).
    const bool same =
        f.diff.unmatched_a == 0 && f.diff.unmatched_b == 0 && !f.diff.question_one_sided;
    v.accept = same;
    v.p_same = same ? 1 : 0;
    v.reason = same ? "" : "content";
    return v;
  }
  double z = cal_->bias;
  for (int i = 0; i < kNumFeatures; ++i) z += cal_->weights[static_cast<size_t>(i)] * f.x[i];
  v.p_same = 1.0 / (1.0 + std::exp(-z));
  v.accept = v.p_same >= cal_->operating_point;
  v.reason = v.accept ? "" : "score";
  return v;
}

Verdict PairVerifier::Verify(std::string_view query, std::string_view cached, float cosine,
                             Embedder& /*embedder*/) const {
  return Decide(ComputePairFeatures(query, cached, cosine));
}

StatusOr<VerifierCalibration> ParseCalibration(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("a verifier calibration must be a JSON object");
  VerifierCalibration c;
  try {
    c.embedder = j.at("embedder").get<std::string>();
    c.fingerprint = j.at("fingerprint").get<std::string>();
    c.recall_threshold = j.at("recall_threshold").get<float>();
    const auto& m = j.at("verifier");
    const auto names = m.at("features").get<std::vector<std::string>>();
    if (names.size() != static_cast<size_t>(kNumFeatures)) {
      return InvalidArgument("calibration for " + c.embedder + ": " + std::to_string(names.size()) +
                             " features, this build has " + std::to_string(kNumFeatures));
    }
    for (int i = 0; i < kNumFeatures; ++i) {
      if (names[static_cast<size_t>(i)] != kFeatureNames[i]) {
        return InvalidArgument("calibration for " + c.embedder + ": feature " + std::to_string(i) +
                               " is '" + names[static_cast<size_t>(i)] + "', this build has '" +
                               kFeatureNames[i] + "'");
      }
    }
    c.weights = m.at("weights").get<std::vector<double>>();
    c.bias = m.at("bias").get<double>();
    c.operating_point = m.at("operating_point").get<double>();
    c.target_precision = m.at("target_precision").get<double>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("bad verifier calibration: ") + e.what());
  }
  if (c.weights.size() != static_cast<size_t>(kNumFeatures))
    return InvalidArgument("calibration: one weight per feature");
  if (!(c.recall_threshold > 0 && c.recall_threshold <= 1))
    return InvalidArgument("calibration: recall_threshold outside (0, 1]");
  if (!(c.operating_point >= 0 && c.operating_point <= 1))
    return InvalidArgument("calibration: operating_point outside [0, 1]");
  return c;
}

const VerifierCalibration* FindCalibration(const std::string& fingerprint) {
  return FindShipped<VerifierCalibration>(kCacheCalibrationJson, ParseCalibration, fingerprint);
}

StatusOr<DecisionKind> ParseDecisionKind(std::string_view name) {
  if (name == "learned") return DecisionKind::kLearned;
  if (name == "rules") return DecisionKind::kRules;
  return InvalidArgument("cache.decision must be 'learned' or 'rules', not '" + std::string(name) +
                         "'");
}

const char* DecisionKindName(DecisionKind kind) {
  return kind == DecisionKind::kLearned ? "learned" : "rules";
}

}  // namespace frugal::cache
