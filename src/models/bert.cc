#include "models/bert.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "models/llama.h"  // LoadVector

namespace frugal {

bool IsBertFamily(const std::string& model_type) {
  return model_type == "bert" || model_type == "xlm-roberta" || model_type == "roberta";
}

StatusOr<std::unique_ptr<BertModel>> BertModel::Load(const ModelSource& src) {
  if (!IsBertFamily(src.architecture())) {
    return Unimplemented("architecture '" + src.architecture() +
                         "' is not a supported encoder (supported: bert, xlm-roberta, roberta)");
  }
  if (src.e5() != nullptr) return LoadE5(*src.e5());
  if (src.hf() == nullptr)
    return Unimplemented("BERT models load from Hugging Face checkpoints or E5S1 files only");
  const HfCheckpoint& ck = *src.hf();
  const HfConfig& c = ck.config();
  auto m = std::unique_ptr<BertModel>(new BertModel());
  BertHParams& hp = m->hp_;
  hp.n_embd = c.hidden_size;
  hp.n_layer = c.num_hidden_layers;
  hp.n_head = c.num_attention_heads;
  hp.n_ff = c.intermediate_size;
  hp.eps = static_cast<float>(c.layer_norm_eps);
  // RoBERTa numbers positions from padding_idx + 1 (create_position_ids_from_input_ids).
  if (src.architecture() != "bert") hp.pos_offset = (c.pad_token_id >= 0 ? c.pad_token_id : 1) + 1;
  const int64_t n_pos = c.max_position_embeddings;
  hp.n_ctx = n_pos - hp.pos_offset;
  const std::string& pooling = ck.sentence_pooling();
  if (pooling == "cls") {
    hp.cls_pooling = true;
  } else if (!pooling.empty() && pooling != "mean") {
    return Unimplemented(src.path() + "/1_Pooling/config.json: pooling '" + pooling +
                         "' is not supported (mean, cls)");
  }
  if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_head <= 0 || hp.n_ff <= 0 || hp.n_ctx <= 0 ||
      hp.n_embd % hp.n_head != 0) {
    return InvalidArgument(src.path() + "/config.json has inconsistent BERT dimensions");
  }
  if (!c.hidden_act.empty() && c.hidden_act != "gelu") {
    return Unimplemented("BERT hidden_act '" + c.hidden_act + "' is not supported (gelu only)");
  }
  // Checkpoints name tensors with or without the "bert." / "roberta." prefix.
  std::string prefix;
  for (const char* p : {"bert.", "roberta."}) {
    if (ck.FindTensor(std::string(p) + "embeddings.word_embeddings.weight")) prefix = p;
  }
  auto find = [&](const std::string& name) { return ck.FindTensor(prefix + name); };
  auto vec = [&](const std::string& name, int64_t n, std::vector<float>* out) -> Status {
    auto v = LoadVector(find(name), n, prefix + name);
    if (!v.ok()) return v.status();
    *out = std::move(v).value();
    return Status::Ok();
  };
  auto matrix = [&](const std::string& name, int64_t ne0,
                    int64_t ne1) -> StatusOr<const TensorView*> {
    const TensorView* t = find(name);
    if (t == nullptr) return DataLoss("required tensor '" + prefix + name + "' is missing");
    if (t->ne[0] != ne0 || t->rows() != ne1) {
      return DataLoss("tensor '" + prefix + name + "' has shape " + t->ShapeString());
    }
    return t;
  };
  const TensorView* we = find("embeddings.word_embeddings.weight");
  if (we == nullptr)
    return DataLoss("required tensor 'embeddings.word_embeddings.weight' is missing");
  hp.n_vocab = we->rows();
  FRUGAL_ASSIGN_OR_RETURN(m->word_embd_,
                          matrix("embeddings.word_embeddings.weight", hp.n_embd, hp.n_vocab));
  FRUGAL_ASSIGN_OR_RETURN(m->pos_embd_,
                          matrix("embeddings.position_embeddings.weight", hp.n_embd, n_pos));
  if (find("embeddings.token_type_embeddings.weight") != nullptr) {
    FRUGAL_ASSIGN_OR_RETURN(m->type_embd_,
                            matrix("embeddings.token_type_embeddings.weight", hp.n_embd,
                                   find("embeddings.token_type_embeddings.weight")->rows()));
  }
  FRUGAL_RETURN_IF_ERROR(vec("embeddings.LayerNorm.weight", hp.n_embd, &m->embd_ln_w_));
  FRUGAL_RETURN_IF_ERROR(vec("embeddings.LayerNorm.bias", hp.n_embd, &m->embd_ln_b_));
  m->layers_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    Layer& l = m->layers_[static_cast<size_t>(i)];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    auto dense = [&](const std::string& name, int64_t in, int64_t out, Dense* dst) -> Status {
      auto w = matrix(p + name + ".weight", in, out);
      if (!w.ok()) return w.status();
      dst->w = dst->w_file = *w;
      return vec(p + name + ".bias", out, &dst->b);
    };
    FRUGAL_RETURN_IF_ERROR(dense("attention.self.query", hp.n_embd, hp.n_embd, &l.q));
    FRUGAL_RETURN_IF_ERROR(dense("attention.self.key", hp.n_embd, hp.n_embd, &l.k));
    FRUGAL_RETURN_IF_ERROR(dense("attention.self.value", hp.n_embd, hp.n_embd, &l.v));
    FRUGAL_RETURN_IF_ERROR(dense("attention.output.dense", hp.n_embd, hp.n_embd, &l.attn_out));
    FRUGAL_RETURN_IF_ERROR(dense("intermediate.dense", hp.n_embd, hp.n_ff, &l.ffn_in));
    FRUGAL_RETURN_IF_ERROR(dense("output.dense", hp.n_ff, hp.n_embd, &l.ffn_out));
    FRUGAL_RETURN_IF_ERROR(vec(p + "attention.output.LayerNorm.weight", hp.n_embd, &l.ln1_w));
    FRUGAL_RETURN_IF_ERROR(vec(p + "attention.output.LayerNorm.bias", hp.n_embd, &l.ln1_b));
    FRUGAL_RETURN_IF_ERROR(vec(p + "output.LayerNorm.weight", hp.n_embd, &l.ln2_w));
    FRUGAL_RETURN_IF_ERROR(vec(p + "output.LayerNorm.bias", hp.n_embd, &l.ln2_b));
  }
  return m;
}

