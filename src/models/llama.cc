#include "models/llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace frugal {
namespace {

// GGUF layer tensor base names and their transformers counterparts (Llama family).
constexpr std::pair<const char*, const char*> kHfLayerNames[] = {
    {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"},
    {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},   {"attn_output", "self_attn.o_proj"},
    {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

}  // namespace

std::string LlamaHfTensorName(const std::string& n) {
  if (n == "token_embd.weight") return "model.embed_tokens.weight";
  if (n == "output_norm.weight") return "model.norm.weight";
  if (n == "output.weight") return "lm_head.weight";
  if (n.rfind("blk.", 0) != 0) return n;
  const size_t dot = n.find('.', 4);
  if (dot == std::string::npos) return n;
  const std::string layer = n.substr(4, dot - 4);
  const std::string rest = n.substr(dot + 1);
  const size_t last = rest.rfind('.');
  if (last == std::string::npos) return n;
  const std::string base = rest.substr(0, last), suffix = rest.substr(last);
  for (const auto& [g, h] : kHfLayerNames) {
    if (base == g) return "model.layers." + layer + "." + h + suffix;
  }
  return n;
}

std::string LlamaGgufTensorName(const std::string& n) {
  if (n == "model.embed_tokens.weight") return "token_embd.weight";
  if (n == "model.norm.weight") return "output_norm.weight";
  if (n == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (n.rfind(prefix, 0) != 0) return "";
  const size_t dot = n.find('.', prefix.size());
  if (dot == std::string::npos) return "";
  const std::string layer = n.substr(prefix.size(), dot - prefix.size());
  const std::string rest = n.substr(dot + 1);
  const size_t last = rest.rfind('.');
  if (last == std::string::npos || layer.empty() ||
      layer.find_first_not_of("0123456789") != std::string::npos)
    return "";
  const std::string base = rest.substr(0, last), suffix = rest.substr(last);
  for (const auto& [g, h] : kHfLayerNames) {
    if (base == h) return "blk." + layer + "." + g + suffix;
  }
  return "";
}

namespace {

// Finds tensors by their GGUF names whatever the source format.
class TensorLookup {
 public:
  explicit TensorLookup(const ModelSource& src) : src_(src) {}

  const TensorView* Find(const std::string& gguf_name) const {
    if (src_.gguf()) return src_.gguf()->FindTensor(gguf_name);
    return src_.hf()->FindTensor(LlamaHfTensorName(gguf_name));
  }

 private:
  const ModelSource& src_;
};

Status CheckShape(const TensorView* t, const std::string& name, int64_t ne0, int64_t ne1) {
  if (t == nullptr) return DataLoss("required tensor '" + name + "' is missing");
  if (t->ne[0] != ne0 || t->rows() != ne1) {
    return DataLoss("tensor '" + name + "' has shape " + t->ShapeString() + ", expected [" +
                    std::to_string(ne0) + ", " + std::to_string(ne1) + "]");
  }
  if (GetKernelTraits(t->type) == nullptr) {
    return Unimplemented("tensor '" + name + "' has type " + TypeName(t->type) +
                         " which has no kernel");
  }
  return Status::Ok();
}

// Llama 3's rope scaling, per rotary pair (see Meta's reference apply_scaling).
std::vector<float> Llama3FreqFactors(int64_t n_rot, double base, double factor, double low,
                                     double high, double orig_ctx) {
  std::vector<float> f(static_cast<size_t>(n_rot / 2));
  const double low_wavelen = orig_ctx / low, high_wavelen = orig_ctx / high;
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
    const double wavelen = 2 * M_PI / freq;
    double new_freq;
    if (wavelen < high_wavelen) {
      new_freq = freq;
    } else if (wavelen > low_wavelen) {
      new_freq = freq / factor;
    } else {
      const double smooth = (orig_ctx / wavelen - low) / (high - low);
      new_freq = (1 - smooth) * freq / factor + smooth * freq;
    }
    f[static_cast<size_t>(i)] = static_cast<float>(freq / new_freq);
  }
  return f;
}

}  // namespace

StatusOr<std::vector<float>> LoadVector(const TensorView* t, int64_t expected,
                                        const std::string& name) {
  if (t == nullptr) return DataLoss("required tensor '" + name + "' is missing");
  if (t->elements() != expected) {
    return DataLoss("tensor '" + name + "' has " + std::to_string(t->elements()) +
                    " elements, expected " + std::to_string(expected));
  }
  const KernelTraits* traits = GetKernelTraits(t->type);
  if (traits == nullptr) return Unimplemented("tensor '" + name + "' has an unsupported type");
  std::vector<float> v(static_cast<size_t>(expected));
  DequantizeTensor(*t, v.data());
  return v;
}

StatusOr<std::unique_ptr<LlamaModel>> LlamaModel::Load(const ModelSource& src) {
  auto m = std::unique_ptr<LlamaModel>(new LlamaModel());
  LlamaHParams& hp = m->hp_;
  hp.arch = src.architecture();
  if (hp.arch != "llama" && hp.arch != "qwen2" && hp.arch != "mistral") {
    return Unimplemented("architecture '" + hp.arch +
                         "' is not a supported decoder (supported: llama, qwen2, mistral)");
  }
  TensorLookup lookup(src);
  if (const GgufFile* g = src.gguf()) {
    const std::string a = hp.arch + ".";
    auto req = [&](const std::string& key) -> StatusOr<int64_t> {
      auto v = g->GetInt(a + key);
      if (!v.ok()) return DataLoss(v.status().message());
      if (*v <= 0) return DataLoss("metadata " + a + key + " must be positive");
      return *v;
    };
    FRUGAL_ASSIGN_OR_RETURN(hp.n_embd, req("embedding_length"));
    FRUGAL_ASSIGN_OR_RETURN(hp.n_layer, req("block_count"));
    FRUGAL_ASSIGN_OR_RETURN(hp.n_head, req("attention.head_count"));
    FRUGAL_ASSIGN_OR_RETURN(hp.n_ff, req("feed_forward_length"));
    hp.n_head_kv = g->GetIntOr(a + "attention.head_count_kv", hp.n_head);
    hp.head_dim = g->GetIntOr(a + "attention.key_length", hp.n_embd / hp.n_head);
    hp.n_rot = g->GetIntOr(a + "rope.dimension_count", hp.head_dim);
    hp.n_ctx_train = g->GetIntOr(a + "context_length", 2048);
    hp.rms_eps = static_cast<float>(g->GetFloatOr(a + "attention.layer_norm_rms_epsilon", 1e-5));
    hp.rope_base = static_cast<float>(g->GetFloatOr(a + "rope.freq_base", 10000.0));
    // llama.cpp's converter permutes Q/K of "llama" so that adjacent pairs rotate; qwen2 keeps
    // the NeoX half-split layout.
    hp.rope_neox = hp.arch == "qwen2";
    const std::string scaling = g->GetStringOr(a + "rope.scaling.type", "none");
    if (scaling == "linear") {
      hp.rope_linear_scale = static_cast<float>(g->GetFloatOr(a + "rope.scaling.factor", 1.0));
    } else if (scaling != "none" && !scaling.empty()) {
      return Unimplemented("rope scaling type '" + scaling + "' is not supported");
    }
    if (const TensorView* rf = g->FindTensor("rope_freqs.weight")) {
      FRUGAL_ASSIGN_OR_RETURN(hp.rope_freq_factors, LoadVector(rf, hp.n_rot / 2, rf->name));
    }
  } else {
    const HfConfig& c = src.hf()->config();
    hp.n_embd = c.hidden_size;
    hp.n_layer = c.num_hidden_layers;
    hp.n_head = c.num_attention_heads;
    hp.n_ff = c.intermediate_size;
    if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_head <= 0 || hp.n_ff <= 0) {
      return InvalidArgument(src.path() +
                             "/config.json lacks hidden_size, num_hidden_layers, "
                             "num_attention_heads or intermediate_size");
    }
    hp.n_head_kv = c.num_key_value_heads > 0 ? c.num_key_value_heads : hp.n_head;
    hp.head_dim = c.head_dim > 0 ? c.head_dim : hp.n_embd / hp.n_head;
    hp.n_rot = hp.head_dim;
    hp.n_ctx_train = c.max_position_embeddings > 0 ? c.max_position_embeddings : 2048;
    hp.rms_eps = static_cast<float>(c.rms_norm_eps);
    hp.rope_base = static_cast<float>(c.rope_theta);
    hp.rope_neox = true;  // transformers' rotate_half
    const HfRopeScaling& rs = c.rope_scaling;
    if (rs.type == "linear") {
      hp.rope_linear_scale = static_cast<float>(rs.factor);
    } else if (rs.type == "llama3") {
      hp.rope_freq_factors = Llama3FreqFactors(
          hp.n_rot, hp.rope_base, rs.factor, rs.low_freq_factor, rs.high_freq_factor,
          static_cast<double>(rs.original_max_position_embeddings));
    } else if (!rs.type.empty()) {
      return Unimplemented("rope_scaling type '" + rs.type + "' is not supported");
    }
  }
  if (hp.n_head_kv <= 0 || hp.n_head % hp.n_head_kv != 0 || hp.head_dim <= 0 || hp.n_rot <= 0 ||
      hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0 || hp.n_layer > 4096) {
    return DataLoss("inconsistent attention hyper-parameters");
  }

  m->tok_embd_ = lookup.Find("token_embd.weight");
  if (m->tok_embd_ == nullptr) return DataLoss("required tensor 'token_embd.weight' is missing");
  hp.n_vocab = m->tok_embd_->rows();
  FRUGAL_RETURN_IF_ERROR(CheckShape(m->tok_embd_, "token_embd.weight", hp.n_embd, hp.n_vocab));
  m->output_ = lookup.Find("output.weight");
  hp.tied_embeddings = m->output_ == nullptr;
  if (hp.tied_embeddings) m->output_ = m->tok_embd_;
  FRUGAL_RETURN_IF_ERROR(CheckShape(m->output_, "output.weight", hp.n_embd, hp.n_vocab));
  FRUGAL_ASSIGN_OR_RETURN(m->output_norm_, LoadVector(lookup.Find("output_norm.weight"), hp.n_embd,
                                                      "output_norm.weight"));

  const int64_t q_dim = hp.n_head * hp.head_dim, kv_dim = hp.n_head_kv * hp.head_dim;
  m->layers_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    Layer& l = m->layers_[static_cast<size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    auto mat = [&](const char* name, int64_t ne0, int64_t ne1, const TensorView** out) -> Status {
      *out = lookup.Find(p + name + ".weight");
      return CheckShape(*out, p + name + ".weight", ne0, ne1);
    };
    FRUGAL_RETURN_IF_ERROR(mat("attn_q", hp.n_embd, q_dim, &l.wq));
    FRUGAL_RETURN_IF_ERROR(mat("attn_k", hp.n_embd, kv_dim, &l.wk));
    FRUGAL_RETURN_IF_ERROR(mat("attn_v", hp.n_embd, kv_dim, &l.wv));
    FRUGAL_RETURN_IF_ERROR(mat("attn_output", q_dim, hp.n_embd, &l.wo));
    FRUGAL_RETURN_IF_ERROR(mat("ffn_gate", hp.n_embd, hp.n_ff, &l.w_gate));
    FRUGAL_RETURN_IF_ERROR(mat("ffn_up", hp.n_embd, hp.n_ff, &l.w_up));
    FRUGAL_RETURN_IF_ERROR(mat("ffn_down", hp.n_ff, hp.n_embd, &l.w_down));
    FRUGAL_ASSIGN_OR_RETURN(l.attn_norm, LoadVector(lookup.Find(p + "attn_norm.weight"), hp.n_embd,
                                                    p + "attn_norm.weight"));
    FRUGAL_ASSIGN_OR_RETURN(l.ffn_norm, LoadVector(lookup.Find(p + "ffn_norm.weight"), hp.n_embd,
                                                   p + "ffn_norm.weight"));
    auto bias = [&](const char* name, int64_t n, std::vector<float>* out) -> Status {
      const TensorView* t = lookup.Find(p + name + ".bias");
      if (t == nullptr) return Status::Ok();
      auto v = LoadVector(t, n, p + name + ".bias");
      if (!v.ok()) return v.status();
      *out = std::move(v).value();
      return Status::Ok();
    };
    FRUGAL_RETURN_IF_ERROR(bias("attn_q", q_dim, &l.bq));
    FRUGAL_RETURN_IF_ERROR(bias("attn_k", kv_dim, &l.bk));
    FRUGAL_RETURN_IF_ERROR(bias("attn_v", kv_dim, &l.bv));
    FRUGAL_RETURN_IF_ERROR(bias("attn_output", hp.n_embd, &l.bo));
  }
  m->rope_freq_.resize(static_cast<size_t>(hp.n_rot / 2));
  for (int64_t i = 0; i < hp.n_rot / 2; ++i) {
    double freq = std::pow(static_cast<double>(hp.rope_base),
                           -2.0 * static_cast<double>(i) / static_cast<double>(hp.n_rot));
    if (!hp.rope_freq_factors.empty()) freq /= hp.rope_freq_factors[static_cast<size_t>(i)];
    m->rope_freq_[static_cast<size_t>(i)] = freq;
  }
  return m;
}

size_t LlamaModel::RepackWeights() {
  // Every matrix with a tiled form, each once (tied embeddings), in the order a step reads them.
  std::vector<const TensorView**> slots = {&tok_embd_, &output_};
  for (Layer& l : layers_) {
    for (const TensorView** w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      slots.push_back(w);
  }
  std::map<const TensorView*, size_t> offset;  // original -> offset in repacked_data_
  std::vector<const TensorView*> order;
  size_t bytes = 0;
  for (const TensorView** s : slots) {
    if (*s == nullptr || !RepackedType(**s) || offset.count(*s) != 0) continue;
    offset[*s] = bytes;
    order.push_back(*s);
    bytes += (RepackedBytes(**s) + 63) / 64 * 64;
  }
  if (order.empty()) return 0;
  repacked_data_ = HugePageBuffer(bytes);
  std::map<const TensorView*, const TensorView*> done;
  for (const TensorView* t : order) {
    TensorView& v = repacked_views_.emplace_back(*t);
    v.type = *RepackedType(*t);
    v.data = repacked_data_.data() + offset[t];
    v.nbytes = RepackedBytes(*t);
    done[t] = &v;
  }
  // Matrices are independent: re-laid on all cores (a 1.5B model's K-quants take seconds on one).
  ThreadPool pool(ThreadPool::DefaultThreads());
  pool.ParallelFor(static_cast<int64_t>(order.size()), [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const TensorView* t = order[static_cast<size_t>(i)];
      RepackRows(*t, repacked_data_.data() + offset.at(t));
    }
  });
  for (const TensorView** s : slots) {
    if (auto it = done.find(*s); it != done.end()) *s = it->second;
  }
  return bytes;
}

std::unique_ptr<KvCache> LlamaModel::NewKvCache(int64_t n_ctx) const {
  return std::make_unique<KvCache>(hp_.n_layer, n_ctx, kv_dim(), kv_type_);
}

size_t LlamaModel::weight_bytes_per_token() const {
  size_t n = output_->nbytes + tok_embd_->nbytes / static_cast<size_t>(hp_.n_vocab);
  for (const Layer& l : layers_) {
    n += l.wq->nbytes + l.wk->nbytes + l.wv->nbytes + l.wo->nbytes + l.w_gate->nbytes +
         l.w_up->nbytes + l.w_down->nbytes;
  }
  return n;
}

void LlamaModel::RopeCosSin(int64_t pos, float* cos_out, float* sin_out) const {
  const int64_t half = hp_.n_rot / 2;
  const double p = static_cast<double>(pos) / hp_.rope_linear_scale;
  for (int64_t i = 0; i < half; ++i) {
    const double theta = p * rope_freq_[static_cast<size_t>(i)];
    cos_out[i] = static_cast<float>(std::cos(theta));
    sin_out[i] = static_cast<float>(std::sin(theta));
  }
}

Status LlamaModel::Forward(std::span<const int32_t> tokens, KvCache& kv, ThreadPool& pool,
                           std::vector<float>* logits, bool all_logits) const {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return InvalidArgument("no tokens to run");
  const int64_t pos0 = kv.size();
  if (pos0 + n > kv.capacity()) {
    return OutOfRange(std::to_string(pos0 + n) + " tokens exceed the context of " +
                      std::to_string(kv.capacity()));
  }
  std::vector<StepItem> items(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    items[static_cast<size_t>(i)] = {tokens[static_cast<size_t>(i)], &kv, pos0 + i,
                                     all_logits || i == n - 1};
  }
  FRUGAL_RETURN_IF_ERROR(Step(items, pool, logits));
  kv.set_size(pos0 + n);
  return Status::Ok();
}

Status LlamaModel::DecodeBatch(std::span<const int32_t> tokens, std::span<KvCache* const> caches,
                               ThreadPool& pool, std::vector<float>* logits) const {
  if (tokens.empty() || tokens.size() != caches.size()) {
    return InvalidArgument("DecodeBatch needs one cache per token");
  }
  std::vector<StepItem> items(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    KvCache* kv = caches[i];
    if (kv->size() + 1 > kv->capacity()) {
      return OutOfRange("sequence " + std::to_string(i) + " is at its context limit of " +
                        std::to_string(kv->capacity()));
    }
    for (size_t j = 0; j < i; ++j) {
      if (caches[j] == kv) return InvalidArgument("DecodeBatch got the same cache twice");
    }
    items[i] = {tokens[i], kv, kv->size(), true};
  }
  FRUGAL_RETURN_IF_ERROR(Step(items, pool, logits));
  for (KvCache* kv : caches) kv->set_size(kv->size() + 1);
  return Status::Ok();
}

LlamaModel::StepScratch::StepScratch(const LlamaHParams& hp, int64_t n, int64_t kv_d) {
  const auto sz = [n](int64_t cols) { return static_cast<size_t>(n * cols); };
  const int64_t q_dim = hp.n_head * hp.head_dim;
  x.resize(sz(hp.n_embd));
  xn.resize(sz(hp.n_embd));
  o.resize(sz(hp.n_embd));
  q.resize(sz(q_dim));
  attn.resize(sz(q_dim));
  k.resize(sz(kv_d));
  v.resize(sz(kv_d));
  g.resize(sz(hp.n_ff));
  u.resize(sz(hp.n_ff));
}

std::vector<float> LlamaModel::RopeTable(std::span<const StepItem> items) const {
  // Rotary angles depend only on the position: once per item for all layers and heads.
  const int64_t half = hp_.n_rot / 2;
  std::vector<float> cs(items.size() * static_cast<size_t>(2 * half));
  for (size_t i = 0; i < items.size(); ++i) {
    float* c = &cs[i * static_cast<size_t>(2 * half)];
    RopeCosSin(items[i].pos, c, c + half);
  }
  return cs;
}

void LlamaModel::LayerForward(int64_t li, std::span<const StepItem> items,
                              const std::vector<float>& rope_cs, StepScratch& s, ThreadPool& pool,
                              const ActivationObserver* observer) const {
  const auto n = static_cast<int64_t>(items.size());
  const int64_t d = hp_.n_embd, hd = hp_.head_dim, q_dim = hp_.n_head * hd;
  const int64_t kv_d = kv_dim(), group = hp_.n_head / hp_.n_head_kv, half = hp_.n_rot / 2;
  const float attn_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // Row i's bias (nothing when the model has none).
  auto add_bias = [](std::vector<float>& y, const std::vector<float>& b, int64_t i) {
    const auto cols = static_cast<int64_t>(b.size());
    float* row = y.data() + i * cols;
    for (int64_t c = 0; c < cols; ++c) row[c] += b[static_cast<size_t>(c)];
  };
  // The element-wise steps between the matrix products, a token row at a time on the pool
  // (every row on its own, so a row's result does not depend on the thread or the batch). On the
  // calling thread they had cost a 2-thread prefill 3.6 % (Qwen2.5-1.5B Q4_K_M, 256 tokens) and
  // 8 % (SmolLM2-135M, 128), interleaved A/B. A batch of a few rows (decode) stays on the calling
  // thread.
  constexpr int64_t kRowGrain = 8;
  auto for_rows = [&](const std::function<void(int64_t)>& fn) {
    pool.ParallelFor(
        n,
        [&](int64_t a, int64_t b) {
          for (int64_t i = a; i < b; ++i) fn(i);
        },
        kRowGrain);
  };
  auto observe = [&](LinearInput input, const std::vector<float>& act, int64_t cols) {
    if (observer != nullptr) (*observer)(li, input, act.data(), n, cols);
  };
  std::vector<float>& x = s.x;
  std::vector<float>& xn = s.xn;
  const Layer& l = layers_[static_cast<size_t>(li)];
  for_rows([&](int64_t i) {
    RmsNorm(&x[static_cast<size_t>(i * d)], l.attn_norm.data(), &xn[static_cast<size_t>(i * d)], d,
            hp_.rms_eps);
  });
  observe(LinearInput::kAttn, xn, d);
  const MatMulOutput qkv[] = {{l.wq, s.q.data()}, {l.wk, s.k.data()}, {l.wv, s.v.data()}};
  MatMulMulti(qkv, xn.data(), n, pool, act_);
  for_rows([&](int64_t i) {
    if (!l.bq.empty()) add_bias(s.q, l.bq, i);
    if (!l.bk.empty()) add_bias(s.k, l.bk, i);
    if (!l.bv.empty()) add_bias(s.v, l.bv, i);
    const StepItem& it = items[static_cast<size_t>(i)];
    const float* cs = &rope_cs[static_cast<size_t>(i * 2 * half)];
    RopeRotate(&s.q[static_cast<size_t>(i * q_dim)], hp_.n_head, hd, hp_.n_rot, hp_.rope_neox, cs,
               cs + half);
    RopeRotate(&s.k[static_cast<size_t>(i * kv_d)], hp_.n_head_kv, hd, hp_.n_rot, hp_.rope_neox, cs,
               cs + half);
    // Rows write disjoint positions of their caches.
    it.kv->Write(li, it.pos, &s.k[static_cast<size_t>(i * kv_d)],
                 &s.v[static_cast<size_t>(i * kv_d)]);
  });
  // Causal attention. Each task takes query heads of one key/value head together (AttentionGroup:
  // the keys and values read once for them, not once per head): all of the group's heads, or
  // fewer where that would leave a thread without a task (a decode step of one sequence on more
  // threads than key/value heads). Any split gives the same results bit for bit. Interleaved
  // A/B against one head per task (Zen 5, 2 threads), Qwen2.5-1.5B Q4_K_M: prefill of 2048 tokens
  // +26 %, of 1024 +14 %, 128 unchanged; decode at 2048 positions with its 6 heads per task
  // (2 tasks) +11 % and +23 % against 3 per task in two runs, +8 % for 3 against 1; under a
  // competing busy process the same within noise (17.8 against 18.1 tok/s).
  int64_t heads_per_task = group;
  while (heads_per_task > 1 &&
         n * hp_.n_head / heads_per_task < static_cast<int64_t>(pool.size())) {
    do --heads_per_task;
    while (group % heads_per_task != 0);
  }
  const int64_t tasks_per_token = hp_.n_head / heads_per_task;
  pool.ParallelFor(n * tasks_per_token, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / tasks_per_token, h = t % tasks_per_token * heads_per_task,
                    kvh = h / group;
      KvCache& kv = *items[static_cast<size_t>(i)].kv;
      const int64_t n_past = items[static_cast<size_t>(i)].pos + 1;
      scores.resize(static_cast<size_t>(heads_per_task * n_past));
      const KvBlocks blocks = kv.Head(li, kvh * hd);
      AttentionGroup(&s.q[static_cast<size_t>(i * q_dim + h * hd)], heads_per_task, blocks, n_past,
                     hd, attn_scale, scores.data(),
                     &s.attn[static_cast<size_t>(i * q_dim + h * hd)]);
    }
  });
  observe(LinearInput::kAttnOut, s.attn, q_dim);
  MatMul(*l.wo, s.attn.data(), n, s.o.data(), pool, act_);
  for_rows([&](int64_t i) {
    if (!l.bo.empty()) add_bias(s.o, l.bo, i);
    float* xi = &x[static_cast<size_t>(i * d)];
    const float* oi = &s.o[static_cast<size_t>(i * d)];
    for (int64_t e = 0; e < d; ++e) xi[e] += oi[e];
    RmsNorm(xi, l.ffn_norm.data(), &xn[static_cast<size_t>(i * d)], d, hp_.rms_eps);
  });
  observe(LinearInput::kFfn, xn, d);
  const MatMulOutput gate_up[] = {{l.w_gate, s.g.data()}, {l.w_up, s.u.data()}};
  MatMulMulti(gate_up, xn.data(), n, pool, act_);
  const int64_t ff = hp_.n_ff;
  for_rows([&](int64_t i) {
    float* gi = &s.g[static_cast<size_t>(i * ff)];
    SwiGlu(gi, &s.u[static_cast<size_t>(i * ff)], gi, ff);
  });
  observe(LinearInput::kFfnDown, s.g, hp_.n_ff);
  MatMul(*l.w_down, s.g.data(), n, s.o.data(), pool, act_);
  for_rows([&](int64_t i) {
    float* xi = &x[static_cast<size_t>(i * d)];
    const float* oi = &s.o[static_cast<size_t>(i * d)];
    for (int64_t e = 0; e < d; ++e) xi[e] += oi[e];
  });
}

