// `frugal eval`: a (quantized) model against its reference, and the quality gate; flags and
// output only, the measurement is src/quant/eval (docs/eval.md).
//
// Exit codes: 0 measured (and the gate, if any, passed); 3 the gate failed (the report is still
// printed); 2 bad input (flags, files, probes, gate); 1 internal or I/O failure.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "quant/eval.h"
#include "quant/gate.h"

namespace frugal::cli {
namespace {

struct EvalFlags {
  EvalOptions opt;
  std::string activations = "f32";
  std::string gate;
  bool json = false, quiet = false;
};

// Progress on stderr: a line rewritten in place on a terminal; otherwise a line per tenth of a
// stage (and its end), so logs stay short.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(STDERR_FILENO) != 0) {}

  void operator()(std::string_view stage, int64_t done, int64_t total) {
    if (stage != stage_) {
      stage_ = std::string(stage);
      last_tenth_ = -1;
      stage_t0_ = std::chrono::steady_clock::now();
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - stage_t0_).count();
    if (tty_) {
      std::fprintf(stderr, "\rfrugal eval: %s %lld/%lld (%.1f s)%s", stage_.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total), s,
                   done == total ? "\n" : "");
      return;
    }
    const int64_t tenth = total > 0 ? done * 10 / total : 10;
    if (done == 0 || tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "frugal eval: %s %lld/%lld (%.1f s)\n", stage_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), s);
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point stage_t0_;
  std::string stage_;
  int64_t last_tenth_ = -1;
};

bool PrintReport(const EvalFlags& f, const EvalReport& report, const Gate* gate);

int RunEval(EvalFlags& f) {
  std::unique_ptr<Gate> gate;
  if (!f.gate.empty()) {
    auto g = ParseGate(f.gate);
    if (!g.ok()) return Fail(g.status());
    gate = std::make_unique<Gate>(std::move(g).value());
    if (gate->uses_numeric() && f.opt.probes_path.empty()) {
      return Fail(
          InvalidArgument("the gate '" + f.gate + "' checks numeric fidelity: give --probes"));
    }
  }
  f.opt.int8_activations = f.activations == "int8";
  auto printer = std::make_shared<ProgressPrinter>();
  if (!f.quiet)
    f.opt.progress = [printer](std::string_view stage, int64_t done, int64_t total) {
      (*printer)(stage, done, total);
    };
  auto reports = Evaluate(f.opt);
  if (!reports.ok()) return Fail(reports.status());
  // Several models: one report each (a JSON object per line with --json), in the order given;
  // the gate must hold for every one.
  bool all_passed = true;
  for (const EvalReport& report : *reports) {
    if (!PrintReport(f, report, gate.get())) all_passed = false;
  }
  return all_passed ? 0 : 3;
}

// Prints one model's report and its gate; false when the gate failed.
bool PrintReport(const EvalFlags& f, const EvalReport& report, const Gate* gate) {
  std::vector<GateFailure> failures;
  if (gate) failures = CheckGate(report, *gate);
  if (f.json) {
    nlohmann::json j = nlohmann::json::parse(ReportJson(report));
    if (gate) {
      nlohmann::json failed = nlohmann::json::array();
      for (const auto& x : failures) {
        failed.push_back({{"clause", x.clause.text},
                          {"metric", GateMetricName(x.clause.metric)},
                          {"measured", std::isfinite(x.measured) ? nlohmann::json(x.measured)
                                                                 : nlohmann::json(nullptr)},
                          {"limit", x.clause.value},
                          {"message", x.message}});
      }
      j["gate"] = {{"spec", f.gate}, {"passed", failures.empty()}, {"failed", std::move(failed)}};
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string out = FormatReport(report);
    if (gate) {
      out += "gate " + f.gate + ": " + (failures.empty() ? "passed" : "FAILED") + "\n";
      for (const auto& x : failures) out += "  failed " + x.message + "\n";
    }
    std::fputs(out.c_str(), stdout);
  }
  std::fflush(stdout);
  if (!failures.empty()) {
    std::string msg;
    for (const auto& x : failures) msg += (msg.empty() ? "" : "; ") + x.message;
    std::fprintf(stderr, "frugal: gate failed: %s (%s)\n", msg.c_str(), report.model.c_str());
    return false;
  }
  return true;
}

}  // namespace

void AddEvalCommand(CLI::App& app, Commands& out) {
  auto f = std::make_shared<EvalFlags>();
  EvalOptions& o = f->opt;
  o.text_path = "models/text/alice-wonderland-ch1-3.txt";
  auto* cmd = app.add_subcommand(
      "eval",
      "quality of a (quantized) model against its reference: perplexity, KL divergence, top-1 "
      "agreement, numeric fidelity; --gate checks limits (exit 3 when they fail)");
  cmd->add_option("-m,--model", o.models,
                  "the model to evaluate: a .gguf file or a Hugging Face folder; repeat it to "
                  "evaluate several against one run of the reference (one report each, a JSON "
                  "object per line)")
      ->required();
  cmd->add_option("--ref", o.ref,
                  "the reference model (e.g. the unquantized one); must share the tokenizer")
      ->required();
  cmd->add_option("--text", o.text_path,
                  WithDefault("text scored for perplexity, KL divergence and top-1", o.text_path));
  cmd->add_option("--probes", o.probes_path,
                  "JSONL, one {\"prompt\": ...} or {\"messages\": [...]} per line (optional "
                  "\"id\"), answered greedily by both models for numeric fidelity (default: none)");
  cmd->add_option("--chunk", o.chunk,
                  "tokens per chunk; the second half of each is scored (default min(ctx, 512))")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option(
         "--max-tokens", o.max_tokens,
         WithDefault("use only the first N tokens of the text; 0 = all. The reference keeps ~N/2 x "
                     "vocabulary halves in memory: ~200 MB at N = 4096 for a 49k "
                     "vocabulary",
                     o.max_tokens))
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--max-new-tokens", o.max_new_tokens,
                  WithDefault("greedy tokens per probe answer", o.max_new_tokens))
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-batch", o.max_batch, WithDefault("probes decoded together", o.max_batch))
      ->check(CLI::Range(1, 4096));
  cmd->add_option("-t,--threads", o.threads, "compute threads (default: all CPUs)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--activations", f->activations,
                  "matmul activations of both models: f32 (default: the weights alone are "
                  "measured) or int8 (as served)")
      ->check(CLI::IsMember({"f32", "int8"}));
  cmd->add_option(
         "--gate", f->gate,
         "limits, e.g. 'ppl<+3%,kld<0.05,numeric>=0.98' (metrics ppl kld kld_p99 top1 numeric; < "
         "<= > >=; ppl<+X is over ppl_ref, ppl<+X% relative); exit 3 when one fails")
      ->type_name("SPEC");
  cmd->add_flag("--json", f->json, "print one JSON object instead of the table");
  cmd->add_flag("-q,--quiet", f->quiet, "no progress on stderr");
  out.emplace_back(cmd, [f] { return RunEval(*f); });
}

}  // namespace frugal::cli
