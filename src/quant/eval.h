// Quality of a quantized model against its reference (`frugal eval`, docs/eval.md).
//
// Measured on a text (perplexity, KL divergence, top-1 agreement) and, optionally, on a set of
// numeric probes (greedy answers whose numbers must match the reference's):
//
//   ppl_ref, ppl      exp(mean NLL) over the scored positions, exactly as Engine::Perplexity
//                     (non-overlapping chunks, the second half of each scored), so each matches
//                     `frugal perplexity` with the same --chunk/--max-tokens/--activations.
//   kld_mean, p99     KL(ref || model) in nats per scored position, from the full softmax over
//                     the vocabulary in double (see EvalReference for the stored precision).
//   top1_agreement    share of scored positions where both models' argmax is the same token.
//   numeric_fidelity  share of probes whose greedy answer has exactly the reference answer's
//                     numbers (ExtractNumbers, compared as ordered lists); NaN without probes.
//
// The reference side is an object of its own (EvalReference) so that a caller evaluating several
// candidates against one reference (`frugal quantize --auto-mixed`) runs the reference once.
// The probes, the costly part, may be left for later (EvalReferenceOptions::defer_probes): a
// gate that already fails on the text (`frugal quantize`) never answers them.
//
// Thread safety: an EvalReference is immutable after Build (and AnswerProbes, when deferred);
// EvaluateAgainst may run on several threads against one reference (each call opens its own
// engine).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/engine.h"
#include "frugal/status.h"
#include "text/numbers.h"
#include "tokenizer/chat_template.h"

namespace frugal {

// stage ("reference logits", "reference probes", "logits", "probes"), work done, work total.
using EvalProgress = std::function<void(std::string_view stage, int64_t done, int64_t total)>;

// One line of a probes file: {"prompt": "..."} (raw text, special tokens not parsed) or
// {"messages": [{"role", "content"}, ...]} (rendered with each model's chat template).
// Optional "id" (string or number); otherwise the id is "line N". Other keys are ignored.
struct Probe {
  std::string id;
  std::string prompt;                 // when messages is empty
  std::vector<ChatMessage> messages;  // chat probes
};

// Reads a probes JSONL file: blank lines skipped; a malformed line is InvalidArgument naming the
// file and line; an empty file is InvalidArgument.
StatusOr<std::vector<Probe>> LoadProbes(const std::string& path);
StatusOr<std::vector<Probe>> ParseProbes(std::string_view jsonl, std::string_view name);

// ExtractNumbers (text/numbers.h, the answer reading) reads the numbers of the answers.

// How a per-position distribution is kept (see EvalReference): the log-softmax of the logits in
// double, rounded to IEEE half.
void LogSoftmaxToF16(std::span<const float> logits, std::span<uint16_t> out);
// KL(P || Q) in nats of two distributions stored as LogSoftmaxToF16; each is renormalised in
// double first (rounding leaves a sum slightly off 1). Identical inputs give exactly 0; never
// negative.
double KlDivergenceF16(std::span<const uint16_t> log_p, std::span<const uint16_t> log_q);
// KL(P || Q) in nats with P = softmax(p_logits), Q = softmax(q_logits), all in double: the exact
// value the F16 form approximates (tests, and callers with logits at hand).
double KlDivergence(std::span<const float> p_logits, std::span<const float> q_logits);
// The p-th percentile (0 < p <= 100) by nearest rank: the smallest value with at least p % of
// the values at or below it. NaN for no values.
double PercentileNearestRank(std::vector<double> values, double p);

struct EvalReferenceOptions {
  // The reference model. Float activations and a float KV cache unless set otherwise
  // (EngineOptions' own defaults are INT8 and F16): the weights alone are measured, and the
  // gates and figures in docs/eval.md were measured so. Candidates should use the same.
  EngineOptions engine = [] {
    EngineOptions o;
    o.int8_activations = false;
    o.kv_type = KvCacheType::kF32;
    return o;
  }();
  std::string text;           // scored text (tokenized without BOS, as perplexity)
  std::vector<Probe> probes;  // may be empty: no numeric fidelity
  int64_t chunk = 0;          // tokens per chunk; 0 = min(context, 512)
  // Text tokens used (the first N); 0 = all. The reference keeps n_vocab halves for every scored
  // position, about (max_tokens / 2) x n_vocab x 2 bytes: 4096 tokens of SmolLM2 (49152 tokens
  // in the vocabulary) are ~2040 scored positions, 200 MB.
  int64_t max_tokens = 4096;
  int max_new_tokens = 48;  // greedy tokens per probe answer (fewer on EOS)
  int max_batch = 16;       // probes decoded together (continuous batching)
  // Build scores the text only; AnswerProbes answers the probes when they are first needed.
  bool defer_probes = false;
  EvalProgress progress;
};

struct ProbeAnswer {
  std::string id;
  std::string prompt;                // as given: the prompt, or the last message's content
  std::string text;                  // greedy answer
  std::vector<std::string> numbers;  // the answer reading's values (text/numbers.h)
  std::string finish_reason;         // "stop" or "length"
  int64_t prompt_tokens = 0, answer_tokens = 0;
};

struct ProbeMismatch {
  std::string id;
  std::string prompt;
  std::string ref_answer, answer;
  std::vector<std::string> ref_numbers, numbers;
};

struct EvalReport {
  std::string model, ref;
  std::string activations;  // "f32" or "int8"
  double ppl_ref = 0, ppl = 0;
  double kld_mean = 0, kld_p99 = 0, kld_max = 0;
  double top1_agreement = 0;
  int64_t tokens_scored = 0;  // scored positions (KL, top-1, perplexity)
  int64_t chunks = 0, chunk_size = 0;
  // Probes: NaN fidelity when there are none.
  double numeric_fidelity = std::numeric_limits<double>::quiet_NaN();
  int64_t probes = 0;
  int64_t probes_matched = 0;              // same numbers
  int64_t probes_identical = 0;            // same answer text
  int64_t probes_ref_without_numbers = 0;  // weak probes: the reference answered no number
  std::vector<ProbeMismatch> mismatches;
  int64_t probe_prompt_tokens = 0;      // all probes' prompts (chat-rendered), in tokens
  int64_t probe_answer_tokens = 0;      // tokens the model generated for them
  double seconds_ref = 0, seconds = 0;  // reference build, candidate evaluation
};

class EvalReference {
 public:
  // Runs the reference model over the text and the probes and keeps what a candidate is
  // compared with. The model is closed before this returns.
  static StatusOr<std::unique_ptr<EvalReference>> Build(const EvalReferenceOptions& options);

