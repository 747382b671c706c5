// BERT-family sentence embedder (all-MiniLM-L6-v2, bge-small, ...): word + position + token
// type embeddings, post-LayerNorm encoder layers with GELU, mean pooling over the attention
// mask, L2 normalisation. Loaded from an HF checkpoint (model_type "bert"). Immutable after
// Load; Embed may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "frugal/status.h"
#include "models/model_source.h"

namespace frugal {

struct BertHParams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_ff = 0;
  int64_t n_ctx = 0;  // max_position_embeddings
  float eps = 1e-12f;
};

class BertModel {
 public:
  static StatusOr<std::unique_ptr<BertModel>> Load(const ModelSource& source);
  const BertHParams& hparams() const { return hp_; }

  // Token ids (with [CLS]/[SEP]) -> unit-length sentence embedding of n_embd floats.
  StatusOr<std::vector<float>> Embed(std::span<const int32_t> tokens, ThreadPool& pool) const;

 private:
  struct Dense {
    const TensorView* w = nullptr;
    std::vector<float> b;
  };
  struct Layer {
    Dense q, k, v, attn_out, ffn_in, ffn_out;
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  };
  BertModel() = default;
  void Apply(const Dense& dense, const float* x, int64_t n, float* y, ThreadPool& pool) const;

  BertHParams hp_;
  const TensorView* word_embd_ = nullptr;
  const TensorView* pos_embd_ = nullptr;
  const TensorView* type_embd_ = nullptr;
  std::vector<float> embd_ln_w_, embd_ln_b_;
  std::vector<Layer> layers_;
};

}  // namespace frugal
