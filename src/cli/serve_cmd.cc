// `frugal serve`: the OpenAI-compatible worker, until SIGINT / SIGTERM.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "engine/simulate.h"
#include "frugal/engine.h"
#include "http/auth.h"
#include "server/worker.h"

namespace frugal::cli {
namespace {

struct ServeFlags {
  CommonModelFlags mf;
  frugal::server::WorkerOptions opt;
  int64_t max_body_bytes = 1 << 20;
  double read_timeout_s = 30, idle_timeout_s = 60, shutdown_grace_s = 30;
  std::string api_key_file;
  std::string simulate_spec;
  CLI::Option* simulate = nullptr;  // given: a simulated worker (engine/simulate.h)
};

int RunServe(ServeFlags f) {
  // Before any thread starts, so only sigwait below sees the stop signals.
  sigset_t stop_signals = frugal::cli::BlockStopSignals();

  auto& o = f.opt;
  if (f.simulate->count() > 0) {
    auto spec = frugal::ParseSimulationSpec(f.simulate_spec);
    if (!spec.ok()) return Fail(spec.status());
    o.scheduler.simulation = *spec;
    // The weights are never used: no repacked copy of them, and no compute threads to idle.
    f.mf.no_repack = true;
    if (f.mf.threads == 0) f.mf.threads = 1;
  }
  auto engine = f.mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  if (o.served_model_name.empty()) {
    std::filesystem::path p(f.mf.model);
    o.served_model_name = std::filesystem::is_directory(p)
                              ? p.lexically_normal().filename().string()
                              : p.stem().string();
    if (o.served_model_name.empty()) o.served_model_name = (*engine)->info().name;
  }
  o.http.max_body_bytes = static_cast<size_t>(f.max_body_bytes);
  if (!f.api_key_file.empty()) {
    auto keys = frugal::http::ReadKeyLines(f.api_key_file);
    if (!keys.ok()) return Fail(keys.status());
    o.api_keys = *std::move(keys);
  }
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1e3)); };
  o.http.read_timeout = ms(f.read_timeout_s);
  o.http.idle_timeout = ms(f.idle_timeout_s);
  auto worker = frugal::server::Worker::Start(**engine, o);
  if (!worker.ok()) return Fail(worker.status());
  if (o.scheduler.simulation) {
    std::printf(
        "frugal serve: SIMULATED worker (test instrument; no model runs: %s) listening on "
        "http://%s:%u\n",
        frugal::FormatSimulationSpec(*o.scheduler.simulation).c_str(), o.http.host.c_str(),
        static_cast<unsigned>((*worker)->port()));
  } else {
    const frugal::ModelInfo& info = (*engine)->info();
    if (!info.kv_type.empty()) {
      std::fprintf(stderr, "frugal serve: KV cache %s, %lld bytes per position\n",
                   info.kv_type.c_str(), static_cast<long long>(info.kv_bytes_per_position));
    }
    std::printf("frugal serve: listening on http://%s:%u\n", o.http.host.c_str(),
                static_cast<unsigned>((*worker)->port()));
  }
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "frugal serve: %s: finishing requests in flight (up to %.0f s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", f.shutdown_grace_s);
  (*worker)->Shutdown(ms(f.shutdown_grace_s));
  return 0;
}

// The --simulate help, with the defaults read from SimulationSpec{}.
std::string SimulateHelp() {
  const SimulationSpec d;
  return "TEST INSTRUMENT: no model runs (the -m model gives only its tokenizer, chat template and "
         "context); steps sleep a latency model and answers are canned. SPEC is key=value,...: " +
         WithDefault("prefill_ms, per prompt token", d.prefill_ms) + "; " +
         WithDefault("decode_ms, per decode step of the whole batch", d.decode_ms) + "; " +
         WithDefault("batch_slowdown, step-time increase per extra sequence", d.batch_slowdown) +
         "; max_batch, overrides --max-batch; " +
         WithDefault("jitter, step time x uniform [1-j, 1+j]", d.jitter) + "; " +
         WithDefault("seed, 0 = nondeterministic", d.seed) + ". '' = defaults";
}

}  // namespace

