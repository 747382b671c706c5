// `frugal generate | embed | perplexity | bench | logits`: the commands that run a model.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/model_flags.h"
#include "common/mmap_file.h"
#include "frugal/engine.h"

namespace frugal::cli {
namespace {

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
    auto ids = (*engine)->EncodeChat(messages);
    if (!ids.ok()) return Fail(ids.status());
    req.prompt_tokens = *std::move(ids);
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
int RunBench(const CommonModelFlags& mf, int64_t prompt_tokens, int64_t decode_tokens, int reps,
             bool warmup, bool json) {
  auto engine = mf.Open();
  if (!engine.ok()) return Fail(engine.status());
  auto r = (*engine)->Bench(prompt_tokens, decode_tokens, reps, warmup);
  if (!r.ok()) return Fail(r.status());
  if (json) {
    nlohmann::json j = {{"model", mf.model},
                        {"threads", r->threads},
                        {"prompt_tokens", r->prompt_tokens},
                        {"decode_tokens", r->decode_tokens},
                        {"prefill_tokens_per_s", r->prefill_tokens_per_s},
                        {"decode_tokens_per_s", r->decode_tokens_per_s},
                        {"batch8_decode_tokens_per_s", r->batch8_decode_tokens_per_s},
                        {"batch8_speedup", r->batch8_speedup},
                        {"weight_bytes_per_token", r->weight_bytes_per_token},
                        {"weight_read_gbps", r->weight_gbps},
                        {"memory_read_gbps", r->memory_read_gbps},
                        {"roofline_fraction", r->roofline_fraction},
                        {"warmup", r->warmup},
                        {"passes", nlohmann::json::array()}};
    for (const BenchPass& p : r->passes) {
      j["passes"].push_back({{"prefill_tokens_per_s", p.prefill_tokens_per_s},
                             {"decode_tokens_per_s", p.decode_tokens_per_s},
                             {"batch8_decode_tokens_per_s", p.batch8_decode_tokens_per_s}});
    }
    std::puts(j.dump().c_str());
  } else {
    std::printf("threads:            %d\n", r->threads);
    std::printf("prefill:            %.1f tokens/s (%lld-token prompt, median of %d%s)\n",
                r->prefill_tokens_per_s, static_cast<long long>(r->prompt_tokens), reps,
                r->warmup ? ", after a warm-up" : "");
    std::printf("decode:             %.1f tokens/s (%lld tokens, median of %d)\n",
                r->decode_tokens_per_s, static_cast<long long>(r->decode_tokens), reps);
    std::printf(
        "decode, 8 seqs:     %.1f tokens/s (all 8 together; %.2fx one sequence, the "
        "median of each pass's ratio)\n",
        r->batch8_decode_tokens_per_s, r->batch8_speedup);
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

struct GenerateFlags {
  CommonModelFlags mf;
  std::string prompt, file, system;
  bool chat = false, verbose = false;
  frugal::GenerateRequest req = [] {
    frugal::GenerateRequest r;
    r.max_tokens = 128;
    return r;
  }();
};

struct EmbedFlags {
  CommonModelFlags mf;
  std::vector<std::string> texts;
  bool query = false, whole = false;
};

struct PerplexityFlags {
  CommonModelFlags mf;
  std::string file;
  int64_t chunk = 0, max = 0;
  bool json = false;
};

struct BenchFlags {
  CommonModelFlags mf;
  int64_t prompt = 128, decode = 32;
  int reps = 3;
  bool no_warmup = false;
  bool json = false;
};

struct LogitsFlags {
  CommonModelFlags mf;
  std::string tokens, out;
};

}  // namespace

Status WriteFloats(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return frugal::IoError("cannot write " + path);
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
  return out ? Status::Ok() : frugal::IoError("error writing " + path);
}

void AddModelCommands(CLI::App& app, Commands& out) {
  {
    auto f = std::make_shared<GenerateFlags>();
    auto* gen = app.add_subcommand("generate", "generate text from a prompt, streamed to stdout");
    f->mf.Add(gen);
    gen->add_option("-p,--prompt", f->prompt, "prompt text");
    gen->add_option("-f,--file", f->file, "read the prompt from a file");
    gen->add_option("-n,--max-tokens", f->req.max_tokens,
                    "tokens to generate at most (default " + DefaultText(f->req.max_tokens) + ")")
        ->check(CLI::Range(0, 1 << 20));
    gen->add_flag("--chat", f->chat,
                  "wrap the prompt in the model's chat template as a user message");
    gen->add_option("--system", f->system, "system message (with --chat)");
    gen->add_option("--temperature", f->req.sampling.temperature,
                    "sampling temperature; 0 = greedy (default " +
                        DefaultText(f->req.sampling.temperature) + ")")
        ->check(CLI::Range(0.0, 100.0));
    gen->add_option("--top-k", f->req.sampling.top_k,
                    "keep the k most likely tokens; 0 = all (default " +
                        DefaultText(f->req.sampling.top_k) + ")")
        ->check(CLI::Range(0, 1 << 24));
    gen->add_option("--top-p", f->req.sampling.top_p,
                    "nucleus sampling mass (default " + DefaultText(f->req.sampling.top_p) + ")")
        ->check(CLI::Range(0.0, 1.0));
    gen->add_option("--min-p", f->req.sampling.min_p,
                    "drop tokens below min-p x the top probability (default " +
                        DefaultText(f->req.sampling.min_p) + ")")
        ->check(CLI::Range(0.0, 1.0));
    gen->add_option("--repeat-penalty", f->req.sampling.repetition_penalty,
                    "repetition penalty; 1 = off (default " +
                        DefaultText(f->req.sampling.repetition_penalty) + ")")
        ->check(CLI::Range(0.0, 10.0));
    gen->add_option("--repeat-last-n", f->req.sampling.repeat_last_n,
                    "tokens the penalty looks back (default " +
                        DefaultText(f->req.sampling.repeat_last_n) + ")")
        ->check(CLI::Range(0, 1 << 20));
    gen->add_option("--seed", f->req.sampling.seed,
                    "RNG seed; 0 = random (default " + DefaultText(f->req.sampling.seed) + ")");
    gen->add_option("--stop", f->req.stop, "stop string (repeatable)");
    gen->add_flag("-v,--verbose", f->verbose, "print timings to stderr");
    out.emplace_back(gen, [f] {
      return RunGenerate(f->mf, f->prompt, f->file, f->chat, f->system, f->req, f->verbose);
    });
  }
  {
    auto f = std::make_shared<EmbedFlags>();
    auto* emb = app.add_subcommand("embed", "print sentence embeddings, one JSON array per text");
    f->mf.Add(emb, false);
    emb->add_option("texts", f->texts, "texts to embed");
    emb->add_flag("--query", f->query,
                  "put the model's query prefix in front (\"query: \" for multilingual-e5), as the "
                  "cache does");
    emb->add_flag(
        "--whole", f->whole,
        "embed a text longer than the window whole, in windows (as the cache does), not truncated");
    out.emplace_back(emb, [f] { return RunEmbed(f->mf, f->texts, f->query, f->whole); });
  }
  {
    auto f = std::make_shared<PerplexityFlags>();
    auto* ppl = app.add_subcommand("perplexity", "perplexity of a model on a text file");
    f->mf.Add(ppl);
    ppl->add_option("-f,--file", f->file, "text file")->required();
    ppl->add_option("--chunk", f->chunk, "tokens per chunk (default min(ctx, 512))")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    ppl->add_option("--max-tokens", f->max,
                    "score only the first N tokens of the text (default all)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    ppl->add_flag("--json", f->json, "print one JSON object");
    out.emplace_back(ppl, [f] { return RunPerplexity(f->mf, f->file, f->chunk, f->max, f->json); });
  }
  {
    auto f = std::make_shared<BenchFlags>();
    auto* bench =
        app.add_subcommand("bench", "prefill and decode tokens/s, weight bytes read per second");
    f->mf.Add(bench);
    bench
        ->add_option("--prompt-tokens", f->prompt,
                     "prompt length (default " + DefaultText(f->prompt) + ")")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    bench
        ->add_option("--decode-tokens", f->decode,
                     "tokens to decode (default " + DefaultText(f->decode) + ")")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    bench
        ->add_option("--reps", f->reps,
                     "repetitions; medians are reported (default " + DefaultText(f->reps) + ")")
        ->check(CLI::Range(1, 1000));
    bench->add_flag("--no-warmup", f->no_warmup,
                    "time the first prefill too (default: one untimed prefill and decode step "
                    "first, as llama-bench)");
    bench->add_flag("--json", f->json, "print one JSON object");
    out.emplace_back(bench, [f] {
      return RunBench(f->mf, f->prompt, f->decode, f->reps, !f->no_warmup, f->json);
    });
  }
  {
    auto f = std::make_shared<LogitsFlags>();
    auto* lg = app.add_subcommand(
        "logits", "write raw float32 logits [n_tokens][n_vocab] of one prefill pass");
    f->mf.Add(lg);
    lg->add_option("--tokens", f->tokens, "comma-separated token ids")->required();
    lg->add_option("-o,--out", f->out, "output file")->required();
    out.emplace_back(lg, [f] { return RunLogits(f->mf, f->tokens, f->out); });
  }
}

}  // namespace frugal::cli