void LlamaModel::Embed(std::span<const int32_t> tokens, float* x) const {
  for (size_t i = 0; i < tokens.size(); ++i)
    GetRow(*tok_embd_, tokens[i], x + static_cast<int64_t>(i) * hp_.n_embd);
}

Status LlamaModel::RunLayer(int64_t li, int64_t n, float* x, KvCache& kv, ThreadPool& pool,
                            const ActivationObserver& observer) const {
  if (li < 0 || li >= hp_.n_layer)
    return OutOfRange("layer " + std::to_string(li) + " does not exist");
  if (n <= 0 || n > kv.capacity())
    return OutOfRange(std::to_string(n) + " tokens do not fit the KV cache");
  std::vector<StepItem> items(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items[static_cast<size_t>(i)] = {0, &kv, i, false};
  StepScratch s(hp_, n, kv_dim());
  const size_t floats = static_cast<size_t>(n * hp_.n_embd);
  std::copy_n(x, floats, s.x.data());
  LayerForward(li, items, RopeTable(items), s, pool, observer ? &observer : nullptr);
  std::copy_n(s.x.data(), floats, x);
  return Status::Ok();
}

const TensorView** LlamaModel::MatrixSlot(std::string_view name) {
  if (name == "token_embd.weight") return &tok_embd_;
  if (name == "output.weight") return hp_.tied_embeddings ? nullptr : &output_;
  int64_t li = -1;
  std::string_view rest;
  if (!ParseLayerName(name, &li, &rest)) return nullptr;
  Layer& l = layers_[static_cast<size_t>(li)];
  static const std::pair<const char*, const TensorView * Layer::*> kSlots[] = {
      {"attn_q.weight", &Layer::wq},       {"attn_k.weight", &Layer::wk},
      {"attn_v.weight", &Layer::wv},       {"attn_output.weight", &Layer::wo},
      {"ffn_gate.weight", &Layer::w_gate}, {"ffn_up.weight", &Layer::w_up},
      {"ffn_down.weight", &Layer::w_down}};
  for (const auto& [suffix, member] : kSlots) {
    if (rest == suffix) return &(l.*member);
  }
  return nullptr;
}

bool LlamaModel::ParseLayerName(std::string_view name, int64_t* li, std::string_view* rest) const {
  if (name.substr(0, 4) != "blk.") return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos || dot == 4) return false;
  int64_t v = 0;
  for (char c : name.substr(4, dot - 4)) {
    if (c < '0' || c > '9' || v > hp_.n_layer) return false;
    v = v * 10 + (c - '0');
  }
  if (v >= hp_.n_layer) return false;
  *li = v;
  *rest = name.substr(dot + 1);
  return true;
}

