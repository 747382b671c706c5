// `frugal loadgen`: flags and output; the load generator is src/loadgen (docs/loadgen.md).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "cli/commands.h"
#include "loadgen/loadgen.h"

namespace frugal::cli {
namespace {

struct LoadgenFlags {
  loadgen::RunOptions run;
  std::string questions = "tests/data/loadgen_questions.jsonl";
  std::string system = "data/conversation/store_policy_system.txt";
  std::string plot, csv;
  bool json = false, quiet = false;
};

// Opens an output file before the run, so a bad path fails at once instead of after it.
Status OpenOutput(const std::string& path, const char* flag, std::ofstream& out) {
  if (path.empty()) return Status::Ok();
  out.open(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument(std::string("cannot write ") + flag + " " + path);
  return Status::Ok();
}

Status WriteOutput(const std::string& path, std::ofstream& out, const std::string& text) {
  if (path.empty()) return Status::Ok();
  out << text;
  out.close();
  if (!out) return IoError("writing " + path + " failed");
  return Status::Ok();
}

int RunLoadgen(const LoadgenFlags& f) {
  auto groups = loadgen::LoadQuestions(f.questions);
  if (!groups.ok()) return Fail(groups.status());
  loadgen::RunOptions run = f.run;
  if (run.conversation.enabled && !f.system.empty()) {
    std::ifstream in(f.system, std::ios::binary);
    if (!in) return Fail(InvalidArgument("cannot read --system " + f.system));
    run.conversation.system.assign(std::istreambuf_iterator<char>(in),
                                   std::istreambuf_iterator<char>());
    while (!run.conversation.system.empty() &&
           (run.conversation.system.back() == '\n' || run.conversation.system.back() == ' ')) {
      run.conversation.system.pop_back();
    }
  }
  std::ofstream plot, csv;
  if (Status st = OpenOutput(f.plot, "--plot", plot); !st.ok()) return Fail(st);
  if (Status st = OpenOutput(f.csv, "--csv", csv); !st.ok()) return Fail(st);

  std::function<void(const loadgen::Progress&)> progress;
  if (!f.quiet) {
    progress = [](const loadgen::Progress& pr) {
      std::fprintf(stderr,
                   "loadgen: %-8s %6.1f s  sent %lld  done %lld  in flight %lld  errors %lld\n",
                   pr.phase.c_str(), pr.elapsed_s, static_cast<long long>(pr.sent),
                   static_cast<long long>(pr.done), static_cast<long long>(pr.sent - pr.done),
                   static_cast<long long>(pr.errors));
    };
  }
  auto result = loadgen::Run(run, *groups, progress);
  if (!result.ok()) return Fail(result.status());

  if (f.json) {
    std::printf("%s\n", loadgen::ReportJson(*result, run).c_str());
  } else {
    std::fputs(loadgen::ReportTable(*result, run).c_str(), stdout);
  }
  std::fflush(stdout);
  if (Status st = WriteOutput(f.plot, plot, loadgen::PlotHtml(*result)); !st.ok()) return Fail(st);
  if (Status st = WriteOutput(f.csv, csv, loadgen::RecordsCsv(*result)); !st.ok()) return Fail(st);
  return 0;
}

}  // namespace

void AddLoadgenCommand(CLI::App& app, Commands& out) {
  // Shared with the run closure: the flags are filled in by app.parse, after this returns.
  auto f = std::make_shared<LoadgenFlags>();
  auto& o = f->run;
  auto* cmd = app.add_subcommand(
      "loadgen",
      "open-loop load generator for an OpenAI-compatible endpoint (steady, spike, recovery)");
  cmd->add_option("--target", o.target,
                  "base URL of a gateway or worker, e.g. http://127.0.0.1:8080")
      ->required();
  cmd->add_option("--model", o.model,
                  "model name in the requests (default: the first id of GET /v1/models)");
  cmd->add_option("--api-key", o.api_key, "sent as Authorization: Bearer KEY");
  cmd->add_option("--rate", o.profile.rate,
                  WithDefault("requests per second in steady and recovery", o.profile.rate))
      ->check(CLI::Range(0.001, 1e5));
  cmd->add_option("--spike-factor", o.profile.spike_factor,
                  WithDefault("spike rate = rate x this", o.profile.spike_factor))
      ->check(CLI::Range(0.0, 1e4));
  cmd->add_option("--steady-seconds", o.profile.steady_s,
                  WithDefault("length of the steady phase; 0 = none", o.profile.steady_s))
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--spike-seconds", o.profile.spike_s,
                  WithDefault("length of the spike phase; 0 = none", o.profile.spike_s))
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--after-seconds", o.profile.recovery_s,
                  WithDefault("length of the recovery phase; 0 = none", o.profile.recovery_s))
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--questions", f->questions,
                  WithDefault("JSONL of {\"question\", \"paraphrases\"}", f->questions));
  cmd->add_option("--repeat-share", o.mix.repeat_share,
                  WithDefault("share of requests that re-ask an earlier question or a paraphrase",
                              o.mix.repeat_share))
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option(
         "--long-share", o.mix.long_share,
         WithDefault("share of long requests: context passage (~3x prompt) and 3x max tokens",
                     o.mix.long_share))
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--conversations", o.conversation.enabled,
                "multi-turn conversations: a system prompt on every request, later turns carrying "
                "the earlier questions and answers (per-turn TTFT in the report and the plot)");
  cmd->add_option("--turns", o.conversation.max_turns,
                  WithDefault("user turns per conversation", o.conversation.max_turns))
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--new-conversation-share", o.conversation.new_share,
                  WithDefault("share of arrivals that start a new conversation while one could go "
                              "on",
                              o.conversation.new_share))
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--system", f->system,
                  WithDefault("system prompt file of the conversations ('' for none)", f->system));
  cmd->add_option("--max-tokens", o.max_tokens,
                  WithDefault("max_tokens of short requests; long ones get 3x", o.max_tokens))
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--seed", o.seed,
                  WithDefault("seed of the schedule and the question mix", o.seed));
  cmd->add_option(
         "--timeout", o.timeout_s,
         WithDefault("seconds per request, and for the drain after the last phase", o.timeout_s))
      ->check(CLI::Range(0.001, 1e6));
  cmd->add_option("--io-threads", o.io_threads,
                  WithDefault("HTTP client event-loop threads", o.io_threads))
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--json", f->json, "print one JSON object instead of the table");
  cmd->add_option("--plot", f->plot,
                  "write latency over time as a self-contained HTML page (inline SVG)");
  cmd->add_option("--csv", f->csv, "write one CSV row per request");
  cmd->add_flag("-q,--quiet", f->quiet, "no progress lines on stderr");
  out.emplace_back(cmd, [f] { return RunLoadgen(*f); });
}

}  // namespace frugal::cli
