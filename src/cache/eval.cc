#include "cache/eval.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "cache/lookup.h"
#include "cache/vector_index.h"

namespace frugal::cache {

std::string DetectLang(const std::string& a, const std::string& b) {
  for (const std::string* s : {&a, &b}) {
    const TextSignals t =
        AnalyzeText(std::string_view(*s).substr(0, std::min<size_t>(s->size(), 4096)));
    if (t.has_han) return "zh";
  }
  return "en";
}

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
    if (!j.contains("same") || !j["same"].is_boolean())
      return InvalidArgument(where + "needs a boolean \"same\"");
    LabelledPair p;
    p.a = j["a"].get<std::string>();
    p.b = j["b"].get<std::string>();
    p.same = j["same"].get<bool>();
    if (j.contains("kind") && j["kind"].is_string()) p.kind = j["kind"].get<std::string>();
    if (j.contains("lang") && j["lang"].is_string()) p.lang = j["lang"].get<std::string>();
    if (p.lang.empty()) p.lang = DetectLang(p.a, p.b);
    out.push_back(std::move(p));
  }
  if (out.empty()) return InvalidArgument(path + " holds no pairs");
  return out;
}

StatusOr<std::vector<PairScore>> ScorePairs(Embedder& embedder, const PairVerifier& verifier,
                                            const std::vector<LabelledPair>& pairs,
                                            double max_unknown_share,
                                            const LearnedVerifier* learned) {
  std::vector<PairScore> out;
  out.reserve(pairs.size());
  // Pair sets reuse their texts (an intent set's query is in several pairs): each embedded once.
  std::unordered_map<std::string, std::vector<float>> vectors;
  auto embed = [&](const std::string& text) -> StatusOr<const std::vector<float>*> {
    auto it = vectors.find(text);
    if (it == vectors.end()) {
      FRUGAL_ASSIGN_OR_RETURN(std::vector<float> v, embedder.Embed(text));
      it = vectors.emplace(text, std::move(v)).first;
    }
    return &it->second;
  };
  for (const auto& p : pairs) {
    PairScore s;
    // As the cache: a text over the verifier's cap is never embedded.
    if (p.a.size() > kMaxSignalBytes || p.b.size() > kMaxSignalBytes) {
      s.features.veto = "too_long";
      s.rules = verifier.Decide(s.features);
      s.verdict = s.rules;
      out.push_back(std::move(s));
      continue;
    }
    FRUGAL_ASSIGN_OR_RETURN(const std::vector<float>* a, embed(p.a));
    FRUGAL_ASSIGN_OR_RETURN(const std::vector<float>* b, embed(p.b));
    s.similarity = Similarity(*a, *b);
    s.opaque = embedder.UnknownShare(p.b) > max_unknown_share;
    s.features = ComputePairFeatures(p.b, p.a, s.similarity);
    s.rules = s.opaque ? VerifyHit(verifier, true, p.b, p.a, s.similarity, embedder)
                       : verifier.Decide(s.features);
    s.verdict = s.rules;
    if (learned != nullptr) {
      s.verdict = s.opaque ? VerifyHit(*learned, true, p.b, p.a, s.similarity, embedder)
                           : learned->Decide(p.b, p.a, *b, *a);
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool WouldHit(const PairScore& s, float threshold, bool verifier) {
  // A pair over the length cap is never embedded: similarity 0, under any threshold.
  return s.similarity >= threshold && (!verifier || s.verdict.accept);
}

std::vector<EvalRow> Evaluate(const std::vector<PairScore>& scores,
                              const std::vector<LabelledPair>& pairs,
                              const std::vector<float>& thresholds) {
  std::vector<EvalRow> rows;
  for (float t : thresholds) {
    for (bool guard : {false, true}) {
      EvalRow r;
      r.threshold = t;
      r.guard = guard;
      for (size_t i = 0; i < pairs.size(); ++i)
        r.c.Add(WouldHit(scores[i], t, guard), pairs[i].same);
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace frugal::cache