const TensorView* LlamaModel::FindMatrix(std::string_view name) const {
  const TensorView** slot = const_cast<LlamaModel*>(this)->MatrixSlot(name);
  return slot != nullptr ? *slot : nullptr;
}

Status LlamaModel::SetMatrix(std::string_view name, const TensorView* view) {
  const TensorView** slot = MatrixSlot(name);
  if (slot == nullptr) return NotFound("the model has no matrix '" + std::string(name) + "'");
  if (view == nullptr || view->ne[0] != (*slot)->ne[0] || view->rows() != (*slot)->rows() ||
      GetKernelTraits(view->type) == nullptr) {
    return InvalidArgument("replacement for '" + std::string(name) +
                           "' has another shape or no kernel");
  }
  if (slot == &tok_embd_ && hp_.tied_embeddings) output_ = view;  // tied: one matrix, two uses
  *slot = view;
  return Status::Ok();
}

std::vector<float>* LlamaModel::NormSlot(std::string_view name) {
  if (name == "output_norm.weight") return &output_norm_;
  int64_t li = -1;
  std::string_view rest;
  if (!ParseLayerName(name, &li, &rest)) return nullptr;
  Layer& l = layers_[static_cast<size_t>(li)];
  if (rest == "attn_norm.weight") return &l.attn_norm;
  if (rest == "ffn_norm.weight") return &l.ffn_norm;
  return nullptr;
}

