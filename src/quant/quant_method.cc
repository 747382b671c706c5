// The quantization methods (RTN, GPTQ, AWQ around either) and how AWQ's scales are searched and
// folded into a layer; the layer loop that calls them is quantizer.cc.
#include "quant/quant_method.h"

#include <cmath>
#include <initializer_list>
#include <utility>

#include "quant/awq.h"
#include "quant/gptq.h"

namespace frugal::quant_internal {

StatusOr<QuantFormat> FormatFor(const QuantizeOptions& o, TensorType type, int64_t cols) {
  FRUGAL_ASSIGN_OR_RETURN(QuantFormat f, QuantFormat::Of(type, cols));
  f.integer_zero = o.integer_zero;
  return f;
}

int64_t RowsOf(const LayerContext& c, const LayerState& l, std::string_view m) {
  return c.source.model->FindMatrix(l.NameOf(m))->rows();
}

// The format matrix m is quantized to; nullopt when it is kept in float.
std::optional<QuantFormat> FormatOf(const LayerContext& c, const LayerState& l, const char* m) {
  const TensorChoice& choice = c.plan.at(l.NameOf(m));
  if (!choice.quantize) return std::nullopt;
  auto f = FormatFor(c.o, choice.type, static_cast<int64_t>(l.w.at(m).size()) / RowsOf(c, l, m));
  return f.ok() ? std::optional<QuantFormat>(*f) : std::nullopt;
}

namespace {

class RtnMethod final : public QuantMethodImpl {
 public:
  explicit RtnMethod(ScaleFit fit) : fit_(fit) {}
  bool calibrated() const override { return false; }
  bool needs_hessian() const override { return false; }
  StatusOr<QuantizedMatrix> Quantize(const QuantFormat& f, const float* w, int64_t rows,
                                     int64_t cols, const InputStats*,
                                     ThreadPool& pool) const override {
    return QuantizeRtn(f, w, rows, cols, fit_, nullptr, &pool);
  }

 private:
  ScaleFit fit_;
};

class GptqMethod final : public QuantMethodImpl {
 public:
  explicit GptqMethod(const GptqOptions& options) : options_(options) {}
  bool calibrated() const override { return true; }
  bool needs_hessian() const override { return true; }
  StatusOr<QuantizedMatrix> Quantize(const QuantFormat& f, const float* w, int64_t rows,
                                     int64_t cols, const InputStats* in,
                                     ThreadPool& pool) const override {
    if (!in->gptq_factor) {
      FRUGAL_ASSIGN_OR_RETURN(in->gptq_factor,
                              FactorHessian(in->h.data(), in->cols, options_, &pool));
    }
    FRUGAL_ASSIGN_OR_RETURN(GptqResult g,
                            QuantizeGptq(f, w, rows, cols, *in->gptq_factor, options_, &pool));
    return std::move(g.matrix);
  }

 private:
  GptqOptions options_;
};

Status ApplyAwq(const LayerContext& c, const AwqOptions& options, LayerState& l);

// AWQ: per-input-channel scales folded into the op before each group of matrices, which
// `inner` then quantizes (RTN for awq, GPTQ for awq+gptq).
class AwqMethod final : public QuantMethodImpl {
 public:
  AwqMethod(const AwqOptions& options, std::unique_ptr<QuantMethodImpl> inner)
      : options_(options), inner_(std::move(inner)) {}
  bool calibrated() const override { return true; }
  bool needs_hessian() const override { return inner_->needs_hessian(); }
  Status PrepareLayer(const LayerContext& c, LayerState& l) const override {
    return ApplyAwq(c, options_, l);
  }
  StatusOr<QuantizedMatrix> Quantize(const QuantFormat& f, const float* w, int64_t rows,
                                     int64_t cols, const InputStats* in,
                                     ThreadPool& pool) const override {
    return inner_->Quantize(f, w, rows, cols, in, pool);
  }