void AddServeCommand(CLI::App& app, Commands& out) {
  auto flags = std::make_shared<ServeFlags>();
  ServeFlags& sv = *flags;
  auto* serve = app.add_subcommand(
      "serve", "OpenAI-compatible inference worker (HTTP) with continuous batching");
  sv.mf.Add(serve);
  serve->add_option("--host", sv.opt.http.host,
                    "address to listen on (default " + DefaultText(sv.opt.http.host) + ")");
  serve->add_option("--port", sv.opt.http.port,
                    "port; 0 = any free port (default " + DefaultText(sv.opt.http.port) + ")");
  serve->add_option("--served-model-name", sv.opt.served_model_name,
                    "model id in the API (default: the model file's name without extension)");
  serve
      ->add_option(
          "--max-batch", sv.opt.scheduler.max_batch,
          "sequences decoded together (default " + DefaultText(sv.opt.scheduler.max_batch) + ")")
      ->check(CLI::Range(1, 4096));
  serve
      ->add_option("--max-queue", sv.opt.scheduler.max_queue,
                   "requests waiting beyond the batch; more get 503 + Retry-After (default " +
                       DefaultText(sv.opt.scheduler.max_queue) + ")")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  serve
      ->add_option("--max-backlog-ms", sv.opt.scheduler.max_backlog_ms,
                   "503 when the estimated backlog would exceed this; 0 = off (default " +
                       DefaultText(sv.opt.scheduler.max_backlog_ms) + ")")
      ->check(CLI::Range(0.0, 1e12));
  serve
      ->add_option("--prefill-chunk", sv.opt.scheduler.prefill_chunk,
                   "prompt tokens per step, so long prompts do not stall decoding (default " +
                       DefaultText(sv.opt.scheduler.prefill_chunk) + ")")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  serve
      ->add_option("--kv-block-tokens", sv.opt.scheduler.kv_block_tokens,
                   "positions per KV cache block, a multiple of 4 (default " +
                       DefaultText(sv.opt.scheduler.kv_block_tokens) + ")")
      ->check(CLI::Range(int64_t{4}, int64_t{4096}));
  serve
      ->add_option("--kv-blocks", sv.opt.scheduler.kv_blocks,
                   "KV cache blocks; 0 = max-batch full contexts, at most 1/4 of RAM (default " +
                       DefaultText(sv.opt.scheduler.kv_blocks) + ")")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  serve->add_flag_callback(
      "--no-prefix-cache", [&sv] { sv.opt.scheduler.prefix_cache = false; },
      "recompute every prompt from its first token (by default the KV of full blocks of earlier "
      "prompts and answers is reused)");
  serve
      ->add_option("--request-timeout", sv.opt.request_timeout_s,
                   "seconds a request may take from arrival (default " +
                       DefaultText(sv.opt.request_timeout_s) + ")")
      ->check(CLI::Range(0.001, 1e9));
  serve
      ->add_option("--default-max-tokens", sv.opt.default_max_tokens,
                   WithDefault("max_tokens when a request names none, capped by the context",
                               sv.opt.default_max_tokens))
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  serve
      ->add_option(
          "--max-body-bytes", sv.max_body_bytes,
          "largest request body; larger get 413 (default " + DefaultText(sv.max_body_bytes) + ")")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  serve->add_option("--api-key-file", sv.api_key_file,
                    "file of API keys, one per line: every path but /health then wants "
                    "Authorization: Bearer KEY (for a worker on a routable address)");
  serve
      ->add_option("--max-connections", sv.opt.http.max_connections,
                   WithDefault("client connections served; at the limit idle ones make room, "
                               "then 503 but for /health; 0 = half the open-file limit",
                               sv.opt.http.max_connections))
      ->check(CLI::Range(0, 1 << 24));
  serve
      ->add_option("--http-threads", sv.opt.http.io_threads,
                   "event-loop threads (default " + DefaultText(sv.opt.http.io_threads) + ")")
      ->check(CLI::Range(1, 256));
  serve
      ->add_option(
          "--read-timeout", sv.read_timeout_s,
          "seconds to receive a whole request (default " + DefaultText(sv.read_timeout_s) + ")")
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--idle-timeout", sv.idle_timeout_s,
                   "seconds a kept-alive connection may idle (default " +
                       DefaultText(sv.idle_timeout_s) + ")")
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--shutdown-grace", sv.shutdown_grace_s,
                   "seconds in-flight requests get on SIGTERM (default " +
                       DefaultText(sv.shutdown_grace_s) + ")")
      ->check(CLI::Range(0.0, 1e6));
  sv.simulate =
      serve->add_option("--simulate", sv.simulate_spec, SimulateHelp())->type_name("SPEC");
  out.emplace_back(serve, [flags] { return RunServe(*flags); });
}

}  // namespace frugal::cli
