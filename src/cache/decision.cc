#include "cache/decision.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>

#include "cache/shipped.h"
#include "cache_decisions.h"  // generated from data/cache_decision/*.json
#include "kernels/kernels.h"

namespace frugal::cache {
namespace {

// The Han ranges the training script's HAN pattern matches: CJK Unified Ideographs, Extension A
// and the compatibility ideographs.
bool IsHan(char32_t c) {
  return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF);
}

// Next code point of UTF-8 text (malformed bytes read as themselves, never a Han character).
char32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 1;
  if (*i + static_cast<size_t>(len) > s.size()) len = 1;
  char32_t c = len == 1 ? b0 : (b0 & (0x7F >> len));
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + static_cast<size_t>(k)]);
    if ((b >> 6) != 2) {
      len = 1;
      c = b0;
      break;
    }
    c = (c << 6) | (b & 0x3F);
  }
  *i += static_cast<size_t>(len);
  return c;
}

// Words (runs of ASCII letters and digits, lower-cased) and single Han characters (as code
// points), in order.
struct Units {
  std::vector<std::string> words;
  std::vector<char32_t> han;
};

Units UnitsOf(std::string_view s) {
  Units u;
  std::string word;
  size_t i = 0;
  while (i < s.size()) {
    const char32_t c = NextCodePoint(s, &i);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      word.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
      continue;
    }
    if (!word.empty()) u.words.push_back(std::move(word));
    word.clear();
    if (IsHan(c)) u.han.push_back(c);
  }
  if (!word.empty()) u.words.push_back(std::move(word));
  return u;
}

template <typename T, typename Hash = std::hash<T>>
double Jaccard(const std::vector<T>& a, const std::vector<T>& b) {
  const std::unordered_set<T, Hash> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  if (sa.empty() && sb.empty()) return 1.0;
  size_t both = 0;
  for (const T& x : sa) both += sb.count(x);
  return static_cast<double>(both) / static_cast<double>(sa.size() + sb.size() - both);
}

std::vector<std::string> WordsAndHan(const Units& u) {
  std::vector<std::string> out = u.words;
  for (char32_t c : u.han) {
    // A Han character's key: a byte no word has, then its code point (never equal to a word).
    std::string key(1, '\x01');
    key.append(reinterpret_cast<const char*>(&c), sizeof c);
    out.push_back(std::move(key));
  }
  return out;
}

std::vector<uint64_t> HanBigrams(const Units& u) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 1 < u.han.size(); ++i)
    out.push_back((static_cast<uint64_t>(u.han[i]) << 32) | u.han[i + 1]);
  return out;
}

// Vetoes the learned decision keeps (verifier.h step 1): each refuses pairs whose answers differ
// whatever the wording. "question" (how vs when) is left to the model: on the dev split it
// refused more true paraphrases than false hits (docs/cache.md). "negation" refuses where the
// negation is what differs: the rest of the two texts the same but for at most
// kNegationVetoMaxUnmatched content units ("can I cancel" / "why can't I cancel"). Two free
// rewordings often say one thing with a negation and the other without (被拒绝了 / 没通过;
// "my card hasn't arrived" / "where is my card"): those go to the model. On the dev split that
// raised English recall from 0.426 to 0.468 at the same precision (0.930 / 0.929; docs/cache.md).
// A negation with an opposite is no veto either: the two flips cancel.
constexpr int kNegationVetoMaxUnmatched = 2;

bool IsHardVeto(const char* veto, const PairDiff& diff) {
  const std::string_view v = veto;
  if (v == "negation") {
    // A negation and an opposite cancel (not approved / rejected, 没通过 / 被拒绝): the model
    // decides. ComputePairFeatures names one veto: long_differs, after negation, still holds.
    const bool long_differs = LongContentDiffers(diff);
    if (diff.opposite || long_differs) return long_differs;
    return diff.unmatched_a + diff.unmatched_b <= kNegationVetoMaxUnmatched;
  }
  return v == "too_long" || v == "numbers" || v == "opposite" || v == "long_differs";
}

Status CheckFinite(const std::vector<float>& v, const char* what, size_t size) {
  if (v.size() != size) {
    return InvalidArgument(std::string("cache decision: '") + what + "' has " +
                           std::to_string(v.size()) + " values, expected " + std::to_string(size));
  }
  for (float x : v) {
    if (!std::isfinite(x))
      return InvalidArgument(std::string("cache decision: '") + what +
                             "' holds a non-finite value");
  }
  return Status::Ok();
}

}  // namespace

DecisionLang LangOf(std::string_view a, std::string_view b) {
  for (std::string_view s : {a, b}) {
    size_t i = 0;
    while (i < s.size()) {
      if (IsHan(NextCodePoint(s, &i))) return DecisionLang::kZh;
    }
  }
  return DecisionLang::kEn;
}

