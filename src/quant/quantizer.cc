#include "quant/quantizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/fp16.h"
#include "common/sha256.h"
#include "kernels/kernels.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "quant/hf_export.h"
#include "tokenizer/chat_template.h"

namespace frugal {
namespace {

using LinearInput = LlamaModel::LinearInput;

constexpr const char* kLayerMatrices[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                          "ffn_gate", "ffn_up", "ffn_down"};

LinearInput InputOf(std::string_view m) {
  if (m == "attn_output") return LinearInput::kAttnOut;
  if (m == "ffn_gate" || m == "ffn_up") return LinearInput::kFfn;
  if (m == "ffn_down") return LinearInput::kFfnDown;
  return LinearInput::kAttn;
}

// What a layer's calibration pass learns about one matrix input.
struct InputStats {
  int64_t cols = 0;
  std::vector<float> h;         // sum of x x^T (GPTQ only)
  std::vector<double> abs_sum;  // sum of |x| per channel
  std::vector<float> sample;    // up to sample_tokens inputs, [n][cols]
  int64_t sampled = 0;
  int64_t tokens = 0;

  std::vector<double> MeanAbs() const {
    std::vector<double> m(abs_sum.size());
    for (size_t c = 0; c < m.size(); ++c)
      m[c] = abs_sum[c] / static_cast<double>(std::max<int64_t>(1, tokens));
    return m;
  }
};

// H += x^T x for x [n][cols], with the float matmul kernel: x^T is both the "weights" and the
// "activations". Blocks of 64 activation rows stay in cache while the weight rows stream past,
// and only the blocks on and above the diagonal are computed (H is symmetric).
void AccumulateHessian(const float* x, int64_t n, int64_t cols, std::vector<float>& h,
                       ThreadPool& pool) {
  std::vector<float> xt(static_cast<size_t>(n * cols));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < cols; ++c) xt[static_cast<size_t>(c * n + i)] = x[i * cols + c];
  }
  constexpr int64_t kBlock = 64;
  std::vector<float> y;
  for (int64_t b0 = 0; b0 < cols; b0 += kBlock) {
    const int64_t bn = std::min(kBlock, cols - b0), rows = cols - b0;
    const float* base = xt.data() + b0 * n;
    const TensorView v =
        TensorView::Matrix(TensorType::kF32, n, rows, reinterpret_cast<const uint8_t*>(base),
                           static_cast<size_t>(rows * n) * sizeof(float));
    y.resize(static_cast<size_t>(bn * rows));
    MatMul(v, base, bn, y.data(), pool);  // y[b][r] = x_(b0+b) . x_(b0+r)
    for (int64_t b = 0; b < bn; ++b) {
      for (int64_t r = b; r < rows; ++r) {
        const float val = y[static_cast<size_t>(b * rows + r)];
        h[static_cast<size_t>((b0 + b) * cols + b0 + r)] += val;
        if (r != b) h[static_cast<size_t>((b0 + r) * cols + b0 + b)] += val;
      }
    }
  }
}

// ||(wq - w) x^T||^2 / ||w x^T||^2 on sampled inputs.
double RelativeOutputError(const float* w, const std::vector<float>& wq, int64_t rows, int64_t cols,
                           const InputStats& in, ThreadPool& pool) {
  if (in.sampled == 0) return -1;
  std::vector<float> d(wq.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = wq[i] - w[i];
  auto energy = [&](const float* m) {
    const TensorView v =
        TensorView::Matrix(TensorType::kF32, cols, rows, reinterpret_cast<const uint8_t*>(m),
                           static_cast<size_t>(rows * cols) * sizeof(float));
    std::vector<float> y(static_cast<size_t>(in.sampled * rows));
    MatMul(v, in.sample.data(), in.sampled, y.data(), pool);
    double s = 0;
    for (float f : y) s += static_cast<double>(f) * f;
    return s;
  };
  const double base = energy(w);
  return base > 0 ? energy(d.data()) / base : 0;
}

// Without calibration data: ||Wq - W||^2 / ||W||^2.
double RelativeWeightError(const std::vector<float>& w, const std::vector<float>& wq) {
  double e = 0, base = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    e += (static_cast<double>(wq[i]) - w[i]) * (static_cast<double>(wq[i]) - w[i]);
    base += static_cast<double>(w[i]) * w[i];
  }
  return base > 0 ? e / base : 0;
}

std::vector<uint8_t> ToF16Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = Fp32ToFp16(v[i]);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

