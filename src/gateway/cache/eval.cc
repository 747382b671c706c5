#include "gateway/cache/eval.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "gateway/cache/semantic_cache.h"
#include "gateway/cache/vector_index.h"

namespace frugal::cache {

StatusOr<std::vector<LabelledPair>> LoadPairs(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot open " + path);
  std::vector<LabelledPair> out;
  std::string line;
  for (int64_t n = 1; std::getline(f, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + "not a JSON object");
    if (!j.contains("a") || !j["a"].is_string() || !j.contains("b") || !j["b"].is_string()) {
      return InvalidArgument(where + "needs string fields \"a\" and \"b\"");
    }
    if (!j.contains("same") || !j["same"].is_boolean()) return InvalidArgument(where + "needs a boolean \"same\"");
    LabelledPair p;
    p.a = j["a"].get<std::string>();
    p.b = j["b"].get<std::string>();
    p.same = j["same"].get<bool>();
    if (j.contains("kind") && j["kind"].is_string()) p.kind = j["kind"].get<std::string>();
    if (j.contains("lang") && j["lang"].is_string()) p.lang = j["lang"].get<std::string>();
    out.push_back(std::move(p));
  }
  if (out.empty()) return InvalidArgument(path + " holds no pairs");
  return out;
}

StatusOr<std::vector<PairScore>> ScorePairs(Embedder& embedder, const HitVerifier& verifier,
                                            const std::vector<LabelledPair>& pairs, double max_unknown_share) {
  std::vector<PairScore> out;
  out.reserve(pairs.size());
  for (const auto& p : pairs) {
    FRUGAL_ASSIGN_OR_RETURN(std::vector<float> a, embedder.Embed(p.a));
    FRUGAL_ASSIGN_OR_RETURN(std::vector<float> b, embedder.Embed(p.b));
    const bool opaque = embedder.UnknownShare(p.b) > max_unknown_share;
    out.push_back({Similarity(a, b), VerifyHit(verifier, opaque, p.b, p.a)});
  }
  return out;
}

std::vector<EvalRow> Evaluate(const std::vector<LabelledPair>& pairs, const std::vector<PairScore>& scores,
                              const std::vector<float>& thresholds) {
  std::vector<EvalRow> rows;
  for (float t : thresholds) {
    for (bool guard : {false, true}) {
      EvalRow r;
      r.threshold = t;
      r.guard = guard;
      for (size_t i = 0; i < pairs.size(); ++i) {
        const bool hit = scores[i].similarity >= t && (!guard || scores[i].guard_accepts);
        if (hit) {
          (pairs[i].same ? r.tp : r.fp) += 1;
        } else {
          (pairs[i].same ? r.fn : r.tn) += 1;
        }
      }
      r.precision = r.tp + r.fp > 0 ? static_cast<double>(r.tp) / static_cast<double>(r.tp + r.fp) : 1.0;
      r.recall = r.tp + r.fn > 0 ? static_cast<double>(r.tp) / static_cast<double>(r.tp + r.fn) : 0.0;
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace frugal::cache