StatusOr<std::unique_ptr<BertModel>> BertModel::LoadE5(const E5File& f) {
  const E5HParams& e = f.hparams();
  auto m = std::unique_ptr<BertModel>(new BertModel());
  BertHParams& hp = m->hp_;
  hp.n_vocab = e.n_vocab;
  hp.n_embd = e.n_embd;
  hp.n_layer = e.n_layer;
  hp.n_head = e.n_head;
  hp.n_ff = e.n_ff;
  hp.n_ctx = e.n_pos;  // the file's table starts at the text's first position
  hp.pos_offset = 0;
  hp.cls_pooling = false;  // multilingual-e5: mean pooling
  hp.eps = e.eps;
  auto need = [&](const std::string& name) -> StatusOr<const TensorView*> {
    const TensorView* t = f.FindTensor(name);
    if (t == nullptr) return DataLoss(f.path() + ": required tensor '" + name + "' is missing");
    return t;
  };
  auto vec = [&](const std::string& name, int64_t n, std::vector<float>* out) -> Status {
    FRUGAL_ASSIGN_OR_RETURN(const TensorView* t, need(name));
    auto v = LoadVector(t, n, name);
    if (!v.ok()) return v.status();
    *out = std::move(v).value();
    return Status::Ok();
  };
  FRUGAL_ASSIGN_OR_RETURN(m->word_embd_, need("emb.word"));
  FRUGAL_ASSIGN_OR_RETURN(m->pos_embd_, need("emb.pos"));
  FRUGAL_ASSIGN_OR_RETURN(m->type_embd_, need("emb.type"));
  FRUGAL_RETURN_IF_ERROR(vec("emb.ln.w", hp.n_embd, &m->embd_ln_w_));
  FRUGAL_RETURN_IF_ERROR(vec("emb.ln.b", hp.n_embd, &m->embd_ln_b_));
  m->layers_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    Layer& l = m->layers_[static_cast<size_t>(i)];
    const std::string p = "l" + std::to_string(i) + ".";
    auto dense = [&](const std::string& name, int64_t out, Dense* dst) -> Status {
      FRUGAL_ASSIGN_OR_RETURN(dst->w, need(p + name + ".w"));
      dst->w_file = dst->w;
      return vec(p + name + ".b", out, &dst->b);
    };
    FRUGAL_RETURN_IF_ERROR(dense("q", hp.n_embd, &l.q));
    FRUGAL_RETURN_IF_ERROR(dense("k", hp.n_embd, &l.k));
    FRUGAL_RETURN_IF_ERROR(dense("v", hp.n_embd, &l.v));
    FRUGAL_RETURN_IF_ERROR(dense("ao", hp.n_embd, &l.attn_out));
    FRUGAL_RETURN_IF_ERROR(dense("fi", hp.n_ff, &l.ffn_in));
    FRUGAL_RETURN_IF_ERROR(dense("fo", hp.n_embd, &l.ffn_out));
    FRUGAL_RETURN_IF_ERROR(vec(p + "aln.w", hp.n_embd, &l.ln1_w));
    FRUGAL_RETURN_IF_ERROR(vec(p + "aln.b", hp.n_embd, &l.ln1_b));
    FRUGAL_RETURN_IF_ERROR(vec(p + "oln.w", hp.n_embd, &l.ln2_w));
    FRUGAL_RETURN_IF_ERROR(vec(p + "oln.b", hp.n_embd, &l.ln2_b));
  }
  return m;
}