std::vector<float> DecisionFeatures(std::span<const float> u, std::span<const float> v,
                                    std::string_view a, std::string_view b) {
  const size_t dim = std::min(u.size(), v.size());
  double nu = 0, nv = 0;
  for (size_t i = 0; i < dim; ++i) {
    nu += static_cast<double>(u[i]) * u[i];
    nv += static_cast<double>(v[i]) * v[i];
  }
  const auto su = static_cast<float>(nu > 0 ? 1.0 / std::sqrt(nu) : 0.0);
  const auto sv = static_cast<float>(nv > 0 ? 1.0 / std::sqrt(nv) : 0.0);
  std::vector<float> x(2 * dim + 1 + kNumOverlapFeatures);
  double cos = 0;
  for (size_t i = 0; i < dim; ++i) {
    const float ui = u[i] * su, vi = v[i] * sv;
    x[i] = std::fabs(ui - vi);
    x[dim + i] = ui * vi;
    cos += static_cast<double>(ui) * vi;
  }
  x[2 * dim] = static_cast<float>(cos);
  const Units ua = UnitsOf(a), ub = UnitsOf(b);
  const bool zh = !ua.han.empty() || !ub.han.empty();
  float* o = &x[2 * dim + 1];
  o[0] = static_cast<float>(Jaccard(WordsAndHan(ua), WordsAndHan(ub)));
  o[1] = zh ? static_cast<float>(Jaccard(HanBigrams(ua), HanBigrams(ub))) : 0.0f;
  o[2] = zh ? 1.0f : 0.0f;
  const size_t la = ua.words.size() + ua.han.size(), lb = ub.words.size() + ub.han.size();
  o[3] = static_cast<float>(std::min(la, lb)) / static_cast<float>(std::max<size_t>({la, lb, 1}));
  return x;
}

double DecisionModel::Score(std::span<const float> features) const {
  const auto n = static_cast<size_t>(inputs());
  if (features.size() != n) return 0;
  std::vector<float> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = (features[i] - mu[i]) / sd[i];
  double out = b2;
  for (size_t h = 0; h < static_cast<size_t>(hidden); ++h) {
    // The SIMD dot product of the active CPU level: the shipped model is an ensemble of five
    // MLPs side by side (480 x 773), 0.32 ms per candidate with a scalar loop.
    float acc = DotF32(&w1[h * n], z.data(), static_cast<int64_t>(n)) + b1[h];
    if (acc > 0) out += static_cast<double>(acc) * w2[h];
  }
  return 1.0 / (1.0 + std::exp(-out));
}

double DecisionModel::ThresholdFor(DecisionLang lang, double target_precision) const {
  const auto& c = calibration[static_cast<int>(lang)];
  double best = 1.0;
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (it->precision < target_precision) break;
    best = it->threshold;
  }
  return best;
}

StatusOr<DecisionModel> ParseDecisionModel(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("cache decision: not a JSON object (a truncated or corrupt file?)");
  DecisionModel m;
  try {
    m.embedder = j.at("embedder").get<std::string>();
    m.fingerprint = j.at("fingerprint").get<std::string>();
    if (j.at("kind").get<std::string>() != "mlp")
      return InvalidArgument("cache decision for " + m.embedder + ": kind is not 'mlp'");
    m.recall_threshold = j.at("recall_threshold").get<float>();
    m.dim = j.at("dim").get<int>();
    m.hidden = j.at("hidden").get<int>();
    const auto names = j.at("overlap_features").get<std::vector<std::string>>();
    if (names.size() != static_cast<size_t>(kNumOverlapFeatures))
      return InvalidArgument("cache decision for " + m.embedder + ": overlap features differ");
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != kOverlapFeatureNames[i]) {
        return InvalidArgument("cache decision for " + m.embedder + ": overlap feature " +
                               std::to_string(i) + " is '" + names[i] + "', this build has '" +
                               kOverlapFeatureNames[i] + "'");
      }
    }
    m.mu = j.at("mu").get<std::vector<float>>();
    m.sd = j.at("sd").get<std::vector<float>>();
    m.w1 = j.at("w1").get<std::vector<float>>();
    m.b1 = j.at("b1").get<std::vector<float>>();
    m.w2 = j.at("w2").get<std::vector<float>>();
    m.b2 = j.at("b2").get<float>();
    const auto& cal = j.at("calibration");
    for (const char* lang : {"en", "zh"}) {
      auto& out = m.calibration[std::string_view(lang) == "zh" ? 1 : 0];
      for (const auto& row : cal.at(lang)) {
        out.push_back({row.at(0).get<double>(), row.at(1).get<double>(), row.at(2).get<double>()});
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("cache decision: ") + e.what());
  }
  if (m.dim <= 0 || m.dim > 16384 || m.hidden <= 0 || m.hidden > 4096)
    return InvalidArgument("cache decision for " + m.embedder + ": dim or hidden out of range");
  const auto n = static_cast<size_t>(m.inputs()), h = static_cast<size_t>(m.hidden);
  FRUGAL_RETURN_IF_ERROR(CheckFinite(m.mu, "mu", n));
  FRUGAL_RETURN_IF_ERROR(CheckFinite(m.sd, "sd", n));
  FRUGAL_RETURN_IF_ERROR(CheckFinite(m.w1, "w1", n * h));
  FRUGAL_RETURN_IF_ERROR(CheckFinite(m.b1, "b1", h));
  FRUGAL_RETURN_IF_ERROR(CheckFinite(m.w2, "w2", h));
  if (!std::isfinite(m.b2)) return InvalidArgument("cache decision: 'b2' is not finite");
  for (float s : m.sd) {
    if (!(s > 0)) return InvalidArgument("cache decision: 'sd' holds a value <= 0");
  }
  if (!(m.recall_threshold > 0 && m.recall_threshold <= 1))
    return InvalidArgument("cache decision: recall_threshold outside (0, 1]");
  for (const auto& c : m.calibration) {
    if (c.empty()) return InvalidArgument("cache decision: a language without calibration");
    for (size_t i = 0; i < c.size(); ++i) {
      if (!(c[i].precision >= 0 && c[i].precision <= 1) ||
          (i > 0 && !(c[i].threshold > c[i - 1].threshold)))
        return InvalidArgument(
            "cache decision: calibration thresholds must ascend, precisions "
            "lie in [0, 1]");
    }
  }
  return m;
}

