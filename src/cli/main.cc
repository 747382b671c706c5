// `frugal <subcommand>`: flag parsing and output only; the work happens in the library.
//
// Exit codes: 0 success; 2 bad input (flags, files, models, prompts), with one line on stderr
// starting "frugal: error: "; 1 an internal or I/O failure.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/describe.h"
#include "common/mmap_file.h"
#include "engine/simulate.h"
#include "formats/gguf.h"
#include "frugal/engine.h"
#include "kernels/kernels.h"
#include "models/inspect.h"
#include "models/model_source.h"
#include "server/worker.h"
#include "tokenizer/tokenize_jsonl.h"
#include "tokenizer/tokenizer.h"

namespace {

using frugal::Status;
using frugal::StatusCode;

using frugal::cli::Fail;

struct CommonModelFlags {
  std::string model;
  int threads = 0;
  int64_t ctx = 0;
  std::string activations = "int8";
  bool no_repack = false;

  void Add(CLI::App* cmd, bool with_ctx = true) {
    cmd->add_option("-m,--model", model, "model: a .gguf file or a Hugging Face folder")
        ->required();
    cmd->add_option("-t,--threads", threads, "compute threads (default: all CPUs)")
        ->check(CLI::Range(0, 1024));
    if (with_ctx)
      cmd->add_option("-c,--ctx", ctx,
                      "context length in tokens (default: the model's, at most 8192)")
          ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd->add_option("--activations", activations,
                    "matmul activations: int8 (default: quantized per 32 for weights with an "
                    "integer kernel, as llama.cpp) or f32 (reference precision, 2-3x slower)")
        ->check(CLI::IsMember({"f32", "int8"}));
    cmd->add_flag(
        "--no-repack", no_repack,
        "keep Q4_0/Q4_1/Q8_0 matrices in the file's layout instead of Frugal's 8-row tiles");
  }
  frugal::StatusOr<std::unique_ptr<frugal::Engine>> Open() const {
    frugal::EngineOptions o;
    o.model_path = model;
    o.threads = threads;
    o.context_length = ctx;
    o.int8_activations = activations == "int8";
    o.repack_weights = !no_repack;
    return frugal::Engine::Open(o);
  }
};

int RunGenerate(const CommonModelFlags& mf, const std::string& prompt_arg,
                const std::string& prompt_file, bool chat, const std::string& system,
                const frugal::GenerateRequest& base, bool verbose) {
  std::string prompt = prompt_arg;
  if (!prompt_file.empty()) {
    auto text = frugal::ReadFileToString(prompt_file);
    if (!text.ok()) return Fail(text.status());
    prompt = *text;
  }
  if (prompt.empty()) return Fail(frugal::InvalidArgument("give a prompt with -p or -f"));
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  frugal::GenerateRequest req = base;
  if (chat) {
    std::vector<frugal::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", prompt});
    auto rendered = (*engine)->RenderChat(messages);
    if (!rendered.ok()) return Fail(rendered.status());
    req.prompt = *rendered;
    req.parse_special = true;
  } else {
    req.prompt = prompt;
    req.parse_special = false;  // user text never smuggles in control tokens
  }
  auto result = (*engine)->Generate(req, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!result.ok()) return Fail(result.status());
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (verbose) {
    std::fprintf(
        stderr,
        "prompt %lld tokens in %.3f s (%.1f tok/s); generated %lld tokens in %.3f s (%.1f tok/s); "
        "finish: %s\n",
        static_cast<long long>(result->prompt_tokens), result->prefill_seconds,
        static_cast<double>(result->prompt_tokens) / std::max(result->prefill_seconds, 1e-9),
        static_cast<long long>(result->completion_tokens), result->decode_seconds,
        static_cast<double>(result->completion_tokens) / std::max(result->decode_seconds, 1e-9),
        result->finish_reason.c_str());
  }
  return 0;
}

int RunEmbed(const CommonModelFlags& mf, const std::vector<std::string>& texts, bool query,
             bool whole) {
  if (texts.empty()) return Fail(frugal::InvalidArgument("give at least one text to embed"));
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  frugal::EmbedOptions eo;
  eo.whole_text = whole;
  for (const auto& t : texts) {
    auto v = (*engine)->Embed(query ? (*engine)->info().query_prefix + t : t, eo);
    if (!v.ok()) return Fail(v.status());
    std::string line = "[";
    char buf[32];
    for (size_t i = 0; i < v->size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%.8g", i ? ", " : "", static_cast<double>((*v)[i]));
      line += buf;
    }
    std::puts((line + "]").c_str());
  }
  return 0;
}

int RunPerplexity(const CommonModelFlags& mf, const std::string& file, int64_t chunk,
                  int64_t max_tokens, bool json) {
  auto text = frugal::ReadFileToString(file);
  if (!text.ok()) return Fail(text.status());
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  const bool tty = isatty(STDERR_FILENO);
  auto r = (*engine)->Perplexity(*text, chunk, max_tokens, [&](int64_t done, int64_t total) {
    if (tty)
      std::fprintf(stderr, "\rperplexity: chunk %lld/%lld", static_cast<long long>(done),
                   static_cast<long long>(total));
  });
  if (tty) std::fputc('\n', stderr);
  if (!r.ok()) return Fail(r.status());
  if (json) {
    nlohmann::json j = {{"perplexity", r->perplexity}, {"mean_nll", r->mean_nll},
                        {"tokens", r->tokens_scored},  {"chunks", r->chunks},
                        {"chunk_size", r->chunk_size}, {"seconds", r->seconds},
                        {"model", mf.model},           {"file", file}};
    std::puts(j.dump().c_str());
  } else {
    std::printf("perplexity: %.4f (%lld tokens scored in %lld chunks of %lld, %.1f s)\n",
                r->perplexity, static_cast<long long>(r->tokens_scored),
                static_cast<long long>(r->chunks), static_cast<long long>(r->chunk_size),
                r->seconds);
  }
  return 0;
}

int RunInfo(const std::string& model, bool json, bool tensors) {
  frugal::EngineOptions o;
  o.model_path = model;
  o.threads = 1;
  auto engine = frugal::Engine::Open(o);
  if (engine.ok()) {
    const auto& e = **engine;
    std::fputs((json ? frugal::DescribeModelJson(e.info(), e.source()) + "\n"
                     : frugal::DescribeModelText(e.info(), e.source(), tensors))
                   .c_str(),
               stdout);
    return 0;
  }
  // A well-formed file the engine cannot run (unknown architecture or tokenizer) is still
  // described; a missing or corrupt file is an error.
  if (engine.status().code() != StatusCode::kUnimplemented) return Fail(engine.status());
  auto source = frugal::ModelSource::Open(model);
  if (!source.ok()) return Fail(source.status());
  const frugal::ModelInfo info = frugal::InspectSource(**source);
  std::fputs((json ? frugal::DescribeModelJson(info, **source, engine.status().message()) + "\n"
                   : frugal::DescribeModelText(info, **source, tensors, engine.status().message()))
                 .c_str(),
             stdout);
  return 0;
}

int RunBench(const CommonModelFlags& mf, int64_t prompt_tokens, int64_t decode_tokens, int reps,
             bool json) {
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  auto r = (*engine)->Bench(prompt_tokens, decode_tokens, reps);
  if (!r.ok()) return Fail(r.status());
  if (json) {
    nlohmann::json j = {{"model", mf.model},
                        {"threads", r->threads},
                        {"prompt_tokens", r->prompt_tokens},
                        {"decode_tokens", r->decode_tokens},
                        {"prefill_tokens_per_s", r->prefill_tokens_per_s},
                        {"decode_tokens_per_s", r->decode_tokens_per_s},
                        {"batch8_decode_tokens_per_s", r->batch8_decode_tokens_per_s},
                        {"weight_bytes_per_token", r->weight_bytes_per_token},
                        {"weight_read_gbps", r->weight_gbps},
                        {"memory_read_gbps", r->memory_read_gbps},
                        {"roofline_fraction", r->roofline_fraction}};
    std::puts(j.dump().c_str());
  } else {
    std::printf("threads:            %d\n", r->threads);
    std::printf("prefill:            %.1f tokens/s (%lld-token prompt, median of %d)\n",
                r->prefill_tokens_per_s, static_cast<long long>(r->prompt_tokens), reps);
    std::printf("decode:             %.1f tokens/s (%lld tokens, median of %d)\n",
                r->decode_tokens_per_s, static_cast<long long>(r->decode_tokens), reps);
    std::printf("decode, 8 seqs:     %.1f tokens/s (all 8 together; %.2fx one sequence)\n",
                r->batch8_decode_tokens_per_s,
                r->batch8_decode_tokens_per_s / std::max(r->decode_tokens_per_s, 1e-9));
    std::printf("weights per token:  %.1f MB\n",
                static_cast<double>(r->weight_bytes_per_token) / 1e6);
    std::printf("weight read rate:   %.2f GB/s\n", r->weight_gbps);
    std::printf("memory read (meas): %.2f GB/s\n", r->memory_read_gbps);
    std::printf("roofline fraction:  %.1f%%\n", 100 * r->roofline_fraction);
  }
  return 0;
}

frugal::StatusOr<std::vector<int32_t>> ParseIds(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      return frugal::InvalidArgument("--tokens must be comma-separated ids, got '" + item + "'");
    }
  }
  if (ids.empty()) return frugal::InvalidArgument("--tokens is empty");
  return ids;
}