void BertModel::AddBias(const Dense& dense, int64_t n, float* y) {
  const auto out = static_cast<int64_t>(dense.b.size());
  for (int64_t i = 0; i < n; ++i) Axpy(1.0f, dense.b.data(), y + i * out, out);
}

void BertModel::Apply(const Dense& dense, const float* x, int64_t n, float* y,
                      ThreadPool& pool) const {
  MatMul(*dense.w, x, n, y, pool, act_);
  AddBias(dense, n, y);
}

Status BertModel::UseInt8Weights() {
  if (int8_views_.empty()) {
    for (Layer& l : layers_) {
      for (Dense* d : {&l.q, &l.k, &l.v, &l.attn_out, &l.ffn_in, &l.ffn_out}) {
        const TensorView& t = *d->w_file;
        const int64_t rows = t.rows(), cols = t.ne[0];
        if (const std::optional<TensorType> tiled = RepackedType(t)) {
          // Already quantized by the file: the same values in the tiled layout.
          std::vector<uint8_t>& data = int8_data_.emplace_back(RepackedBytes(t));
          RepackRows(t, data.data());
          TensorView& v = int8_views_.emplace_back(t);
          v.type = *tiled;
          v.data = data.data();
          v.nbytes = data.size();
          d->w = &v;
          continue;
        }
        if (rows % 8 != 0 || cols % 32 != 0)
          return Unimplemented("a dense layer of " + t.ShapeString() + " has no INT8 tile layout");
        std::vector<float> f(static_cast<size_t>(rows * cols));
        DequantizeTensor(t, f.data());
        FRUGAL_ASSIGN_OR_RETURN(std::vector<uint8_t> q,
                                QuantizeRowsRtn(TensorType::kI8_G32, f.data(), rows, cols));
        std::vector<uint8_t>& data = int8_data_.emplace_back(std::move(q));
        TensorView& v = int8_views_.emplace_back(t);
        v.type = TensorType::kI8_G32;
        v.data = data.data();
        v.nbytes = data.size();
        d->w = &v;
      }
    }
  } else {
    size_t i = 0;
    for (Layer& l : layers_) {
      for (Dense* d : {&l.q, &l.k, &l.v, &l.attn_out, &l.ffn_in, &l.ffn_out})
        d->w = &int8_views_[i++];
    }
  }
  act_ = ActivationPrecision::kInt8;
  return Status::Ok();
}

void BertModel::UseFloatWeights() {
  for (Layer& l : layers_) {
    for (Dense* d : {&l.q, &l.k, &l.v, &l.attn_out, &l.ffn_in, &l.ffn_out}) d->w = d->w_file;
  }
  act_ = ActivationPrecision::kF32;
}

StatusOr<std::vector<float>> BertModel::Embed(std::span<const int32_t> tokens,
                                              ThreadPool& pool) const {
  FRUGAL_ASSIGN_OR_RETURN(HiddenStates h, Forward(tokens, pool));
  std::vector<float> out = Pool(h);
  double norm = 0;
  for (float e : out) norm += static_cast<double>(e) * e;
  const auto inv = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
  for (float& e : out) e *= inv;
  return out;
}