const std::vector<float>* LlamaModel::FindNorm(std::string_view name) const {
  return const_cast<LlamaModel*>(this)->NormSlot(name);
}

Status LlamaModel::SetNorm(std::string_view name, std::vector<float> values) {
  std::vector<float>* slot = NormSlot(name);
  if (slot == nullptr) return NotFound("the model has no norm '" + std::string(name) + "'");
  if (values.size() != slot->size())
    return InvalidArgument("norm '" + std::string(name) + "' has another size");
  *slot = std::move(values);
  return Status::Ok();
}

Status LlamaModel::Step(std::span<const StepItem> items, ThreadPool& pool,
                        std::vector<float>* logits) const {
  const auto n = static_cast<int64_t>(items.size());
  if (n == 0) return InvalidArgument("no tokens to run");
  std::vector<int64_t> out_rows;  // items whose logits are wanted
  for (int64_t i = 0; i < n; ++i) {
    const StepItem& it = items[static_cast<size_t>(i)];
    if (it.token < 0 || it.token >= hp_.n_vocab)
      return InvalidArgument("token id " + std::to_string(it.token) + " is out of the vocabulary");
    if (it.kv == nullptr || it.pos < 0 || it.pos >= it.kv->capacity()) {
      return OutOfRange("position " + std::to_string(it.pos) + " is outside its KV cache");
    }
    if (it.logits) out_rows.push_back(i);
  }
  const int64_t d = hp_.n_embd;
  StepScratch s(hp_, n, kv_dim());
  for (int64_t i = 0; i < n; ++i)
    GetRow(*tok_embd_, items[static_cast<size_t>(i)].token, &s.x[static_cast<size_t>(i * d)]);
  const std::vector<float> rope_cs = RopeTable(items);
  for (int64_t li = 0; li < hp_.n_layer; ++li) LayerForward(li, items, rope_cs, s, pool, nullptr);
  std::vector<float>& x = s.x;
  std::vector<float>& xn = s.xn;

  const auto n_out = static_cast<int64_t>(out_rows.size());
  for (int64_t r = 0; r < n_out; ++r) {
    RmsNorm(&x[static_cast<size_t>(out_rows[static_cast<size_t>(r)] * d)], output_norm_.data(),
            &xn[static_cast<size_t>(r * d)], d, hp_.rms_eps);
  }
  logits->resize(static_cast<size_t>(n_out * hp_.n_vocab));
  MatMul(*output_, xn.data(), n_out, logits->data(), pool, act_);
  return Status::Ok();
}

}  // namespace frugal
