// Decoder-only Llama-family transformer: Llama 2/3, SmolLM, TinyLlama, Mistral-style, Qwen2
// (q/k/v bias). RMSNorm, RoPE (with linear and Llama-3 frequency scaling), grouped-query
// attention, SwiGLU, optional tied embeddings.
//
// Loaded from GGUF (arch "llama"/"qwen2") or an HF checkpoint (model_type "llama"/"qwen2"/
// "mistral"). Weights stay in their stored type in the mapping; Forward is const and may run
// concurrently on different KvCaches.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/huge_pages.h"
#include "common/thread_pool.h"
#include "formats/gguf.h"
#include "frugal/status.h"
#include "kernels/kernels.h"
#include "models/kv_cache.h"
#include "models/model_source.h"

namespace frugal {

struct LlamaHParams {
  std::string arch;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_rot = 0;  // rotary dimensions (<= head_dim)
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;  // tokens the model was trained for
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  bool rope_neox = false;  // half-split rotary pairs (HF, Qwen2) vs adjacent pairs (GGUF llama)
  float rope_linear_scale = 1.0f;        // positions are divided by this
  std::vector<float> rope_freq_factors;  // per rotary pair; frequencies divided by these (Llama 3)
  bool tied_embeddings = false;
};

class LlamaModel {
 public:
  static StatusOr<std::unique_ptr<LlamaModel>> Load(const ModelSource& source);

  const LlamaHParams& hparams() const { return hp_; }
  // Activations of the matmuls: float (default) or INT8 per 32-block. Set before use.
  void set_activation_precision(ActivationPrecision p) { act_ = p; }
  ActivationPrecision activation_precision() const { return act_; }
  int64_t kv_dim() const { return hp_.n_head_kv * hp_.head_dim; }
  // How NewKvCache's caches store keys and values: float (default, reference precision) or IEEE
  // half. A paged cache stores what its pool does. Set before use.
  void set_kv_type(KvType t) { kv_type_ = t; }
  KvType kv_type() const { return kv_type_; }
  std::unique_ptr<KvCache> NewKvCache(int64_t n_ctx) const;

  // Runs `tokens` at positions kv.size() .. kv.size()+n-1 in one batched pass, appends their
  // keys/values to `kv`, and writes logits: [n][n_vocab] when all_logits, else [n_vocab] for
  // the last token. Fails (without touching kv) if the tokens do not fit or an id is invalid.
  Status Forward(std::span<const int32_t> tokens, KvCache& kv, ThreadPool& pool,
                 std::vector<float>* logits, bool all_logits) const;

  // One decode step for several sequences at once: tokens[i] is appended to caches[i] (all
  // distinct) at its next position; every weight matrix is read once for the whole batch.
  // logits: [n][n_vocab]. A sequence's result is bit-identical to decoding it alone.
  Status DecodeBatch(std::span<const int32_t> tokens, std::span<KvCache* const> caches,
                     ThreadPool& pool, std::vector<float>* logits) const;

  // One item of a scheduler step: `token` of the sequence cached in `kv`, at position `pos`.
  struct StepItem {
    int32_t token;
    KvCache* kv;
    int64_t pos;
    bool logits;  // write this item's logits
  };
  // Runs any mix of sequences and positions in one batched pass (continuous batching: prompt
  // chunks of some sequences next to decode tokens of others). Writes every item's keys/values
  // at its position (a sequence's items must be consecutive positions, its earlier positions
  // already cached), then attention reads each item's cache up to its position. Logits of the
  // items with `logits` set, in item order: [count][n_vocab]. Cache sizes are the caller's to
  // update. Each item's result is bit-identical whatever else runs in the same step.
  Status Step(std::span<const StepItem> items, ThreadPool& pool, std::vector<float>* logits) const;

  // Re-lays GGUF Q4_0 / Q4_1 / Q8_0 / Q4_K / Q5_K / Q6_K / Q5_0 / Q5_1 matrices into 8-row tiles
  // (kernels/quantize.h: RepackedType), so the tiled integer kernels run on them. Every weight
  // keeps its value; costs a copy of those matrices in memory. Returns the bytes repacked.
  size_t RepackWeights();

  // Bytes of weights streamed per decoded token (every matmul weight once + one embedding row).
  size_t weight_bytes_per_token() const;

  // --- Hooks for the quantizer (src/quant): it runs the model one layer at a time over its
  // calibration data, watches the inputs of every matrix, and swaps in quantized weights. ---