std::vector<uint8_t> ToF32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<float> Dequantized(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.elements()));
  DequantizeTensor(t, v.data());
  return v;
}

std::vector<int64_t> ShapeOf(const TensorView& t) {
  std::vector<int64_t> ne(t.ne, t.ne + std::max(1, t.n_dims));
  return ne;
}

}  // namespace

StatusOr<QuantMethod> ParseQuantMethod(std::string_view name) {
  if (name == "rtn") return QuantMethod::kRtn;
  if (name == "gptq") return QuantMethod::kGptq;
  if (name == "awq") return QuantMethod::kAwq;
  if (name == "awq+gptq") return QuantMethod::kAwqGptq;
  return InvalidArgument("unknown method '" + std::string(name) +
                         "' (methods: rtn, gptq, awq, awq+gptq)");
}

const char* QuantMethodName(QuantMethod m) {
  switch (m) {
    case QuantMethod::kRtn:
      return "rtn";
    case QuantMethod::kGptq:
      return "gptq";
    case QuantMethod::kAwq:
      return "awq";
    case QuantMethod::kAwqGptq:
      return "awq+gptq";
  }
  return "?";
}

StatusOr<std::vector<std::vector<int32_t>>> LoadCalibration(Engine& engine, const std::string& path,
                                                            int64_t samples, int64_t seq_len) {
  if (samples <= 0 || seq_len < 8)
    return InvalidArgument("calibration needs --calib-samples >= 1 and --seq-len >= 8");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read calibration file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    return InvalidArgument("calibration file " + path + " is empty");

  std::vector<int32_t> stream;
  const bool jsonl = path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
  if (jsonl) {
    std::istringstream lines(text);
    std::string line;
    int64_t line_no = 0;
    while (std::getline(lines, line)) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = path + ":" + std::to_string(line_no);
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
      std::string doc;
      if (j.contains("text") && j["text"].is_string()) {
        doc = j["text"].get<std::string>();
      } else {
        std::vector<ChatMessage> msgs;
        if (j.contains("messages") && j["messages"].is_array()) {
          for (const auto& m : j["messages"]) {
            if (!m.is_object() || !m.contains("role") || !m.contains("content") ||
                !m["role"].is_string() || !m["content"].is_string()) {
              return InvalidArgument(where + ": each message needs string role and content");
            }
            msgs.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
          }
        } else if (j.contains("prompt") && j["prompt"].is_string()) {
          msgs.push_back({"user", j["prompt"].get<std::string>()});
          if (j.contains("answer") && j["answer"].is_string())
            msgs.push_back({"assistant", j["answer"].get<std::string>()});
        } else {
          return InvalidArgument(where +
                                 ": expected \"text\", \"prompt\" (+ \"answer\") or \"messages\"");
        }
        auto rendered = engine.RenderChat(msgs);
        if (!rendered.ok()) return rendered.status().WithContext(where);
        doc = *rendered;
      }
      const std::vector<int32_t> ids =
          engine.EncodePrompt(doc, /*parse_special=*/!j.contains("text"));
      stream.insert(stream.end(), ids.begin(), ids.end());
    }
  } else {
    stream = engine.EncodePrompt(text, /*parse_special=*/false);
  }
  if (stream.empty()) return InvalidArgument("calibration file " + path + " has no tokens");
  const int64_t windows = std::max<int64_t>(1, static_cast<int64_t>(stream.size()) / seq_len);
  const int64_t take = std::min(samples, windows);
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < take; ++i) {
    const int64_t w = i * windows / take;  // spread evenly over the stream
    const auto begin = stream.begin() + w * seq_len;
    const auto end = begin + std::min<int64_t>(seq_len, static_cast<int64_t>(stream.end() - begin));
    out.emplace_back(begin, end);
  }
  return out;
}

const TensorReport::Alternative* TensorReport::FindAlternative(TensorType t) const {
  for (const Alternative& a : alternatives) {
    if (a.type == t) return &a;
  }
  return nullptr;
}

const TensorReport::Alternative* TensorReport::Int8Alternative() const {
  for (const Alternative& a : alternatives) {
    if (GetTypeInfo(a.type)->bits == 8) return &a;
  }
  return nullptr;
}

TensorType TensorReport::TypeIn(const Raise& raise) const {
  auto r = raise.find(name);
  return r != raise.end() && FindAlternative(r->second) != nullptr ? r->second : type;
}