Status WriteFloats(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return frugal::IoError("cannot write " + path);
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
  return out ? Status::Ok() : frugal::IoError("error writing " + path);
}

int RunLogits(const CommonModelFlags& mf, const std::string& tokens, const std::string& out) {
  auto ids = ParseIds(tokens);
  if (!ids.ok()) return Fail(ids.status());
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  auto logits = (*engine)->Logits(*ids);
  if (!logits.ok()) return Fail(logits.status());
  Status st = WriteFloats(out, *logits);
  return st.ok() ? 0 : Fail(st);
}

int RunDequant(const std::string& model, const std::string& tensor, const std::string& out) {
  auto gguf = frugal::GgufFile::Open(model);
  if (!gguf.ok()) return Fail(gguf.status());
  const frugal::TensorView* t = (*gguf)->FindTensor(tensor);
  if (t == nullptr) return Fail(frugal::NotFound("no tensor '" + tensor + "' in " + model));
  std::vector<float> v(static_cast<size_t>(t->elements()));
  frugal::DequantizeTensor(*t, v.data());
  Status st = WriteFloats(out, v);
  return st.ok() ? 0 : Fail(st);
}

int RunTokenize(const std::string& model, const std::vector<std::string>& texts, bool jsonl,
                bool no_special, bool parse_special, bool decode, bool skip_special) {
  auto tok = frugal::LoadTokenizer(model);
  if (!tok.ok()) return Fail(tok.status());
  if (decode) {
    if (!jsonl)
      return Fail(frugal::InvalidArgument("--decode reads JSON id arrays: use it with --jsonl"));
    Status st = frugal::DecodeJsonl(**tok, std::cin, std::cout, skip_special);
    return st.ok() ? 0 : Fail(st);
  }
  if (jsonl) {
    Status st = frugal::TokenizeJsonl(**tok, std::cin, std::cout, !no_special, parse_special);
    return st.ok() ? 0 : Fail(st);
  }
  for (const auto& t : texts) {
    nlohmann::json ids = (*tok)->Encode(t, !no_special, parse_special);
    std::puts(ids.dump().c_str());
  }
  return 0;
}