  // The input a layer's matrices read: kAttn feeds Q/K/V, kAttnOut the output projection,
  // kFfn gate/up, kFfnDown down.
  enum class LinearInput { kAttn, kAttnOut, kFfn, kFfnDown };
  // Sees x [n][cols], the input of `input` in `layer`, before the matrices read it.
  using ActivationObserver = std::function<void(int64_t layer, LinearInput input, const float* x,
                                                int64_t n, int64_t cols)>;
  // Token embeddings of `tokens`: x [n][n_embd].
  void Embed(std::span<const int32_t> tokens, float* x) const;
  // Runs layer `li` over one sequence of n tokens at positions 0..n-1: x [n][n_embd] is the
  // layer's input and becomes its output. kv holds at least n positions; its entries for layer
  // li are overwritten. `observer` (may be empty) sees every matrix input.
  Status RunLayer(int64_t li, int64_t n, float* x, KvCache& kv, ThreadPool& pool,
                  const ActivationObserver& observer) const;
  // Matrices and norms by GGUF name ("blk.3.ffn_up.weight", "token_embd.weight",
  // "blk.0.attn_norm.weight"); null when absent. With tied embeddings "output.weight" is absent
  // and replacing token_embd.weight replaces the output head too.
  const TensorView* FindMatrix(std::string_view name) const;
  const std::vector<float>* FindNorm(std::string_view name) const;
  // Replaces a matrix by a view of the same shape (caller-owned: it and its data must outlive
  // the model), or a norm's weights.
  Status SetMatrix(std::string_view name, const TensorView* view);
  Status SetNorm(std::string_view name, std::vector<float> values);

 private:
  struct Layer {
    const TensorView* wq = nullptr;
    const TensorView* wk = nullptr;
    const TensorView* wv = nullptr;
    const TensorView* wo = nullptr;
    const TensorView* w_gate = nullptr;
    const TensorView* w_up = nullptr;
    const TensorView* w_down = nullptr;
    std::vector<float> attn_norm, ffn_norm;
    std::vector<float> bq, bk, bv, bo;  // empty when absent
  };

  // Activations of one batched step.
  struct StepScratch {
    StepScratch(const LlamaHParams& hp, int64_t n, int64_t kv_d);
    std::vector<float> x, xn, q, k, v, attn, o, g, u;
  };

  LlamaModel() = default;
  std::vector<float> RopeTable(std::span<const StepItem> items) const;
  // One layer of Step over s.x, in place.
  void LayerForward(int64_t li, std::span<const StepItem> items, const std::vector<float>& rope_cs,
                    StepScratch& s, ThreadPool& pool, const ActivationObserver* observer) const;
  bool ParseLayerName(std::string_view name, int64_t* li, std::string_view* rest) const;
  const TensorView** MatrixSlot(std::string_view name);
  std::vector<float>* NormSlot(std::string_view name);
  // cos and sin of the rotary angle of each of the n_rot / 2 frequencies at `pos`.
  void RopeCosSin(int64_t pos, float* cos_out, float* sin_out) const;

  LlamaHParams hp_;
  ActivationPrecision act_ = ActivationPrecision::kF32;
  KvType kv_type_ = KvType::kF32;
  const TensorView* tok_embd_ = nullptr;
  const TensorView* output_ = nullptr;
  std::vector<float> output_norm_;
  std::vector<double> rope_freq_;  // per rotated pair, scaling applied
  std::vector<Layer> layers_;
  std::vector<TensorView> owned_views_;    // renamed views for HF checkpoints
  std::deque<TensorView> repacked_views_;  // stable addresses: layers point into it
  HugePageBuffer repacked_data_;           // every re-laid matrix, one after another
};

// Loads a small 1-D tensor (norm weight, bias) of any float type into a float vector.
// Tensor names of the Llama family: GGUF ("blk.3.attn_q.weight") <-> transformers
// ("model.layers.3.self_attn.q_proj.weight"). LlamaGgufTensorName gives "" for a name it does
// not know (e.g. rotary_emb.inv_freq).
std::string LlamaHfTensorName(const std::string& gguf_name);
std::string LlamaGgufTensorName(const std::string& hf_name);

StatusOr<std::vector<float>> LoadVector(const TensorView* t, int64_t expected,
                                        const std::string& name);

}  // namespace frugal