size_t TensorReport::BytesIn(const Raise& raise) const {
  auto r = raise.find(name);
  const Alternative* a = r != raise.end() ? FindAlternative(r->second) : nullptr;
  return a != nullptr ? a->bytes : bytes;
}

const std::vector<uint8_t>& QuantizedModel::Tensor::DataIn(const Raise& raise) const {
  auto r = raise.find(name);
  if (r == raise.end()) return data;
  auto a = alternatives.find(r->second);
  return a != alternatives.end() ? a->second : data;
}

std::vector<std::pair<std::string, TensorType>> QuantizedModel::RaiseCandidates() const {
  std::vector<const TensorReport*> c;
  for (const TensorReport& r : reports_) {
    if (r.Int8Alternative() != nullptr) c.push_back(&r);
  }
  std::stable_sort(c.begin(), c.end(), [](const TensorReport* a, const TensorReport* b) {
    return a->rel_error > b->rel_error;
  });
  std::vector<std::pair<std::string, TensorType>> out;
  for (const TensorReport* r : c) out.emplace_back(r->name, r->Int8Alternative()->type);
  return out;
}

Raise QuantizedModel::RaiseWithin(size_t max_bytes) const {
  Raise raise;
  size_t bytes = Size().bytes;
  for (;;) {
    // The best step: error removed per byte added, among the alternatives that still fit.
    const TensorReport* best = nullptr;
    const TensorReport::Alternative* best_alt = nullptr;
    double best_gain = 0;
    for (const TensorReport& r : reports_) {
      const size_t now_bytes = r.BytesIn(raise);
      const auto cur = raise.find(r.name);
      const double now_error =
          cur == raise.end() ? r.rel_error : r.FindAlternative(cur->second)->rel_error;
      for (const TensorReport::Alternative& a : r.alternatives) {
        if (a.bytes <= now_bytes || bytes - now_bytes + a.bytes > max_bytes ||
            a.rel_error >= now_error)
          continue;
        const double gain = (now_error - a.rel_error) / static_cast<double>(a.bytes - now_bytes);
        if (gain > best_gain) best = &r, best_alt = &a, best_gain = gain;
      }
    }
    if (best == nullptr) return raise;
    bytes = bytes - best->BytesIn(raise) + best_alt->bytes;
    raise[best->name] = best_alt->type;
  }
}

SizeSummary QuantizedModel::Size(const Raise& raise) const {
  SizeSummary s;
  for (const Tensor& t : out_) {
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    s.params += n;
    s.f16_bytes += static_cast<size_t>(n) * 2;
    s.bytes += t.DataIn(raise).size();
  }
  return s;
}

Status QuantizedModel::FinishHfExport(const LlamaHParams& hp) {
  // Llama 3 rope scaling: GGUF carries the per-pair frequency factors as a tensor.
  if (!hp.rope_freq_factors.empty()) {
    Tensor f;
    f.name = "rope_freqs.weight";
    f.ne = {static_cast<int64_t>(hp.rope_freq_factors.size())};
    f.type = TensorType::kF32;
    f.data.resize(hp.rope_freq_factors.size() * sizeof(float));
    std::memcpy(f.data.data(), hp.rope_freq_factors.data(), f.data.size());
    TensorReport r;
    r.name = f.name;
    r.source = TensorType::kF32;
    r.type = TensorType::kF32;
    r.elements = f.ne[0];
    r.bytes = f.data.size();
    r.note = "from config.json rope_scaling";
    reports_.push_back(r);
    out_.push_back(std::move(f));
  }
  return Status::Ok();
}

Status QuantizedModel::Write(const std::string& path, const Raise& raise) const {
  GgufWriter w = metadata_;
  std::vector<std::string> to_int8, to_g32;
  for (const Tensor& t : out_) {
    const std::vector<uint8_t>& data = t.DataIn(raise);
    const TensorType type = &data == &t.data ? t.type : raise.at(t.name);
    if (type != t.type) (GetTypeInfo(type)->bits == 8 ? to_int8 : to_g32).push_back(t.name);
    FRUGAL_RETURN_IF_ERROR(w.AddTensor(t.name, type, t.ne, data));
  }
  if (!to_int8.empty()) w.SetStringArray("frugal.quant.raised_to_int8", to_int8);
  if (!to_g32.empty()) w.SetStringArray("frugal.quant.regrouped_to_g32", to_g32);
  return w.Write(path);
}

StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  EngineOptions eo;
  eo.model_path = o.input;
  eo.threads = o.threads;
  eo.int8_activations = false;
  eo.repack_weights = false;
  eo.context_length = std::max<int64_t>(o.seq_len, 16);
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(eo));
  const ModelSource& src = engine->source();
  if (engine->info().kind != ModelKind::kDecoder)
    return Unimplemented(o.input + ": only decoder models can be quantized");
  // The source's tensors under their GGUF names (a Hugging Face folder's are renamed).
  FRUGAL_ASSIGN_OR_RETURN(const std::vector<NamedTensor> tensors, GgufNamedTensors(src));
  std::map<std::string, const TensorView*> source;
  for (const NamedTensor& nt : tensors) source[nt.name] = nt.tensor;
  std::string out_arch;
  if (!src.is_gguf()) {
    FRUGAL_ASSIGN_OR_RETURN(out_arch, GgufArchForHf(src.hf()->config().model_type));
  }
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<LlamaModel> model, LlamaModel::Load(src));
  model->set_activation_precision(ActivationPrecision::kF32);
  const LlamaHParams& hp = model->hparams();
  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::DefaultThreads());

  GptqOptions gptq_options = o.gptq;
  gptq_options.fit = o.fit;
  AwqOptions awq_options = o.awq;
  awq_options.fit = o.fit;
  const bool use_gptq = o.method == QuantMethod::kGptq || o.method == QuantMethod::kAwqGptq;
  const bool use_awq = o.method == QuantMethod::kAwq || o.method == QuantMethod::kAwqGptq;
  const bool calibrated = use_gptq || use_awq;

  auto qm = std::unique_ptr<QuantizedModel>(new QuantizedModel());
  std::vector<std::vector<int32_t>> samples;
  if (calibrated) {
    if (o.calib_path.empty())
      return InvalidArgument(std::string(QuantMethodName(o.method)) +
                             " needs calibration data (--calib FILE)");
    FRUGAL_ASSIGN_OR_RETURN(samples,
                            LoadCalibration(*engine, o.calib_path, o.calib_samples, o.seq_len));
    std::ifstream in(o.calib_path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    qm->calib_sha256_ = Sha256Hex(ss.str());
    for (const auto& s : samples) qm->calib_tokens_ += static_cast<int64_t>(s.size());
  }

  // Each tensor's type.
  std::map<std::string, TensorChoice> choice;
  for (const auto& [name, t] : source) {
    TensorChoice c = ChooseType(o.recipe, name, t->n_dims, t->ne[0], t->rows(), t->type);
    if (auto f = o.force.find(name); f != o.force.end()) {
      c.type = f->second;
      c.keep = false;
      c.quantize = IsFrugalType(f->second);
      c.note = "forced";
    }
    choice[name] = c;
  }

  // Hidden states of the calibration samples, carried from layer to layer.
  std::vector<std::vector<float>> hidden(samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    hidden[s].resize(samples[s].size() * static_cast<size_t>(hp.n_embd));
    model->Embed(samples[s], hidden[s].data());
  }
  std::unique_ptr<KvCache> kv = model->NewKvCache(std::max<int64_t>(o.seq_len, 16));
  const int64_t stride =
      std::max<int64_t>(1, qm->calib_tokens_ / std::max<int64_t>(1, o.sample_tokens));

  std::map<std::string, std::pair<const std::vector<uint8_t>*, TensorType>> done;  // into live_data
  std::map<std::string, std::map<TensorType, std::vector<uint8_t>>> alternatives;
  std::map<std::string, TensorReport> reports;
  // Quantized weights, which the model runs on from their layer on (stable addresses: the model
  // points into them until it is destroyed).
  std::deque<std::vector<uint8_t>> live_data;
  std::deque<TensorView> live_views;
  // A Hugging Face source written as arch llama: Q/K rows in llama.cpp's order (the model here
  // computes in transformers' order). Quantized Q/K are packed a second time in that order.
  const bool permute_qk = !src.is_gguf() && PermutesQk(out_arch);
  std::map<std::string, std::vector<int64_t>> qk_orders;
  for (const auto& [name, t] : source) {
    const bool q = name.find(".attn_q.") != std::string::npos,
               k = name.find(".attn_k.") != std::string::npos;
    if (!permute_qk || (!q && !k)) continue;
    FRUGAL_ASSIGN_OR_RETURN(qk_orders[name], QkRowOrder(t->n_dims >= 2 ? t->ne[1] : t->ne[0],
                                                        q ? hp.n_head : hp.n_head_kv));
  }
  const std::vector<int64_t> no_order;
  auto qk_order = [&](const std::string& name) -> const std::vector<int64_t>& {
    auto it = qk_orders.find(name);
    return it == qk_orders.end() ? no_order : it->second;
  };
  std::map<std::string, std::vector<uint8_t>> export_data;  // packed in output row order

  const int64_t steps = hp.n_layer + 1;
  auto report_progress = [&](const char* stage, int64_t d) {
    if (o.progress) o.progress({stage, d, steps});
  };

  for (int64_t li = 0; li < hp.n_layer; ++li) {
    report_progress("layer", li);
    const std::string p = "blk." + std::to_string(li) + ".";
    std::map<std::string, std::vector<float>> w;  // float weights of this layer's matrices
    for (const char* m : kLayerMatrices) {
      const TensorView* t = model->FindMatrix(p + m + ".weight");
      w[m] = Dequantized(*t);
    }
    std::map<LinearInput, InputStats> stats;
    if (calibrated) {
      const std::pair<LinearInput, int64_t> inputs[] = {
          {LinearInput::kAttn, hp.n_embd},
          {LinearInput::kAttnOut, hp.n_head * hp.head_dim},
          {LinearInput::kFfn, hp.n_embd},
          {LinearInput::kFfnDown, hp.n_ff}};
      for (const auto& [in, cols] : inputs) {
        InputStats& st = stats[in];
        st.cols = cols;
        if (use_gptq) st.h.assign(static_cast<size_t>(cols * cols), 0.0f);
        st.abs_sum.assign(static_cast<size_t>(cols), 0.0);
      }
      int64_t token_base = 0;
      const LlamaModel::ActivationObserver observer = [&](int64_t, LinearInput in, const float* x,
                                                          int64_t n, int64_t cols) {
        InputStats& st = stats[in];
        if (use_gptq) AccumulateHessian(x, n, cols, st.h, pool);
        for (int64_t i = 0; i < n; ++i) {
          const float* row = x + i * cols;
          for (int64_t c = 0; c < cols; ++c)
            st.abs_sum[static_cast<size_t>(c)] += std::fabs(row[c]);
          if ((token_base + i) % stride == 0 && st.sampled < o.sample_tokens) {
            st.sample.insert(st.sample.end(), row, row + cols);
            ++st.sampled;
          }
        }
        st.tokens += n;
      };
      std::vector<float> scratch;
      for (size_t s = 0; s < samples.size(); ++s) {
        scratch = hidden[s];
        FRUGAL_RETURN_IF_ERROR(model->RunLayer(li, static_cast<int64_t>(samples[s].size()),
                                               scratch.data(), *kv, pool, observer));
        token_base += static_cast<int64_t>(samples[s].size());
      }
    }

    auto format_of = [&](const char* m) -> std::optional<QuantFormat> {
      const TensorChoice& c = choice[p + m + ".weight"];
      if (!c.quantize) return std::nullopt;
      auto f = QuantFormat::Of(
          c.type, w[m].size() / static_cast<size_t>(model->FindMatrix(p + m + ".weight")->rows()));
      return f.ok() ? std::optional<QuantFormat>(*f) : std::nullopt;
    };
    auto rows_of = [&](const char* m) { return model->FindMatrix(p + m + ".weight")->rows(); };

    // AWQ: per-input-channel scales, folded into the op before each group of matrices.
    std::map<std::string, double> alpha;
    std::set<std::string> modified;  // matrices whose float weights AWQ rescaled
    if (use_awq) {
      auto search = [&](std::initializer_list<const char*> names, LinearInput in,
                        const std::vector<double>& mean_abs) -> std::optional<AwqResult> {
        std::vector<AwqMatrix> mats;
        for (const char* m : names) {
          const auto f = format_of(m);
          if (!f) return std::nullopt;  // a matrix kept in float needs no protection
          mats.push_back({w[m].data(), rows_of(m), *f});
        }
        const InputStats& st = stats[in];
        AwqResult r = SearchAwqScale(mats, st.cols, st.sample.data(), st.sampled, mean_abs,
                                     awq_options, pool);
        for (const char* m : names) alpha[m] = r.alpha;
        return r;
      };
      auto scale_cols = [&](const char* m, const std::vector<float>& s) {
        const int64_t cols = static_cast<int64_t>(s.size());
        std::vector<float>& v = w[m];
        for (size_t i = 0; i < v.size(); ++i) v[i] *= s[i % static_cast<size_t>(cols)];
        modified.insert(m);
      };
      auto scale_input = [&](LinearInput in, const std::vector<float>& s) {
        InputStats& st = stats[in];
        const auto cols = static_cast<size_t>(st.cols);
        for (size_t i = 0; i < st.sample.size(); ++i) st.sample[i] /= s[i % cols];
        if (!st.h.empty()) {
          for (size_t a = 0; a < cols; ++a) {
            for (size_t b = 0; b < cols; ++b) st.h[a * cols + b] /= s[a] * s[b];
          }
        }
      };
      auto scale_norm = [&](const std::string& name, const std::vector<float>& s) -> Status {
        std::vector<float> n = *model->FindNorm(name);
        for (size_t c = 0; c < n.size(); ++c) n[c] /= s[c];
        return model->SetNorm(name, std::move(n));
      };
      auto scale_rows = [&](const char* m, const std::vector<float>& s) {
        std::vector<float>& v = w[m];
        const size_t cols = v.size() / s.size();
        for (size_t r = 0; r < s.size(); ++r) {
          for (size_t c = 0; c < cols; ++c) v[r * cols + c] /= s[r];
        }
        modified.insert(m);
      };
      // Searched on the layer as it was, then all applied.
      const auto qkv = search({"attn_q", "attn_k", "attn_v"}, LinearInput::kAttn,
                              stats[LinearInput::kAttn].MeanAbs());
      const auto gu =
          search({"ffn_gate", "ffn_up"}, LinearInput::kFfn, stats[LinearInput::kFfn].MeanAbs());
      const auto down =
          search({"ffn_down"}, LinearInput::kFfnDown, stats[LinearInput::kFfnDown].MeanAbs());
      // The output projection's inputs come from the value rows; with grouped-query attention
      // the heads that share a value head must share its scale, so their statistics are pooled.
      std::vector<double> o_mean = stats[LinearInput::kAttnOut].MeanAbs();
      const int64_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
      for (int64_t kvh = 0; kvh < hp.n_head_kv; ++kvh) {
        for (int64_t j = 0; j < hd; ++j) {
          double sum = 0;
          for (int64_t g = 0; g < group; ++g)
            sum += o_mean[static_cast<size_t>((kvh * group + g) * hd + j)];
          for (int64_t g = 0; g < group; ++g)
            o_mean[static_cast<size_t>((kvh * group + g) * hd + j)] =
                sum / static_cast<double>(group);
        }
      }
      // A value bias (Qwen2) would have to be rescaled with the rows: that pair is left alone.
      const bool no_v_bias = !source.count(p + "attn_v.bias");
      const auto out = no_v_bias && format_of("attn_v")
                           ? search({"attn_output"}, LinearInput::kAttnOut, o_mean)
                           : std::nullopt;
      if (qkv) {
        scale_cols("attn_q", qkv->scale);
        scale_cols("attn_k", qkv->scale);
        scale_cols("attn_v", qkv->scale);
        FRUGAL_RETURN_IF_ERROR(scale_norm(p + "attn_norm.weight", qkv->scale));
        scale_input(LinearInput::kAttn, qkv->scale);
      }
      if (gu) {
        scale_cols("ffn_gate", gu->scale);
        scale_cols("ffn_up", gu->scale);
        FRUGAL_RETURN_IF_ERROR(scale_norm(p + "ffn_norm.weight", gu->scale));
        scale_input(LinearInput::kFfn, gu->scale);
      }
      if (down) {
        scale_cols("ffn_down", down->scale);
        scale_rows("ffn_up", down->scale);
        scale_input(LinearInput::kFfnDown, down->scale);
      }
      if (out) {
        std::vector<float> sv(static_cast<size_t>(hp.n_head_kv * hd));
        for (int64_t kvh = 0; kvh < hp.n_head_kv; ++kvh) {
          for (int64_t j = 0; j < hd; ++j)
            sv[static_cast<size_t>(kvh * hd + j)] =
                out->scale[static_cast<size_t>(kvh * group * hd + j)];
        }
        scale_cols("attn_output", out->scale);
        scale_rows("attn_v", sv);
        scale_input(LinearInput::kAttnOut, out->scale);
      }
    }

    // Quantize the layer's matrices and run the model on them from now on.
    for (const char* m : kLayerMatrices) {
      const std::string name = p + m + ".weight";
      const TensorView* cur = model->FindMatrix(name);
      const TensorChoice& c = choice[name];
      const int64_t rows = cur->rows(), cols = cur->ne[0];
      TensorReport rep;
      rep.name = name;
      const TensorView* from = source.at(name);
      rep.source = from->type;
      rep.elements = rows * cols;
      rep.note = c.note;
      if (alpha.count(m)) rep.awq_alpha = alpha[m];
      std::vector<uint8_t> data;
      TensorType type = c.type;
      const InputStats* in = calibrated ? &stats[InputOf(m)] : nullptr;
      auto quantize = [&](TensorType t) -> StatusOr<QuantizedMatrix> {
        FRUGAL_ASSIGN_OR_RETURN(const QuantFormat f, QuantFormat::Of(t, cols));
        if (use_gptq) {
          FRUGAL_ASSIGN_OR_RETURN(
              GptqResult g, QuantizeGptq(f, w[m].data(), rows, cols, in->h.data(), gptq_options));
          return std::move(g.matrix);
        }
        return QuantizeRtn(f, w[m].data(), rows, cols, o.fit, nullptr, &pool);
      };
      if (c.keep && !modified.count(m)) {
        data.assign(from->data, from->data + cur->nbytes);
        type = cur->type;
      } else if (c.quantize) {
        FRUGAL_ASSIGN_OR_RETURN(const QuantizedMatrix q, quantize(c.type));
        rep.rel_error =
            in != nullptr ? RelativeOutputError(w[m].data(), q.Dequantize(), rows, cols, *in, pool)
                          : RelativeWeightError(w[m], q.Dequantize());
        FRUGAL_ASSIGN_OR_RETURN(data, q.Pack());
        if (!qk_order(name).empty()) {
          FRUGAL_ASSIGN_OR_RETURN(export_data[name], PermuteRows(q, qk_order(name)).Pack());
        }
        // Larger alternatives of an INT4 tensor, smallest first: INT4 g32, then INT8.
        const TypeInfo* ti = GetTypeInfo(c.type);
        std::vector<TensorType> alt_types;
        if (ti->bits == 4 && o.g32_alternatives && ti->group_size > 32 && cols % 32 == 0) {
          FRUGAL_ASSIGN_OR_RETURN(const QuantFormat f, QuantFormat::Of(c.type, cols));
          FRUGAL_ASSIGN_OR_RETURN(const TensorType t, IntType(f.kind, 32));
          alt_types.push_back(t);
        }
        if (ti->bits == 4 && o.int8_alternatives) {
          FRUGAL_ASSIGN_OR_RETURN(const TensorType t, IntType(IntKind::kInt8, ti->group_size));
          alt_types.push_back(t);
        }
        for (const TensorType t : alt_types) {
          FRUGAL_ASSIGN_OR_RETURN(const QuantizedMatrix qa, quantize(t));
          TensorReport::Alternative alt;
          alt.type = t;
          alt.rel_error = in != nullptr ? RelativeOutputError(w[m].data(), qa.Dequantize(), rows,
                                                              cols, *in, pool)
                                        : RelativeWeightError(w[m], qa.Dequantize());
          FRUGAL_ASSIGN_OR_RETURN(
              std::vector<uint8_t> da,
              (qk_order(name).empty() ? qa : PermuteRows(qa, qk_order(name))).Pack());
          alt.bytes = da.size();
          alternatives[name][t] = std::move(da);
          rep.alternatives.push_back(alt);
        }
      } else {
        // F16 / F32 (or a kept tensor that AWQ rescaled: stored as F16).
        type = c.type == TensorType::kF32 ? TensorType::kF32 : TensorType::kF16;
        data = type == TensorType::kF32 ? ToF32Bytes(w[m]) : ToF16Bytes(w[m]);
      }
      rep.type = type;
      rep.bytes = data.size();
      live_data.push_back(std::move(data));
      live_views.push_back(
          TensorView::Matrix(type, cols, rows, live_data.back().data(), live_data.back().size()));
      live_views.back().name = name;
      FRUGAL_RETURN_IF_ERROR(model->SetMatrix(name, &live_views.back()));
      reports[name] = rep;
      done[name] = {&live_data.back(), type};
    }
    // The next layer sees what this quantized layer produces.
    if (calibrated) {
      for (size_t s = 0; s < hidden.size(); ++s) {
        FRUGAL_RETURN_IF_ERROR(model->RunLayer(li, static_cast<int64_t>(samples[s].size()),
                                               hidden[s].data(), *kv, pool, {}));
      }
    }
  }
  report_progress("embeddings", hp.n_layer);

  // Output: the source's metadata, then every tensor in the source's order.
  GgufWriter& meta = qm->metadata_;
  if (src.is_gguf()) {
    FRUGAL_RETURN_IF_ERROR(
        meta.CopyMetadata(*src.gguf(), {"general.file_type", kFrugalFormatVersionKey}));
  } else {
    // A Hugging Face folder: its config and tokenizer.json become GGUF metadata.
    std::string name = src.path();
    while (name.ends_with('/')) name.pop_back();
    SetHfModelMetadata(out_arch, name.substr(name.find_last_of('/') + 1), hp, &meta);
    FRUGAL_RETURN_IF_ERROR(
        SetTokenizerMetadata(engine->tokenizer().spec(), src.hf()->chat_template(), &meta));
  }
  meta.SetUint32(kFrugalFormatVersionKey, kFrugalFormatVersion);
  meta.SetString("frugal.quant.method", QuantMethodName(o.method));
  meta.SetString("frugal.quant.scale_fit", o.fit == ScaleFit::kSearch ? "search" : "minmax");
  meta.SetString("frugal.quant.recipe", o.recipe.ToYaml());
  meta.SetString("frugal.quant.recipe_name", o.recipe.name);
  meta.SetString("frugal.quant.source", o.input.substr(o.input.find_last_of('/') + 1));
  if (calibrated) {
    meta.SetString("frugal.quant.calib_sha256", qm->calib_sha256_);
    meta.SetUint64("frugal.quant.calib_tokens", static_cast<uint64_t>(qm->calib_tokens_));
    meta.SetUint32("frugal.quant.calib_samples", static_cast<uint32_t>(samples.size()));
    meta.SetUint32("frugal.quant.seq_len", static_cast<uint32_t>(o.seq_len));
  }
  for (const NamedTensor& nt : tensors) {
    const TensorView* t = nt.tensor;
    QuantizedModel::Tensor out;
    out.name = nt.name;
    out.ne = ShapeOf(*t);
    TensorReport rep;
    if (auto d = done.find(nt.name); d != done.end()) {
      out.data = *d->second.first;
      out.type = d->second.second;
      rep = reports[nt.name];
      if (auto a = alternatives.find(nt.name); a != alternatives.end())
        out.alternatives = std::move(a->second);
    } else {
      const TensorChoice& c = choice[nt.name];
      rep.name = nt.name;
      rep.source = t->type;
      rep.elements = t->elements();
      rep.note = c.note;
      if (const std::vector<float>* norm = model->FindNorm(nt.name)) {
        out.type = TensorType::kF32;
        out.data = ToF32Bytes(*norm);  // AWQ may have rescaled it
      } else if (c.keep) {
        out.type = t->type;
        out.data.assign(t->data, t->data + t->nbytes);
      } else if (c.quantize) {
        FRUGAL_ASSIGN_OR_RETURN(const QuantFormat f, QuantFormat::Of(c.type, t->ne[0]));
        const std::vector<float> v = Dequantized(*t);
        FRUGAL_ASSIGN_OR_RETURN(
            out.data, QuantizeRtn(f, v.data(), t->rows(), t->ne[0], o.fit, nullptr, &pool).Pack());
        out.type = c.type;
      } else {
        out.type = c.type == TensorType::kF32 ? TensorType::kF32 : TensorType::kF16;
        const std::vector<float> v = Dequantized(*t);
        out.data = out.type == TensorType::kF32 ? ToF32Bytes(v) : ToF16Bytes(v);
      }
      rep.type = out.type;
    }
    if (!qk_order(nt.name).empty()) {
      if (auto e = export_data.find(nt.name); e != export_data.end()) {
        out.data = std::move(e->second);
      } else if (IsFrugalType(out.type)) {
        return Internal(nt.name +
                        ": a packed Q/K matrix was not re-packed in llama.cpp's row order");
      } else {
        const int64_t rows = out.ne.size() >= 2 ? out.ne[1] : out.ne[0];
        const int64_t heads =
            nt.name.find(".attn_q.") != std::string::npos ? hp.n_head : hp.n_head_kv;
        FRUGAL_ASSIGN_OR_RETURN(out.data, PermuteQkRows(out.data, rows, heads));
      }
    }
    rep.bytes = out.data.size();
    qm->reports_.push_back(rep);
    qm->out_.push_back(std::move(out));
  }
  if (!src.is_gguf()) FRUGAL_RETURN_IF_ERROR(qm->FinishHfExport(hp));
  report_progress("done", steps);
  qm->seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return qm;
}

}  // namespace frugal