std::vector<float> BertModel::Pool(const HiddenStates& h) const {
  // Mean pooling over all tokens (one unpadded sequence: the mask is all ones) or the first
  // token's state (CLS).
  std::vector<float> out(static_cast<size_t>(h.d), 0.0f);
  const int64_t pooled = hp_.cls_pooling ? std::min<int64_t>(1, h.n) : h.n;
  for (int64_t i = 0; i < pooled; ++i) {
    for (int64_t e = 0; e < h.d; ++e) out[static_cast<size_t>(e)] += h.row(i)[e];
  }
  if (pooled > 0) {
    for (float& e : out) e /= static_cast<float>(pooled);
  }
  return out;
}

StatusOr<HiddenStates> BertModel::Forward(std::span<const int32_t> tokens, ThreadPool& pool) const {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return InvalidArgument("nothing to embed");
  if (n > hp_.n_ctx) {
    return OutOfRange(std::to_string(n) + " tokens exceed the embedder's context of " +
                      std::to_string(hp_.n_ctx));
  }
  const int64_t d = hp_.n_embd, hd = d / hp_.n_head;
  std::vector<float> x(static_cast<size_t>(n * d)), tmp(static_cast<size_t>(d)),
      row(static_cast<size_t>(d));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= hp_.n_vocab)
      return InvalidArgument("token id " + std::to_string(t) + " is out of the vocabulary");
    GetRow(*word_embd_, t, tmp.data());
    GetRow(*pos_embd_, hp_.pos_offset + i, row.data());
    for (int64_t e = 0; e < d; ++e) tmp[static_cast<size_t>(e)] += row[static_cast<size_t>(e)];
    if (type_embd_ != nullptr) {
      GetRow(*type_embd_, 0, row.data());
      for (int64_t e = 0; e < d; ++e) tmp[static_cast<size_t>(e)] += row[static_cast<size_t>(e)];
    }
    LayerNorm(tmp.data(), embd_ln_w_.data(), embd_ln_b_.data(), &x[static_cast<size_t>(i * d)], d,
              hp_.eps);
  }
  std::vector<float> q(x.size()), k(x.size()), v(x.size()), ctx(x.size()), o(x.size());
  std::vector<float> ff(static_cast<size_t>(n * hp_.n_ff));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (const Layer& l : layers_) {
    // Q, K and V in one pass over the pool with one quantization of x.
    const MatMulOutput qkv[] = {{l.q.w, q.data()}, {l.k.w, k.data()}, {l.v.w, v.data()}};
    MatMulMulti(qkv, x.data(), n, pool, act_);
    AddBias(l.q, n, q.data());
    AddBias(l.k, n, k.data());
    AddBias(l.v, n, v.data());
    const void* k_blocks[] = {k.data()};
    const void* v_blocks[] = {v.data()};
    pool.ParallelFor(n * hp_.n_head, [&](int64_t t0, int64_t t1) {
      std::vector<float> scores(static_cast<size_t>(n));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t i = t / hp_.n_head, h = t % hp_.n_head;
        // One contiguous block of all n positions; this head's slice starts at h * hd.
        const KvBlocks kv{k_blocks, v_blocks, h * hd, n, d};
        AttentionHead(&q[static_cast<size_t>(i * d + h * hd)], kv, n, hd, scale, scores.data(),
                      &ctx[static_cast<size_t>(i * d + h * hd)]);
      }
    });
    Apply(l.attn_out, ctx.data(), n, o.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      float* xi = &x[static_cast<size_t>(i * d)];
      for (int64_t e = 0; e < d; ++e)
        tmp[static_cast<size_t>(e)] = xi[e] + o[static_cast<size_t>(i * d + e)];
      LayerNorm(tmp.data(), l.ln1_w.data(), l.ln1_b.data(), xi, d, hp_.eps);
    }
    Apply(l.ffn_in, x.data(), n, ff.data(), pool);
    GeluInPlace(ff.data(), static_cast<int64_t>(ff.size()));
    Apply(l.ffn_out, ff.data(), n, o.data(), pool);
    for (int64_t i = 0; i < n; ++i) {
      float* xi = &x[static_cast<size_t>(i * d)];
      for (int64_t e = 0; e < d; ++e)
        tmp[static_cast<size_t>(e)] = xi[e] + o[static_cast<size_t>(i * d + e)];
      LayerNorm(tmp.data(), l.ln2_w.data(), l.ln2_b.data(), xi, d, hp_.eps);
    }
  }
  HiddenStates h;
  h.n = n;
  h.d = d;
  h.x = std::move(x);
  return h;
}

}  // namespace frugal