 private:
  AwqOptions options_;
  std::unique_ptr<QuantMethodImpl> inner_;
};

}  // namespace

std::unique_ptr<QuantMethodImpl> MakeQuantMethod(const QuantizeOptions& o) {
  GptqOptions gptq = o.gptq;
  gptq.fit = o.fit;
  AwqOptions awq = o.awq;
  awq.fit = o.fit;
  switch (o.method) {
    case QuantMethod::kRtn:
      return std::make_unique<RtnMethod>(o.fit);
    case QuantMethod::kGptq:
      return std::make_unique<GptqMethod>(gptq);
    case QuantMethod::kAwq:
      return std::make_unique<AwqMethod>(awq, std::make_unique<RtnMethod>(o.fit));
    case QuantMethod::kAwqGptq:
      return std::make_unique<AwqMethod>(awq, std::make_unique<GptqMethod>(gptq));
  }
  return nullptr;
}

namespace {

// --- AWQ: the scales' search and how they are folded into the layer ---

// The scales of a group of matrices that share input `in`; nullopt when one of them is kept in
// float (it needs no protection).
std::optional<AwqResult> SearchAwqGroup(const LayerContext& c, const AwqOptions& options,
                                        LayerState& l, std::initializer_list<const char*> names,
                                        LinearInput in, const std::vector<double>& mean_abs) {
  std::vector<AwqMatrix> mats;
  for (const char* m : names) {
    const auto f = FormatOf(c, l, m);
    if (!f) return std::nullopt;
    mats.push_back({l.w[m].data(), RowsOf(c, l, m), *f});
  }
  const InputStats& st = l.stats[in];
  AwqResult r =
      SearchAwqScale(mats, st.cols, st.sample.data(), st.sampled, mean_abs, options, c.pool);
  for (const char* m : names) l.alpha[m] = r.alpha;
  return r;
}

// The output projection's inputs come from the value rows; with grouped-query attention the
// heads that share a value head must share its scale, so their statistics are pooled.
std::vector<double> PooledAttnOutMeans(const LlamaHParams& hp, const LayerState& l) {
  std::vector<double> o_mean = l.stats.at(LinearInput::kAttnOut).MeanAbs();
  const int64_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  for (int64_t kvh = 0; kvh < hp.n_head_kv; ++kvh) {
    for (int64_t j = 0; j < hd; ++j) {
      double sum = 0;
      for (int64_t g = 0; g < group; ++g)
        sum += o_mean[static_cast<size_t>((kvh * group + g) * hd + j)];
      for (int64_t g = 0; g < group; ++g)
        o_mean[static_cast<size_t>((kvh * group + g) * hd + j)] = sum / static_cast<double>(group);
    }
  }
  return o_mean;
}

void ScaleCols(LayerState& l, const char* m, const std::vector<float>& s) {
  const int64_t cols = static_cast<int64_t>(s.size());
  std::vector<float>& v = l.w[m];
  for (size_t i = 0; i < v.size(); ++i) v[i] *= s[i % static_cast<size_t>(cols)];
  l.modified.insert(m);
}

void ScaleRows(LayerState& l, const char* m, const std::vector<float>& s) {
  std::vector<float>& v = l.w[m];
  const size_t cols = v.size() / s.size();
  for (size_t r = 0; r < s.size(); ++r) {
    for (size_t k = 0; k < cols; ++k) v[r * cols + k] /= s[r];
  }
  l.modified.insert(m);
}

// The statistics of an input whose matrices' columns were multiplied by s.
void ScaleInput(LayerState& l, LinearInput in, const std::vector<float>& s) {
  InputStats& st = l.stats[in];
  st.gptq_factor.reset();
  const auto cols = static_cast<size_t>(st.cols);
  for (size_t i = 0; i < st.sample.size(); ++i) st.sample[i] /= s[i % cols];
  if (!st.h.empty()) {
    for (size_t a = 0; a < cols; ++a) {
      for (size_t b = 0; b < cols; ++b) st.h[a * cols + b] /= s[a] * s[b];
    }
  }
}

Status ScaleNorm(LlamaModel& model, const std::string& name, const std::vector<float>& s) {
  std::vector<float> n = *model.FindNorm(name);
  for (size_t k = 0; k < n.size(); ++k) n[k] /= s[k];
  return model.SetNorm(name, std::move(n));
}

// The value rows' share of the output projection's scales: one per value head and dimension.
std::vector<float> ValueRowScales(const LlamaHParams& hp, const std::vector<float>& out_scale) {
  const int64_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  std::vector<float> sv(static_cast<size_t>(hp.n_head_kv * hd));
  for (int64_t kvh = 0; kvh < hp.n_head_kv; ++kvh) {
    for (int64_t j = 0; j < hd; ++j)
      sv[static_cast<size_t>(kvh * hd + j)] = out_scale[static_cast<size_t>(kvh * group * hd + j)];
  }
  return sv;
}

// Searched on the layer as it was, then all applied.
Status ApplyAwq(const LayerContext& c, const AwqOptions& options, LayerState& l) {
  const LlamaHParams& hp = c.source.hp();
  const auto qkv = SearchAwqGroup(c, options, l, {"attn_q", "attn_k", "attn_v"}, LinearInput::kAttn,
                                  l.stats[LinearInput::kAttn].MeanAbs());
  const auto gu = SearchAwqGroup(c, options, l, {"ffn_gate", "ffn_up"}, LinearInput::kFfn,
                                 l.stats[LinearInput::kFfn].MeanAbs());
  const auto down = SearchAwqGroup(c, options, l, {"ffn_down"}, LinearInput::kFfnDown,
                                   l.stats[LinearInput::kFfnDown].MeanAbs());
  // A value bias (Qwen2) would have to be rescaled with the rows: that pair is left alone.
  const bool no_v_bias = !c.source.by_name.count(l.prefix + "attn_v.bias");
  const auto out = no_v_bias && FormatOf(c, l, "attn_v")
                       ? SearchAwqGroup(c, options, l, {"attn_output"}, LinearInput::kAttnOut,
                                        PooledAttnOutMeans(hp, l))
                       : std::nullopt;
  LlamaModel& model = *c.source.model;
  if (qkv) {
    for (const char* m : {"attn_q", "attn_k", "attn_v"}) ScaleCols(l, m, qkv->scale);
    FRUGAL_RETURN_IF_ERROR(ScaleNorm(model, l.prefix + "attn_norm.weight", qkv->scale));
    ScaleInput(l, LinearInput::kAttn, qkv->scale);
  }
  if (gu) {
    for (const char* m : {"ffn_gate", "ffn_up"}) ScaleCols(l, m, gu->scale);
    FRUGAL_RETURN_IF_ERROR(ScaleNorm(model, l.prefix + "ffn_norm.weight", gu->scale));
    ScaleInput(l, LinearInput::kFfn, gu->scale);
  }
  if (down) {
    ScaleCols(l, "ffn_down", down->scale);
    ScaleRows(l, "ffn_up", down->scale);
    ScaleInput(l, LinearInput::kFfnDown, down->scale);
  }
  if (out) {
    ScaleCols(l, "attn_output", out->scale);
    ScaleRows(l, "attn_v", ValueRowScales(hp, out->scale));
    ScaleInput(l, LinearInput::kAttnOut, out->scale);
  }
  return Status::Ok();
}

}  // namespace
}  // namespace frugal::quant_internal