struct ServeFlags {
  CommonModelFlags mf;
  frugal::server::WorkerOptions opt;
  int64_t max_body_bytes = 1 << 20;
  double read_timeout_s = 30, idle_timeout_s = 60, shutdown_grace_s = 30;
  std::string simulate_spec;
  CLI::Option* simulate = nullptr;  // given: a simulated worker (engine/simulate.h)
};

// Serves until SIGINT / SIGTERM, then shuts down gracefully (in-flight requests finish).
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Frugal: LLM serving that cuts the cost of every answer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "frugal 0.1.0");

  // generate
  CommonModelFlags gen_mf;
  std::string gen_prompt, gen_file, gen_system;
  bool gen_chat = false, gen_verbose = false;
  frugal::GenerateRequest gen_req;
  gen_req.max_tokens = 128;
  auto* gen = app.add_subcommand("generate", "generate text from a prompt, streamed to stdout");
  gen_mf.Add(gen);
  gen->add_option("-p,--prompt", gen_prompt, "prompt text");
  gen->add_option("-f,--file", gen_file, "read the prompt from a file");
  gen->add_option("-n,--max-tokens", gen_req.max_tokens, "tokens to generate at most (default 128)")
      ->check(CLI::Range(0, 1 << 20));
  gen->add_flag("--chat", gen_chat,
                "wrap the prompt in the model's chat template as a user message");
  gen->add_option("--system", gen_system, "system message (with --chat)");
  gen->add_option("--temperature", gen_req.sampling.temperature,
                  "sampling temperature; 0 = greedy (default 0.8)")
      ->check(CLI::Range(0.0, 100.0));
  gen->add_option("--top-k", gen_req.sampling.top_k,
                  "keep the k most likely tokens; 0 = all (default 40)")
      ->check(CLI::Range(0, 1 << 24));
  gen->add_option("--top-p", gen_req.sampling.top_p, "nucleus sampling mass (default 0.95)")
      ->check(CLI::Range(0.0, 1.0));
  gen->add_option("--min-p", gen_req.sampling.min_p,
                  "drop tokens below min-p x the top probability (default 0.05)")
      ->check(CLI::Range(0.0, 1.0));
  gen->add_option("--repeat-penalty", gen_req.sampling.repetition_penalty,
                  "repetition penalty; 1 = off (default 1)")
      ->check(CLI::Range(0.0, 10.0));
  gen->add_option("--repeat-last-n", gen_req.sampling.repeat_last_n,
                  "tokens the penalty looks back (default 64)")
      ->check(CLI::Range(0, 1 << 20));
  gen->add_option("--seed", gen_req.sampling.seed, "RNG seed; 0 = random (default 0)");
  gen->add_option("--stop", gen_req.stop, "stop string (repeatable)");
  gen->add_flag("-v,--verbose", gen_verbose, "print timings to stderr");

  // embed
  CommonModelFlags emb_mf;
  std::vector<std::string> emb_texts;
  auto* emb = app.add_subcommand("embed", "print sentence embeddings, one JSON array per text");
  emb_mf.Add(emb, false);
  emb->add_option("texts", emb_texts, "texts to embed");
  bool emb_query = false, emb_whole = false;
  emb->add_flag(
      "--query", emb_query,
      "put the model's query prefix in front (\"query: \" for multilingual-e5), as the cache does");
  emb->add_flag(
      "--whole", emb_whole,
      "embed a text longer than the window whole, in windows (as the cache does), not truncated");

  // perplexity
  CommonModelFlags ppl_mf;
  std::string ppl_file;
  int64_t ppl_chunk = 0, ppl_max = 0;
  bool ppl_json = false;
  auto* ppl = app.add_subcommand("perplexity", "perplexity of a model on a text file");
  ppl_mf.Add(ppl);
  ppl->add_option("-f,--file", ppl_file, "text file")->required();
  ppl->add_option("--chunk", ppl_chunk, "tokens per chunk (default min(ctx, 512))")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  ppl->add_option("--max-tokens", ppl_max,
                  "score only the first N tokens of the text (default all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  ppl->add_flag("--json", ppl_json, "print one JSON object");

  // info
  std::string info_model;
  bool info_json = false, info_tensors = false;
  auto* info = app.add_subcommand("info", "architecture, tensors, types and size of a model");
  info->add_option("model", info_model, "a .gguf file or a Hugging Face folder")->required();
  info->add_flag("--json", info_json, "print one JSON object");
  info->add_flag("--tensors", info_tensors, "list every tensor");

  // bench
  CommonModelFlags bench_mf;
  int64_t bench_prompt = 128, bench_decode = 32;
  int bench_reps = 3;
  bool bench_json = false;
  auto* bench =
      app.add_subcommand("bench", "prefill and decode tokens/s, weight bytes read per second");
  bench_mf.Add(bench);
  bench->add_option("--prompt-tokens", bench_prompt, "prompt length (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--decode-tokens", bench_decode, "tokens to decode (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  bench->add_option("--reps", bench_reps, "repetitions; medians are reported (default 3)")
      ->check(CLI::Range(1, 1000));
  bench->add_flag("--json", bench_json, "print one JSON object");

  // logits (reference checks)
  CommonModelFlags lg_mf;
  std::string lg_tokens, lg_out;
  auto* lg = app.add_subcommand("logits",
                                "write raw float32 logits [n_tokens][n_vocab] of one prefill pass");
  lg_mf.Add(lg);
  lg->add_option("--tokens", lg_tokens, "comma-separated token ids")->required();
  lg->add_option("-o,--out", lg_out, "output file")->required();

  // tokenize
  std::string tk_model;
  std::vector<std::string> tk_texts;
  bool tk_jsonl = false, tk_no_special = false, tk_parse_special = false, tk_decode = false,
       tk_skip_special = false;
  auto* tk = app.add_subcommand("tokenize", "print token ids as JSON arrays");
  tk->add_option("-m,--model", tk_model, "a .gguf file, a tokenizer.json or a Hugging Face folder")
      ->required();
  tk->add_option("texts", tk_texts, "texts to tokenize");
  tk->add_flag("--jsonl", tk_jsonl,
               "read one JSON string per stdin line, print one array per line");
  tk->add_flag("--no-special", tk_no_special, "do not add BOS/CLS/SEP");
  tk->add_flag("--parse-special", tk_parse_special,
               "turn special tokens written in the text into their ids");
  tk->add_flag("--decode", tk_decode,
               "with --jsonl: read id arrays, print the decoded JSON strings");
  tk->add_flag("--skip-special", tk_skip_special, "with --decode: drop special tokens");

  // dequant
  std::string dq_model, dq_tensor, dq_out;
  auto* dq = app.add_subcommand("dequant", "write one GGUF tensor as raw float32");
  dq->add_option("-m,--model", dq_model, "a .gguf file")->required();
  dq->add_option("--tensor", dq_tensor, "tensor name")->required();
  dq->add_option("-o,--out", dq_out, "output file")->required();

  // serve
  ServeFlags sv;
  auto* serve = app.add_subcommand(
      "serve", "OpenAI-compatible inference worker (HTTP) with continuous batching");
  sv.mf.Add(serve);
  serve->add_option("--host", sv.opt.http.host, "address to listen on (default 127.0.0.1)");
  serve->add_option("--port", sv.opt.http.port, "port; 0 = any free port (default 8080)");
  serve->add_option("--served-model-name", sv.opt.served_model_name,
                    "model id in the API (default: the model file's name without extension)");
  serve
      ->add_option("--max-batch", sv.opt.scheduler.max_batch,
                   "sequences decoded together (default 16)")
      ->check(CLI::Range(1, 4096));
  serve
      ->add_option("--max-queue", sv.opt.scheduler.max_queue,
                   "requests waiting beyond the batch; more get 503 + Retry-After (default 500)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  serve
      ->add_option("--max-backlog-ms", sv.opt.scheduler.max_backlog_ms,
                   "503 when the estimated backlog would exceed this; 0 = off (default 0)")
      ->check(CLI::Range(0.0, 1e12));
  serve
      ->add_option("--prefill-chunk", sv.opt.scheduler.prefill_chunk,
                   "prompt tokens per step, so long prompts do not stall decoding (default 256)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  serve
      ->add_option("--kv-block-tokens", sv.opt.scheduler.kv_block_tokens,
                   "positions per KV cache block, a multiple of 4 (default 16)")
      ->check(CLI::Range(int64_t{4}, int64_t{4096}));
  serve
      ->add_option("--kv-blocks", sv.opt.scheduler.kv_blocks,
                   "KV cache blocks; 0 = max-batch full contexts, at most 1/4 of RAM (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  serve
      ->add_option("--request-timeout", sv.opt.request_timeout_s,
                   "seconds a request may take from arrival (default 600)")
      ->check(CLI::Range(0.001, 1e9));
  serve
      ->add_option("--default-max-tokens", sv.opt.default_max_tokens,
                   "max_tokens when a request names none (default 1024, capped by the context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  serve
      ->add_option("--max-body-bytes", sv.max_body_bytes,
                   "largest request body; larger get 413 (default 1048576)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  serve->add_option("--http-threads", sv.opt.http.io_threads, "event-loop threads (default 2)")
      ->check(CLI::Range(1, 256));
  serve
      ->add_option("--read-timeout", sv.read_timeout_s,
                   "seconds to receive a whole request (default 30)")
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--idle-timeout", sv.idle_timeout_s,
                   "seconds a kept-alive connection may idle (default 60)")
      ->check(CLI::Range(0.001, 1e6));
  serve
      ->add_option("--shutdown-grace", sv.shutdown_grace_s,
                   "seconds in-flight requests get on SIGTERM (default 30)")
      ->check(CLI::Range(0.0, 1e6));
  sv.simulate = serve
                    ->add_option("--simulate", sv.simulate_spec,
                                 "TEST INSTRUMENT: no model runs (the -m model gives only its "
                                 "tokenizer, chat template and "
                                 "context); steps sleep a latency model and answers are canned. "
                                 "SPEC is key=value,...: "
                                 "prefill_ms (per prompt token, default 0.1), decode_ms (per "
                                 "decode step of the whole batch, "
                                 "default 20), batch_slowdown (step-time increase per extra "
                                 "sequence, default 0.01), max_batch "
                                 "(overrides --max-batch), jitter (step time x uniform [1-j, 1+j], "
                                 "default 0), seed; '' = defaults")
                    ->type_name("SPEC");

  frugal::cli::Commands commands;
  frugal::cli::AddLoadgenCommand(app, commands);
  frugal::cli::AddGatewayCommands(app, commands);
  frugal::cli::AddQuantizeCommand(app, commands);
  frugal::cli::AddEvalCommand(app, commands);
  frugal::cli::AddCacheEvalCommand(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& c : msg) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "frugal: error: %s (see frugal --help)\n", msg.c_str());
    return 2;
  }

  for (const auto& [cmd, run] : commands) {
    if (*cmd) return run();
  }
  if (*serve) return RunServe(sv);
  if (*gen)
    return RunGenerate(gen_mf, gen_prompt, gen_file, gen_chat, gen_system, gen_req, gen_verbose);
  if (*emb) return RunEmbed(emb_mf, emb_texts, emb_query, emb_whole);
  if (*ppl) return RunPerplexity(ppl_mf, ppl_file, ppl_chunk, ppl_max, ppl_json);
  if (*info) return RunInfo(info_model, info_json, info_tensors);
  if (*bench) return RunBench(bench_mf, bench_prompt, bench_decode, bench_reps, bench_json);
  if (*lg) return RunLogits(lg_mf, lg_tokens, lg_out);
  if (*tk)
    return RunTokenize(tk_model, tk_texts, tk_jsonl, tk_no_special, tk_parse_special, tk_decode,
                       tk_skip_special);
  if (*dq) return RunDequant(dq_model, dq_tensor, dq_out);
  return 2;
}
