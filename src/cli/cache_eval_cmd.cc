// `frugal cache-eval`: precision and recall of semantic-cache hits on labelled query pairs, for
// the shipped decision (the embedder's recall threshold + its calibrated verifier) overall, by
// language and by kind, plus a sweep of cosine thresholds with and without the verifier.
// `--features` writes what the verifier saw for each pair (the training input of
// scripts/train_cache_verifier.py).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cache/embedder.h"
#include "cache/eval.h"
#include "cache/semantic_cache.h"
#include "cli/commands.h"
#include "common/mmap_file.h"
#include "common/stats.h"
#include "frugal/engine.h"

namespace frugal::cli {
namespace {

using nlohmann::json;

struct CacheEvalFlags {
  std::string model = cache::kDefaultEmbedderPath;
  std::string pairs = "tests/data/cache_pairs.jsonl";
  std::string features_out, calibration_file, decision_file;
  std::string decision = "learned";
  double target_precision = 0.95;
  int threads = 0;
  double threshold = 0;
  bool json_out = false, by_kind = false, strict = false;
};

json ConfusionJson(const cache::Confusion& c) {
  // The precision's 95% Wilson interval over the hits served (tp of tp + fp).
  const auto [lo, hi] = WilsonInterval(c.tp, c.tp + c.fp);
  return {{"precision", c.precision()},
          {"precision_ci95", {lo, hi}},
          {"recall", c.recall()},
          {"tp", c.tp},
          {"fp", c.fp},
          {"fn", c.fn},
          {"tn", c.tn}};
}

double Round(double v, double unit) { return std::round(v / unit) * unit; }

int Run(const CacheEvalFlags& f) {
  auto pairs = cache::LoadPairs(f.pairs);
  if (!pairs.ok()) return Fail(pairs.status());
  EngineOptions eo;
  eo.model_path = f.model;
  eo.threads = f.threads;
  auto engine = Engine::Open(eo);
  if (!engine.ok()) return Fail(engine.status());
  auto embedder = cache::NewEngineEmbedder(std::shared_ptr<Engine>(std::move(engine).value()));
  if (!embedder.ok()) return Fail(embedder.status());
  cache::Embedder& emb = **embedder;

  // The verifier: the embedder's shipped calibration, one from a file, or the strict rule.
  std::shared_ptr<const cache::VerifierCalibration> cal;
  if (!f.calibration_file.empty()) {
    auto text = ReadFileToString(f.calibration_file);
    if (!text.ok()) return Fail(text.status());
    auto c = cache::ParseCalibration(*text);
    if (!c.ok()) return Fail(c.status().WithContext(f.calibration_file));
    cal = std::make_shared<cache::VerifierCalibration>(std::move(c).value());
  } else if (!f.strict) {
    if (const cache::VerifierCalibration* c = cache::FindCalibration(emb.fingerprint())) {
      cal = std::make_shared<cache::VerifierCalibration>(*c);
    }
  }
  const cache::PairVerifier verifier(cal);
  const float rules_threshold = f.threshold > 0 ? static_cast<float>(f.threshold)
                                : cal           ? cal->recall_threshold
                                                : cache::kUncalibratedRecallThreshold;
  // The learned decision: the embedder's shipped model, or one from a file; none with
  // --decision rules or --strict (then the default is the rule verifier).
  std::shared_ptr<const cache::LearnedVerifier> learned;
  if (f.decision == "learned" && !f.strict) {
    std::shared_ptr<const cache::DecisionModel> model;
    if (!f.decision_file.empty()) {
      auto text = ReadFileToString(f.decision_file);
      if (!text.ok()) return Fail(text.status());
      auto m = cache::ParseDecisionModel(*text);
      if (!m.ok()) return Fail(m.status().WithContext(f.decision_file));
      model = std::make_shared<cache::DecisionModel>(std::move(m).value());
    } else if (const cache::DecisionModel* m = cache::FindDecisionModel(emb.fingerprint())) {
      model = std::make_shared<cache::DecisionModel>(*m);
    }
    if (model) learned = std::make_shared<cache::LearnedVerifier>(model, f.target_precision);
  }
  const float threshold = f.threshold > 0 ? static_cast<float>(f.threshold)
                          : learned       ? learned->model().recall_threshold
                                          : rules_threshold;
  const char* decision_name = learned ? learned->name() : verifier.name();

  auto scores = cache::ScorePairs(emb, verifier, *pairs, 0.1, learned.get());
  if (!scores.ok()) return Fail(scores.status());

  if (!f.features_out.empty()) {
    std::ofstream out(f.features_out);
    if (!out) return Fail(IoError("cannot write " + f.features_out));
    for (size_t i = 0; i < pairs->size(); ++i) {
      const auto& p = (*pairs)[i];
      const auto& s = (*scores)[i];
      json x = json::array();
      for (double v : s.features.x) x.push_back(v);
      out << json{{"a", p.a},
                  {"b", p.b},
                  {"same", p.same},
                  {"kind", p.kind},
                  {"lang", p.lang},
                  {"cosine", s.similarity},
                  {"veto", s.features.veto ? s.features.veto : ""},
                  {"p_same", s.verdict.p_same},
                  {"decision", s.verdict.accept},
                  {"reason", s.verdict.reason},
                  {"same_content", s.verdict.same_content},
                  {"opaque", s.opaque},
                  {"only_a", s.features.diff.only_a},
                  {"only_b", s.features.diff.only_b},
                  {"x", x}}
                 .dump()
          << '\n';
    }
  }

  cache::Confusion all, rules_all;
  std::map<std::string, cache::Confusion> by_lang, by_kind, rules_by_lang;
  for (size_t i = 0; i < pairs->size(); ++i) {
    const auto& p = (*pairs)[i];
    const auto& s = (*scores)[i];
    const bool hit = cache::WouldHit(s, threshold, true);
    all.Add(hit, p.same);
    by_lang[p.lang].Add(hit, p.same);
    by_kind[p.kind.empty() ? "-" : p.kind].Add(hit, p.same);
    // The previous decision, side by side: the rule verifier at its own recall threshold.
    const bool rules_hit = s.similarity >= rules_threshold && s.rules.accept;
    rules_all.Add(rules_hit, p.same);
    rules_by_lang[p.lang].Add(rules_hit, p.same);
  }
  std::vector<float> sweep;
  for (int t = 80; t <= 98; ++t) sweep.push_back(static_cast<float>(t) / 100.0f);
  const auto rows = cache::Evaluate(*scores, *pairs, sweep);

  if (f.json_out) {
    json d = ConfusionJson(all);
    d["threshold"] = Round(threshold, 1e-4);
    d["verifier"] = decision_name;
    if (learned) {
      d["decision"] = {{"embedder", learned->model().embedder},
                       {"target_precision", learned->target_precision()},
                       {"threshold_en", learned->threshold(cache::DecisionLang::kEn)},
                       {"threshold_zh", learned->threshold(cache::DecisionLang::kZh)}};
    }
    if (cal) {
      d["calibration"] = {{"embedder", cal->embedder},
                          {"operating_point", cal->operating_point},
                          {"target_precision", cal->target_precision}};
    }
    d["by_lang"] = json::object();
    for (const auto& [k, c] : by_lang) d["by_lang"][k] = ConfusionJson(c);
    d["by_kind"] = json::object();
    for (const auto& [k, c] : by_kind) d["by_kind"][k] = ConfusionJson(c);
    json sw = json::array();
    for (const auto& r : rows) {
      json row = ConfusionJson(r.c);
      row["threshold"] = Round(r.threshold, 0.01);
      row["guard"] = r.guard;
      sw.push_back(row);
    }
    json r = ConfusionJson(rules_all);
    r["threshold"] = Round(rules_threshold, 1e-4);
    r["verifier"] = verifier.name();
    r["by_lang"] = json::object();
    for (const auto& [k, c] : rules_by_lang) r["by_lang"][k] = ConfusionJson(c);
    const json out = {{"model", f.model}, {"fingerprint", emb.fingerprint()},
                      {"pairs", f.pairs}, {"n", pairs->size()},
                      {"default", d},     {"rules", r},
                      {"sweep", sw}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("%zu pairs from %s; embedder %s\n", pairs->size(), f.pairs.c_str(), f.model.c_str());
  auto print_row = [](const std::string& k, const cache::Confusion& c) {
    const auto [lo, hi] = WilsonInterval(c.tp, c.tp + c.fp);
    std::printf(
        "  %-8s precision %.4f [%.3f, %.3f]  recall %.4f  (tp %lld fp %lld fn %lld tn %lld)\n",
        k.c_str(), c.precision(), lo, hi, c.recall(), static_cast<long long>(c.tp),
        static_cast<long long>(c.fp), static_cast<long long>(c.fn), static_cast<long long>(c.tn));
  };
  if (learned) {
    std::printf(
        "default: candidates at cosine >= %.3f, learned decision (%s) at target precision "
        "%.2f: P(same) >= %.2f (en), %.2f (zh)\n",
        threshold, learned->model().embedder.c_str(), learned->target_precision(),
        learned->threshold(cache::DecisionLang::kEn), learned->threshold(cache::DecisionLang::kZh));
  } else {
    std::printf("default: candidates at cosine >= %.3f, verifier %s%s\n", threshold,
                verifier.name(),
                cal ? (" (" + cal->embedder + ", calibrated for precision " +
                       std::to_string(cal->target_precision).substr(0, 4) + ")")
                          .c_str()
                    : "");
  }
  print_row("all", all);
  for (const auto& [k, c] : by_lang) print_row(k, c);
  std::printf("rules (the previous decision): candidates at cosine >= %.3f, verifier %s\n",
              rules_threshold, verifier.name());
  print_row("all", rules_all);
  for (const auto& [k, c] : rules_by_lang) print_row(k, c);
  std::printf("\nsweep: threshold  verifier  precision  recall   tp   fp   fn\n");
  for (const auto& r : rows) {
    std::printf("       %9.2f  %8s  %9.4f  %6.4f %4lld %4lld %4lld\n", r.threshold,
                r.guard ? "on" : "off", r.c.precision(), r.c.recall(),
                static_cast<long long>(r.c.tp), static_cast<long long>(r.c.fp),
                static_cast<long long>(r.c.fn));
  }
  if (f.by_kind) {
    std::printf("\nby kind (default decision): wrong of all\n");
    for (const auto& [k, c] : by_kind) {
      std::printf("  %-14s %3lld of %3lld  (false hits %lld, misses %lld)\n", k.c_str(),
                  static_cast<long long>(c.fp) + static_cast<long long>(c.fn),
                  static_cast<long long>(c.tp) + static_cast<long long>(c.fp) +
                      static_cast<long long>(c.fn) + static_cast<long long>(c.tn),
                  static_cast<long long>(c.fp), static_cast<long long>(c.fn));
    }
    std::printf("\nfalse hits (the harmful errors):\n");
    for (size_t i = 0; i < pairs->size(); ++i) {
      const auto& p = (*pairs)[i];
      const auto& s = (*scores)[i];
      if (!p.same && cache::WouldHit(s, threshold, true)) {
        std::printf("  %.3f p=%.2f [%s/%s]  %s  |  %s\n", s.similarity, s.verdict.p_same,
                    p.kind.c_str(), p.lang.c_str(), p.a.substr(0, 160).c_str(),
                    p.b.substr(0, 160).c_str());
      }
    }
  }
  return 0;
}

}  // namespace

void AddCacheEvalCommand(CLI::App& app, Commands& out) {
  auto f = std::make_shared<CacheEvalFlags>();
  auto* ce = app.add_subcommand(
      "cache-eval", "precision/recall of semantic-cache hit decisions on labelled query pairs");
  ce->add_option("-m,--model", f->model,
                 std::string("embedding model (default ") + cache::kDefaultEmbedderPath + ")");
  ce->add_option("-t,--threads", f->threads, "compute threads (default: all CPUs)")
      ->check(CLI::Range(0, 1024));
  ce->add_option("--pairs", f->pairs,
                 "JSONL of {\"a\", \"b\", \"same\"} (+ \"kind\", \"lang\") (default "
                 "tests/data/cache_pairs.jsonl)");
  ce->add_flag(
      "--json", f->json_out,
      "one JSON object: default {precision, recall, tp, fp, fn, tn, by_lang, by_kind}, sweep");
  ce->add_flag("--by-kind", f->by_kind, "also list wrong decisions by kind and every false hit");
  ce->add_option("--threshold", f->threshold,
                 "candidate cosine (default: the embedder's calibrated one, " +
                     ShortNumber(cache::kUncalibratedRecallThreshold) + " without)")
      ->check(CLI::Range(0.01, 1.0));
  ce->add_option("--calibration", f->calibration_file,
                 "a verifier calibration JSON instead of the shipped one");
  ce->add_option("--decision", f->decision,
                 "the default decision: learned (the embedder's model, data/cache_decision) or "
                 "rules (the previous verifier); the JSON's `rules` member is always the latter")
      ->check(CLI::IsMember({"learned", "rules"}));
  ce->add_option("--target-precision", f->target_precision,
                 "precision the learned decision's thresholds are picked for (default 0.95)")
      ->check(CLI::Range(0.5, 1.0));
  ce->add_option("--decision-file", f->decision_file,
                 "a learned decision model JSON instead of the shipped one");
  ce->add_flag("--strict", f->strict,
               "the uncalibrated rule (no content difference) instead of the calibration");
  ce->add_option("--features", f->features_out,
                 "write each pair's verifier features as JSONL (training input)");
  out.emplace_back(ce, [f] { return Run(*f); });
}

}  // namespace frugal::cli