const DecisionModel* FindDecisionModel(const std::string& fingerprint) {
  return FindShipped<DecisionModel>(kCacheDecisionJson, ParseDecisionModel, fingerprint);
}

LearnedVerifier::LearnedVerifier(std::shared_ptr<const DecisionModel> model,
                                 double target_precision)
    : model_(std::move(model)), target_(target_precision) {
  threshold_[0] = model_->ThresholdFor(DecisionLang::kEn, target_);
  threshold_[1] = model_->ThresholdFor(DecisionLang::kZh, target_);
}

Verdict LearnedVerifier::Decide(std::string_view query, std::string_view cached,
                                std::span<const float> qv, std::span<const float> cv) const {
  Verdict v;
  const std::vector<float> x = DecisionFeatures(cv, qv, cached, query);
  const float cosine = x[static_cast<size_t>(2 * std::min(qv.size(), cv.size()))];
  const PairFeatures f = ComputePairFeatures(query, cached, cosine);
  if (f.veto != nullptr && IsHardVeto(f.veto, f.diff)) {
    v.reason = f.veto;
    return v;
  }
  if (qv.size() != static_cast<size_t>(model_->dim) || cv.size() != qv.size()) {
    v.reason = "dim";  // vectors of another model: never a hit
    return v;
  }
  v.p_same = model_->Score(x);
  // The same content on both sides, up to synonyms, stems, typos, fillers and notation (the rule
  // verifier's strict reading): the same question typed again, a hit whatever the score. The
  // model, trained mostly on other wordings, scores some of these low (3 hundred / 300).
  const bool same_content = f.veto == nullptr && f.diff.unmatched_a == 0 &&
                            f.diff.unmatched_b == 0 && !f.diff.question_one_sided;
  v.same_content = same_content;
  v.accept = same_content || v.p_same >= threshold(LangOf(query, cached));
  v.reason = v.accept ? "" : "score";
  return v;
}

Verdict LearnedVerifier::Verify(std::string_view query, std::string_view cached, float cosine,
                                Embedder& embedder) const {
  return VerifyWithVectors(query, cached, cosine, embedder, PairVectors{});
}

Verdict LearnedVerifier::VerifyWithVectors(std::string_view query, std::string_view cached,
                                           float /*cosine*/, Embedder& embedder,
                                           const PairVectors& vectors) const {
  std::vector<float> qbuf, cbuf;
  std::span<const float> qv = vectors.query, cv = vectors.cached;
  if (qv.empty()) {
    auto e = embedder.Embed(query);
    if (!e.ok()) return Verdict{false, 0, "embed"};
    qbuf = std::move(e).value();
    qv = qbuf;
  }
  if (cv.empty()) {
    auto e = embedder.Embed(cached);
    if (!e.ok()) return Verdict{false, 0, "embed"};
    cbuf = std::move(e).value();
    cv = cbuf;
  }
  return Decide(query, cached, qv, cv);
}

std::shared_ptr<const HitVerifier> DefaultVerifier(const Embedder& embedder,
                                                   const DecisionOptions& options) {
  if (options.kind == DecisionKind::kLearned) {
    if (const DecisionModel* m = FindDecisionModel(embedder.fingerprint())) {
      return std::make_shared<LearnedVerifier>(std::make_shared<DecisionModel>(*m),
                                               options.target_precision);
    }
  }
  const VerifierCalibration* c = FindCalibration(embedder.fingerprint());
  return std::make_shared<PairVerifier>(c ? std::make_shared<VerifierCalibration>(*c) : nullptr);
}

float RecallThreshold(const Embedder& embedder, const DecisionOptions& options) {
  if (options.kind == DecisionKind::kLearned) {
    if (const DecisionModel* m = FindDecisionModel(embedder.fingerprint()))
      return m->recall_threshold;
  }
  const VerifierCalibration* c = FindCalibration(embedder.fingerprint());
  return c ? c->recall_threshold : kUncalibratedRecallThreshold;
}

}  // namespace frugal::cache