  const std::string& model_path() const { return model_path_; }
  const EvalReferenceOptions& options() const { return options_; }
  int64_t n_vocab() const { return n_vocab_; }
  int64_t chunk() const { return chunk_; }
  int64_t chunks() const { return n_chunks_; }
  int64_t positions() const { return static_cast<int64_t>(nll_.size()); }
  double perplexity() const;
  const std::vector<ProbeAnswer>& answers() const { return answers_; }
  // Whether the probes (if any) have their reference answers: after Build, unless deferred.
  bool probes_answered() const { return probes_answered_; }
  // The reference's answers to the probes, when Build deferred them (opens the model again);
  // nothing when they are answered already. Not thread-safe: call it before sharing the object.
  Status AnswerProbes(const EvalProgress& progress = {});
  double seconds() const { return seconds_; }
  size_t memory_bytes() const;

  // What candidates are compared with, per scored position p (0 <= p < positions()).
  const std::vector<int32_t>& tokens() const { return tokens_; }
  std::span<const uint16_t> logprobs(int64_t p) const {
    return {logprobs_.data() + p * n_vocab_, static_cast<size_t>(n_vocab_)};
  }
  const std::vector<int32_t>& argmax() const { return argmax_; }
  const std::vector<double>& nll() const { return nll_; }

 private:
  EvalReference() = default;

  std::string model_path_;
  EvalReferenceOptions options_;  // text and probes included (the candidate sees the same)
  std::vector<int32_t> tokens_;   // the text's tokens, cut to max_tokens
  int64_t n_vocab_ = 0, chunk_ = 0, n_chunks_ = 0;
  // Per scored position: log-softmax over the whole vocabulary as IEEE half. Half, not float:
  // KL needs the full distribution, and a float copy of 2040 x 49152 would be 400 MB (1 GB for a
  // 128k vocabulary). The candidate's log-probabilities are rounded the same way before the KL,
  // so a model against itself gives exactly 0. The rounding adds a few 1e-6 nats at most (noise
  // on the tail's log-probabilities; unit test KlF16CloseToExact, docs/eval.md): far below any
  // useful gate (kld<0.01 .. 0.05).
  std::vector<uint16_t> logprobs_;  // [positions][n_vocab]
  std::vector<int32_t> argmax_;     // per scored position, from the float logits
  std::vector<double> nll_;         // per scored position, as Engine::Perplexity computes it
  std::vector<ProbeAnswer> answers_;
  bool probes_answered_ = false;
  double seconds_ = 0;
};

// Evaluates one candidate against a built reference. The candidate must tokenize the text to the
// same tokens and have the reference's vocabulary size (InvalidArgument otherwise). Without
// `with_probes` only the text is scored (numeric_fidelity NaN, probes 0; AddProbes adds them);
// with it the reference's probes must be answered (Internal otherwise).
StatusOr<EvalReport> EvaluateAgainst(const EvalReference& ref, const EngineOptions& model,
                                     const EvalProgress& progress = {}, bool with_probes = true);
// The probe half of EvaluateAgainst: answers the reference's probes with `model` and fills the
// report's probe fields (numeric_fidelity, probes*, mismatches, probe_*_tokens, seconds).
Status AddProbes(EvalReport& report, const EvalReference& ref, const EngineOptions& model,
                 const EvalProgress& progress = {});

struct EvalOptions {
  std::vector<std::string> models;  // each evaluated against the one reference run
  std::string ref;
  std::string text_path;      // required
  std::string probes_path;    // "" = no probes (numeric fidelity n/a)
  int64_t chunk = 0;          // 0 = min(context, 512)
  int64_t max_tokens = 4096;  // text tokens used; 0 = all (memory: see above)
  int max_new_tokens = 48;
  int max_batch = 16;
  int threads = 0;
  bool int8_activations = false;  // float by default: the weights alone are measured
  EvalProgress progress;
};

// Reads the files, builds the reference once and evaluates each model against it (reports in
// the order of `models`).
StatusOr<std::vector<EvalReport>> Evaluate(const EvalOptions& options);

// A table for people; "n/a" where there is nothing to show (no probes).
std::string FormatReport(const EvalReport& report);
// ppl_ref, ppl, kld_mean, kld_p99, kld_max, top1_agreement, numeric_fidelity (null without
// probes), tokens_scored, chunks, chunk_size, probes, probes_matched, probes_identical,
// probes_ref_without_numbers, mismatches [{id, prompt, ref_answer, answer, ref_numbers,
// numbers}], model, ref, activations, seconds_ref, seconds.
std::string ReportJson(const EvalReport& report);

}  // namespace frugal
