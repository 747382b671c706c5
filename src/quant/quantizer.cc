// QuantizeModel: the source loaded, the tensor types planned, then layer by layer the calibration
// inputs gathered, the method's preparation (AWQ) and the layer's matrices quantized, and the
// output assembled. The methods are quant_method.cc; QuantizedModel is quantized_model.cc.
#include "quant/quantizer.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "common/fp16.h"
#include "common/mmap_file.h"
#include "common/sha256.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "quant/dense.h"
#include "quant/gguf_grid.h"
#include "quant/hf_export.h"
#include "quant/quant_method.h"
#include "quant/work_dir.h"
#include "tokenizer/chat_template.h"

namespace frugal {
namespace quant_internal {

// A Hugging Face source written as arch llama: Q/K rows in llama.cpp's order (the model here
// computes in transformers' order). Quantized Q/K are packed a second time in that order.
class QkOrders {
 public:
  static StatusOr<QkOrders> Plan(const Source& s) {
    QkOrders q;
    if (s.src().is_gguf() || !PermutesQk(s.out_arch)) return q;
    for (const auto& [name, t] : s.by_name) {
      const bool is_q = name.find(".attn_q.") != std::string::npos,
                 is_k = name.find(".attn_k.") != std::string::npos;
      if (!is_q && !is_k) continue;
      FRUGAL_ASSIGN_OR_RETURN(q.orders_[name], QkRowOrder(t->n_dims >= 2 ? t->ne[1] : t->ne[0],
                                                          is_q ? s.hp().n_head : s.hp().n_head_kv));
    }
    return q;
  }
  // The output row order of tensor `name`; empty when its rows stay as they are.
  const std::vector<int64_t>& Of(const std::string& name) const {
    auto it = orders_.find(name);
    return it == orders_.end() ? none_ : it->second;
  }

 private:
  std::map<std::string, std::vector<int64_t>> orders_;
  std::vector<int64_t> none_;
};

namespace {

constexpr const char* kLayerMatrices[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                          "ffn_gate", "ffn_up", "ffn_down"};

LinearInput InputOf(std::string_view m) {
  if (m == "attn_output") return LinearInput::kAttnOut;
  if (m == "ffn_gate" || m == "ffn_up") return LinearInput::kFfn;
  if (m == "ffn_down") return LinearInput::kFfnDown;
  return LinearInput::kAttn;
}

// ||(wq - w) x^T||^2 / ||w x^T||^2 on sampled inputs. wq becomes the difference in place: one
// float copy of the matrix, not two (a 70B model's ffn_down is 0.94 GB as floats).
double RelativeOutputError(const float* w, std::vector<float> wq, int64_t rows, int64_t cols,
                           const InputStats& in) {
  if (in.sampled == 0) return -1;
  std::vector<float>& d = wq;
  for (size_t i = 0; i < d.size(); ++i) d[i] -= w[i];
  auto energy = [&](const float* m) {
    return dense::OutputEnergy(m, rows, cols, in.sample.data(), in.sampled);
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
}  // namespace quant_internal

StatusOr<std::vector<std::vector<int32_t>>> LoadCalibration(Engine& engine, const std::string& path,
                                                            int64_t samples, int64_t seq_len) {
  if (samples < 0 || seq_len < 8)
    return InvalidArgument("calibration needs --calib-samples >= 0 and --seq-len >= 8");
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
      std::vector<int32_t> ids;
      if (j.contains("text") && j["text"].is_string()) {
        ids = engine.EncodePrompt(j["text"].get<std::string>(), /*parse_special=*/false);
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
        auto chat = engine.EncodeChat(msgs);
        if (!chat.ok()) return chat.status().WithContext(where);
        ids = *std::move(chat);
      }
      stream.insert(stream.end(), ids.begin(), ids.end());
    }
  } else {
    stream = engine.EncodePrompt(text, /*parse_special=*/false);
  }
  if (stream.empty()) return InvalidArgument("calibration file " + path + " has no tokens");
  std::vector<std::vector<int32_t>> out;
  if (samples == 0) {  // all of it: every window, the last one as long as what is left
    for (size_t b = 0; b < stream.size(); b += static_cast<size_t>(seq_len))
      out.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(b),
                       stream.begin() + static_cast<std::ptrdiff_t>(std::min(
                                            stream.size(), b + static_cast<size_t>(seq_len))));
    return out;
  }
  const int64_t windows = std::max<int64_t>(1, static_cast<int64_t>(stream.size()) / seq_len);
  const int64_t take = std::min(samples, windows);
  for (int64_t i = 0; i < take; ++i) {
    const int64_t w = i * windows / take;  // spread evenly over the stream
    const auto begin = stream.begin() + w * seq_len;
    const auto end = begin + std::min<int64_t>(seq_len, static_cast<int64_t>(stream.end() - begin));
    out.emplace_back(begin, end);
  }
  return out;
}

namespace quant_internal {
namespace {

// --- QuantizeModel's stages ---

StatusOr<Source> LoadSource(const QuantizeOptions& o) {
  EngineOptions eo;
  eo.model_path = o.input;
  eo.threads = o.threads;
  eo.int8_activations = false;
  eo.repack_weights = false;
  eo.context_length = std::max<int64_t>(o.seq_len, 16);
  Source s;
  FRUGAL_ASSIGN_OR_RETURN(s.engine, Engine::Open(eo));
  const ModelSource& src = s.engine->source();
  if (s.engine->info().kind != ModelKind::kDecoder)
    return Unimplemented(o.input + ": only decoder models can be quantized");
  // The source's tensors under their GGUF names (a Hugging Face folder's are renamed).
  FRUGAL_ASSIGN_OR_RETURN(s.tensors, GgufNamedTensors(src));
  for (const NamedTensor& nt : s.tensors) s.by_name[nt.name] = nt.tensor;
  if (!src.is_gguf()) {
    FRUGAL_ASSIGN_OR_RETURN(s.out_arch, GgufArchForHf(src.hf()->config().model_type));
  }
  FRUGAL_ASSIGN_OR_RETURN(s.model, LlamaModel::Load(src));
  s.model->set_activation_precision(ActivationPrecision::kF32);
  return s;
}

struct Calibration {
  std::vector<std::vector<int32_t>> samples;
  std::string sha256;  // of the calibration file
  int64_t tokens = 0;
};

StatusOr<Calibration> LoadCalibrationSet(Engine& engine, const QuantizeOptions& o) {
  if (o.calib_path.empty())
    return InvalidArgument(std::string(QuantMethodName(o.method)) +
                           " needs calibration data (--calib FILE)");
  Calibration c;
  FRUGAL_ASSIGN_OR_RETURN(c.samples,
                          LoadCalibration(engine, o.calib_path, o.calib_samples, o.seq_len));
  std::ifstream in(o.calib_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  c.sha256 = Sha256Hex(ss.str());
  for (const auto& s : c.samples) c.tokens += static_cast<int64_t>(s.size());
  return c;
}

// --max-memory: the calibration hidden states (tokens x n_embd floats, kept between layers)
// within `cap` bytes, by keeping windows evenly spread over the set. Returns how many were
// dropped.
StatusOr<int64_t> CapCalibration(Calibration& c, size_t cap, int64_t n_embd) {
  const size_t per_token = static_cast<size_t>(n_embd) * sizeof(float);
  if (cap == 0 || static_cast<size_t>(c.tokens) * per_token <= cap) return 0;
  const auto n = static_cast<int64_t>(c.samples.size());
  const int64_t window = c.tokens / std::max<int64_t>(1, n);
  const auto keep = static_cast<int64_t>(cap / (per_token * static_cast<size_t>(window)));
  if (keep <= 0) {
    return InvalidArgument("--max-memory " + std::to_string(cap) +
                           " bytes holds no calibration window (one needs " +
                           std::to_string(per_token * static_cast<size_t>(window)) + " bytes)");
  }
  std::vector<std::vector<int32_t>> kept;
  for (int64_t i = 0; i < keep; ++i)
    kept.push_back(std::move(c.samples[static_cast<size_t>(i * n / keep)]));
  c.samples = std::move(kept);
  c.tokens = 0;
  for (const auto& s : c.samples) c.tokens += static_cast<int64_t>(s.size());
  return n - keep;
}

TypePlan PlanTensorTypes(const QuantizeOptions& o, const Source& s) {
  TypePlan plan;
  for (const auto& [name, t] : s.by_name) {
    TensorChoice c = ChooseType(o.recipe, name, t->n_dims, t->ne[0], t->rows(), t->type);
    if (auto f = o.force.find(name); f != o.force.end()) {
      c.type = f->second;
      c.keep = false;
      c.quantize = IsFrugalType(f->second) || IsGgufGrid(f->second);
      c.note = "forced";
    }
    plan[name] = c;
  }
  return plan;
}

LayerState LoadLayer(const LayerContext& c, int64_t li) {
  LayerState l;
  l.index = li;
  l.prefix = "blk." + std::to_string(li) + ".";
  for (const char* m : kLayerMatrices)
    l.w[m] = Dequantized(*c.source.model->FindMatrix(l.NameOf(m)));
  return l;
}

// --- calibration: the samples' hidden states, carried from layer to layer ---

struct Activations {
  const Calibration* calib = nullptr;
  std::vector<std::vector<float>> hidden;  // one per sample, [tokens][n_embd]
  std::unique_ptr<KvCache> kv;
  int64_t stride = 1;  // every stride-th token's inputs are sampled
};

Activations EmbedCalibration(const LayerContext& c, const Calibration& calib) {
  Activations a;
  a.calib = &calib;
  a.hidden.resize(calib.samples.size());
  for (size_t s = 0; s < calib.samples.size(); ++s) {
    a.hidden[s].resize(calib.samples[s].size() * static_cast<size_t>(c.source.hp().n_embd));
    c.source.model->Embed(calib.samples[s], a.hidden[s].data());
  }
  a.kv = c.source.model->NewKvCache(std::max<int64_t>(c.o.seq_len, 16));
  a.stride = std::max<int64_t>(1, calib.tokens / std::max<int64_t>(1, c.o.sample_tokens));
  return a;
}

// Runs layer l (still in float) over the hidden states and gathers its matrices' input
// statistics; the hidden states stay as they were.
Status CollectActivations(const LayerContext& c, bool hessian, const Activations& a,
                          LayerState& l) {
  const LlamaHParams& hp = c.source.hp();
  const std::pair<LinearInput, int64_t> inputs[] = {
      {LinearInput::kAttn, hp.n_embd},
      {LinearInput::kAttnOut, hp.n_head * hp.head_dim},
      {LinearInput::kFfn, hp.n_embd},
      {LinearInput::kFfnDown, hp.n_ff}};
  for (const auto& [in, cols] : inputs) {
    InputStats& st = l.stats[in];
    st.cols = cols;
    if (hessian) st.h.assign(static_cast<size_t>(cols * cols), 0.0f);
    st.abs_sum.assign(static_cast<size_t>(cols), 0.0);
  }
  int64_t token_base = 0;
  const LlamaModel::ActivationObserver observer = [&](int64_t, LinearInput in, const float* x,
                                                      int64_t n, int64_t cols) {
    InputStats& st = l.stats[in];
    if (hessian) dense::AddGramLower(x, n, cols, st.h.data());
    for (int64_t i = 0; i < n; ++i) {
      const float* row = x + i * cols;
      for (int64_t k = 0; k < cols; ++k) st.abs_sum[static_cast<size_t>(k)] += std::fabs(row[k]);
      if ((token_base + i) % a.stride == 0 && st.sampled < c.o.sample_tokens) {
        st.sample.insert(st.sample.end(), row, row + cols);
        ++st.sampled;
      }
    }
    st.tokens += n;
  };
  std::vector<float> scratch;
  const auto& samples = a.calib->samples;
  for (size_t s = 0; s < samples.size(); ++s) {
    scratch = a.hidden[s];
    FRUGAL_RETURN_IF_ERROR(c.source.model->RunLayer(
        l.index, static_cast<int64_t>(samples[s].size()), scratch.data(), *a.kv, c.pool, observer));
    token_base += static_cast<int64_t>(samples[s].size());
  }
  // The Gram products filled one triangle (dense::AddGramLower).
  if (hessian) {
    for (auto& [in, st] : l.stats) dense::CopyLowerToUpper(st.h.data(), st.cols);
  }
  return Status::Ok();
}

// The next layer sees what this quantized layer produces.
Status AdvanceActivations(const LayerContext& c, int64_t li, Activations& a) {
  for (size_t s = 0; s < a.hidden.size(); ++s) {
    FRUGAL_RETURN_IF_ERROR(
        c.source.model->RunLayer(li, static_cast<int64_t>(a.calib->samples[s].size()),
                                 a.hidden[s].data(), *a.kv, c.pool, {}));
  }
  return Status::Ok();
}

// --- the layers' matrices, quantized ---

// What the layer loop leaves for the output.
struct QuantizedLayers {
  std::map<std::string, std::pair<std::vector<uint8_t>*, TensorType>> done;  // into live_data
  std::map<std::string, std::map<TensorType, std::vector<uint8_t>>> alternatives;
  std::map<std::string, TensorReport> reports;
  // Quantized weights, which the model runs on from their layer on (stable addresses: the model
  // points into them until it is destroyed).
  std::deque<std::vector<uint8_t>> live_data;
  std::deque<TensorView> live_views;
  std::map<std::string, std::vector<uint8_t>> export_data;  // Q/K packed in output row order
  // Finished layers' tensors in the work directory, their bytes as written (Q/K in output row
  // order), and their alternatives'.
  struct Spilled {
    TensorType type = TensorType::kF32;
    QuantizedModel::Blob data;
    std::map<TensorType, QuantizedModel::Blob> alternatives;
  };
  std::map<std::string, Spilled> spilled;
};

// ||(Wq - W) X||^2 / ||W X||^2 on the sampled inputs, or the weights' error without them.
double RelError(const std::vector<float>& w, const QuantizedMatrix& q, const InputStats* in) {
  return in != nullptr ? RelativeOutputError(w.data(), q.Dequantize(), q.rows, q.cols, *in)
                       : RelativeWeightError(w, q.Dequantize());
}

// Larger alternatives of an INT4 tensor, smallest first: INT4 g32, then INT8.
StatusOr<std::vector<TensorType>> AlternativeTypes(const QuantizeOptions& o, TensorType type,
                                                   int64_t cols) {
  const TypeInfo* ti = GetTypeInfo(type);
  std::vector<TensorType> alt_types;
  if (!IsFrugalType(type)) return alt_types;  // GGUF grids: written as planned
  if (ti->bits == 4 && o.g32_alternatives && ti->group_size > 32 && cols % 32 == 0) {
    FRUGAL_ASSIGN_OR_RETURN(const TensorType t, IntType(IntKindOf(type), 32));
    alt_types.push_back(t);
  }
  if (ti->bits == 4 && o.int8_alternatives) {
    FRUGAL_ASSIGN_OR_RETURN(const TensorType t, IntType(IntKind::kInt8, ti->group_size));
    alt_types.push_back(t);
  }
  return alt_types;
}

// Matrix `name` quantized by the method to its planned type (into data) and to its larger
// alternatives (into out.alternatives); the Q/K ones also in output row order.
Status QuantizeMatrix(const LayerContext& c, const QuantMethodImpl& method, const std::string& name,
                      const std::vector<float>& w, int64_t rows, int64_t cols, const InputStats* in,
                      TensorReport& rep, std::vector<uint8_t>& data, QuantizedLayers& out) {
  const TensorType type = c.plan.at(name).type;
  const std::vector<int64_t>& order = c.qk.Of(name);
  auto quantize = [&](TensorType t) -> StatusOr<QuantizedMatrix> {
    FRUGAL_ASSIGN_OR_RETURN(const QuantFormat f, FormatFor(c.o, t, cols));
    return method.Quantize(f, w.data(), rows, cols, in, c.pool);
  };
  FRUGAL_ASSIGN_OR_RETURN(const QuantizedMatrix q, quantize(type));
  rep.rel_error = RelError(w, q, in);
  FRUGAL_ASSIGN_OR_RETURN(data, q.Pack());
  if (!order.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(out.export_data[name], PermuteRows(q, order).Pack());
  }
  FRUGAL_ASSIGN_OR_RETURN(const std::vector<TensorType> alt_types,
                          AlternativeTypes(c.o, type, cols));
  for (const TensorType t : alt_types) {
    FRUGAL_ASSIGN_OR_RETURN(const QuantizedMatrix qa, quantize(t));
    TensorReport::Alternative alt;
    alt.type = t;
    alt.rel_error = RelError(w, qa, in);
    FRUGAL_ASSIGN_OR_RETURN(std::vector<uint8_t> da,
                            (order.empty() ? qa : PermuteRows(qa, order)).Pack());
    alt.bytes = da.size();
    out.alternatives[name][t] = std::move(da);
    rep.alternatives.push_back(alt);
  }
  return Status::Ok();
}

// Matrix m of layer l as it is written (kept, quantized or float), and the model runs on it from
// now on.
Status QuantizeLayerMatrix(const LayerContext& c, const QuantMethodImpl& method, LayerState& l,
                           const char* m, QuantizedLayers& out) {
  const std::string name = l.NameOf(m);
  LlamaModel& model = *c.source.model;
  const TensorView* cur = model.FindMatrix(name);
  const TensorChoice& choice = c.plan.at(name);
  const int64_t rows = cur->rows(), cols = cur->ne[0];
  const TensorView* from = c.source.by_name.at(name);
  TensorReport rep;
  rep.name = name;
  rep.source = from->type;
  rep.elements = rows * cols;
  rep.note = choice.note;
  if (l.alpha.count(m)) rep.awq_alpha = l.alpha[m];
  std::vector<uint8_t> data;
  TensorType type = choice.type;
  const InputStats* in = method.calibrated() ? &l.stats[InputOf(m)] : nullptr;
  if (choice.keep && !l.modified.count(m)) {
    data.assign(from->data, from->data + cur->nbytes);
    type = cur->type;
  } else if (choice.quantize) {
    FRUGAL_RETURN_IF_ERROR(QuantizeMatrix(c, method, name, l.w[m], rows, cols, in, rep, data, out));
  } else {
    // F16 / F32 (or a kept tensor that AWQ rescaled: stored as F16).
    type = choice.type == TensorType::kF32 ? TensorType::kF32 : TensorType::kF16;
    data = type == TensorType::kF32 ? ToF32Bytes(l.w[m]) : ToF16Bytes(l.w[m]);
  }
  rep.type = type;
  rep.bytes = data.size();
  out.live_data.push_back(std::move(data));
  out.live_views.push_back(TensorView::Matrix(type, cols, rows, out.live_data.back().data(),
                                              out.live_data.back().size()));
  out.live_views.back().name = name;
  FRUGAL_RETURN_IF_ERROR(model.SetMatrix(name, &out.live_views.back()));
  out.reports[name] = rep;
  out.done[name] = {&out.live_data.back(), type};
  return Status::Ok();
}

// Once matrix kLayerMatrices[i] is written, its float weights are not needed, nor its input's
// statistics when no later matrix reads that input: freed, so that a layer's peak is its largest
// matrix's work (for a 70B model's ffn_down: 3.3 GB of Hessian and as much of its factor) rather
// than everything the layer ever held (EstimatePlan counts it so).
void ReleaseFinished(LayerState& l, size_t i) {
  const char* m = kLayerMatrices[i];
  std::vector<float>().swap(l.w[m]);
  const LinearInput in = InputOf(m);
  for (size_t k = i + 1; k < std::size(kLayerMatrices); ++k) {
    if (InputOf(kLayerMatrices[k]) == in) return;
  }
  if (auto it = l.stats.find(in); it != l.stats.end()) {
    InputStats& st = it->second;
    std::vector<float>().swap(st.h);
    std::vector<float>().swap(st.sample);
    st.gptq_factor.reset();
  }
}

// Layer li's source tensors are not read again (the model runs on the quantized layer, and what
// is written was copied): their mapped pages go back to the kernel, so that a source larger than
// memory (a 70B model's 140 GB) is resident about one layer at a time (EstimatePlan counts it
// so).
void ReleaseLayerSource(const LayerContext& c, int64_t li) {
  const std::string prefix = "blk." + std::to_string(li) + ".";
  for (const NamedTensor& nt : c.source.tensors) {
    if (nt.name.starts_with(prefix)) ReleaseResidentPages(nt.tensor->data, nt.tensor->nbytes);
  }
}

// --- the work directory: finished layers spilled, and read back on --resume ---

// Doubles and floats in the layer files as their bits: read back exactly (the --max-size
// choice and the reports of a resumed run are the uninterrupted run's).
uint64_t Bits(double d) { return std::bit_cast<uint64_t>(d); }
double FromBits(uint64_t b) { return std::bit_cast<double>(b); }

nlohmann::json BlobJson(const QuantizedModel::Blob& b) {
  return {{"file", std::filesystem::path(b.file).filename().string()},
          {"offset", b.offset},
          {"size", b.size}};
}

QuantizedModel::Blob BlobFrom(const WorkDir& wd, const nlohmann::json& j) {
  QuantizedModel::Blob b;
  b.file = (std::filesystem::path(wd.path()) / j.at("file").get<std::string>()).string();
  b.offset = j.at("offset").get<uint64_t>();
  b.size = j.at("size").get<uint64_t>();
  return b;
}

nlohmann::json ReportJson(const TensorReport& r) {
  nlohmann::json alts = nlohmann::json::array();
  for (const TensorReport::Alternative& a : r.alternatives) {
    alts.push_back(
        {{"type", static_cast<int>(a.type)}, {"bytes", a.bytes}, {"rel_error", Bits(a.rel_error)}});
  }
  return {{"name", r.name},
          {"source", static_cast<int>(r.source)},
          {"type", static_cast<int>(r.type)},
          {"elements", r.elements},
          {"bytes", r.bytes},
          {"note", r.note},
          {"rel_error", Bits(r.rel_error)},
          {"awq_alpha", Bits(r.awq_alpha)},
          {"alternatives", alts}};
}

TensorReport ReportFrom(const nlohmann::json& j) {
  TensorReport r;
  r.name = j.at("name").get<std::string>();
  r.source = static_cast<TensorType>(j.at("source").get<int>());
  r.type = static_cast<TensorType>(j.at("type").get<int>());
  r.elements = j.at("elements").get<int64_t>();
  r.bytes = j.at("bytes").get<size_t>();
  r.note = j.at("note").get<std::string>();
  r.rel_error = FromBits(j.at("rel_error").get<uint64_t>());
  r.awq_alpha = FromBits(j.at("awq_alpha").get<uint64_t>());
  for (const nlohmann::json& a : j.at("alternatives")) {
    r.alternatives.push_back({static_cast<TensorType>(a.at("type").get<int>()),
                              a.at("bytes").get<size_t>(),
                              FromBits(a.at("rel_error").get<uint64_t>())});
  }
  return r;
}

// A float Q/K matrix of a Hugging Face source written as arch llama, its rows in llama.cpp's
// order (quantized ones are packed a second time in that order: export_data).
StatusOr<std::vector<uint8_t>> FloatQkInFileOrder(const LayerContext& c, const std::string& name,
                                                  TensorType type, const std::vector<uint8_t>& data,
                                                  int64_t rows) {
  if (IsFrugalType(type) || IsGgufGrid(type))
    return Internal(name + ": a packed Q/K matrix was not re-packed in llama.cpp's row order");
  const int64_t heads =
      name.find(".attn_q.") != std::string::npos ? c.source.hp().n_head : c.source.hp().n_head_kv;
  return PermuteQkRows(data, rows, heads);
}

// The norms a layer's method may have changed (AWQ folds its scales into them).
constexpr const char* kLayerNorms[] = {"attn_norm", "ffn_norm"};

// Layer li is finished (its quantized weights have carried the states on): its tensors go to
// the work directory as they will be written, their memory is freed (the model never runs this
// layer again, and runs on the source's view of it should anything ask), and the checkpoint
// records the layer, its norms and the calibration states after it.
Status SpillLayer(const LayerContext& c, int64_t li, QuantizedLayers& out, WorkDir& wd,
                  const std::vector<std::vector<float>>& states) {
  const std::string bin = WorkDir::LayerFile(li, ".bin"),
                    prefix = "blk." + std::to_string(li) + ".";
  nlohmann::json j;
  j["layer"] = li;
  j["tensors"] = nlohmann::json::array();
  for (const char* m : kLayerMatrices) {
    const std::string name = prefix + m + ".weight";
    const auto d = out.done.find(name);
    if (d == out.done.end()) return Internal(name + " was not quantized");
    QuantizedLayers::Spilled sp;
    sp.type = d->second.second;
    std::vector<uint8_t>* live = d->second.first;
    const auto e = out.export_data.find(name);
    std::vector<uint8_t> permuted;
    const std::vector<uint8_t>* bytes = e != out.export_data.end() ? &e->second : live;
    if (e == out.export_data.end() && !c.qk.Of(name).empty()) {
      FRUGAL_ASSIGN_OR_RETURN(
          permuted, FloatQkInFileOrder(c, name, sp.type, *live, c.source.by_name.at(name)->rows()));
      bytes = &permuted;
    }
    FRUGAL_ASSIGN_OR_RETURN(sp.data, wd.Append(bin, *bytes));
    nlohmann::json t = {{"name", name},
                        {"type", static_cast<int>(sp.type)},
                        {"data", BlobJson(sp.data)},
                        {"report", ReportJson(out.reports.at(name))},
                        {"alternatives", nlohmann::json::array()}};
    if (const auto a = out.alternatives.find(name); a != out.alternatives.end()) {
      for (const auto& [type, bytes] : a->second) {
        FRUGAL_ASSIGN_OR_RETURN(QuantizedModel::Blob b, wd.Append(bin, bytes));
        t["alternatives"].push_back({{"type", static_cast<int>(type)}, {"data", BlobJson(b)}});
        sp.alternatives[type] = std::move(b);
      }
      out.alternatives.erase(a);
    }
    if (e != out.export_data.end()) out.export_data.erase(e);
    FRUGAL_RETURN_IF_ERROR(c.source.model->SetMatrix(name, c.source.by_name.at(name)));
    std::vector<uint8_t>().swap(*live);
    out.done.erase(d);
    out.spilled[name] = std::move(sp);
    j["tensors"].push_back(std::move(t));
  }
  j["norms"] = nlohmann::json::object();
  for (const char* n : kLayerNorms) {
    const std::string name = prefix + n + ".weight";
    if (const std::vector<float>* v = c.source.model->FindNorm(name)) {
      std::vector<uint32_t> bits(v->size());
      for (size_t i = 0; i < v->size(); ++i) bits[i] = std::bit_cast<uint32_t>((*v)[i]);
      j["norms"][name] = bits;
    }
  }
  return wd.CommitLayer(li, j.dump(), states);
}

// A layer an earlier run finished: its tensors' places in the work directory, their reports,
// and its norms as the method left them.
Status RestoreLayer(const LayerContext& c, int64_t li, QuantizedLayers& out, const WorkDir& wd) {
  FRUGAL_ASSIGN_OR_RETURN(const std::string text, wd.LayerJson(li));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("layer", int64_t{-1}) != li)
    return DataLoss(wd.path() + ": " + WorkDir::LayerFile(li, ".json") + " is damaged");
  try {
    for (const nlohmann::json& t : j.at("tensors")) {
      const std::string name = t.at("name").get<std::string>();
      QuantizedLayers::Spilled sp;
      sp.type = static_cast<TensorType>(t.at("type").get<int>());
      sp.data = BlobFrom(wd, t.at("data"));
      for (const nlohmann::json& a : t.at("alternatives"))
        sp.alternatives[static_cast<TensorType>(a.at("type").get<int>())] =
            BlobFrom(wd, a.at("data"));
      out.reports[name] = ReportFrom(t.at("report"));
      out.spilled[name] = std::move(sp);
    }
    for (const auto& [name, bits] : j.at("norms").items()) {
      std::vector<float> v;
      for (const nlohmann::json& b : bits) v.push_back(std::bit_cast<float>(b.get<uint32_t>()));
      FRUGAL_RETURN_IF_ERROR(c.source.model->SetNorm(name, std::move(v)));
    }
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(wd.path() + ": " + WorkDir::LayerFile(li, ".json") + " is damaged (" +
                    e.what() + ")");
  }
  return Status::Ok();
}

// Tests stop a run after N finished layers (as an interruption would) with
// FRUGAL_QUANTIZE_STOP_AFTER_LAYERS=N; 0 when unset.
int64_t StopAfterLayers() {
  const char* v = std::getenv("FRUGAL_QUANTIZE_STOP_AFTER_LAYERS");
  return v != nullptr ? std::atoll(v) : 0;
}

// Layer by layer: calibrate on what the quantized layers before produce, let the method prepare
// the layer, quantize its matrices, and carry the hidden states on. With a work directory each
// finished layer is spilled and checkpointed, and the layers an earlier run finished are read
// back instead of quantized again.
Status QuantizeLayers(const LayerContext& c, const QuantMethodImpl& method,
                      const Calibration& calib, QuantizedLayers& out, WorkDir* wd) {
  const int64_t n_layer = c.source.hp().n_layer;
  Activations acts = EmbedCalibration(c, calib);
  int64_t first = 0;
  if (wd != nullptr) {
    first = wd->layers_done();
    for (int64_t li = 0; li < first; ++li) FRUGAL_RETURN_IF_ERROR(RestoreLayer(c, li, out, *wd));
    if (first > 0 && method.calibrated()) FRUGAL_RETURN_IF_ERROR(wd->LoadStates(acts.hidden));
  }
  const int64_t stop_after = StopAfterLayers();
  for (int64_t li = first; li < n_layer; ++li) {
    if (c.o.progress) c.o.progress({"layer", li, n_layer + 1});
    if (wd != nullptr) FRUGAL_RETURN_IF_ERROR(wd->BeginLayer(li));
    LayerState l = LoadLayer(c, li);
    if (method.calibrated())
      FRUGAL_RETURN_IF_ERROR(CollectActivations(c, method.needs_hessian(), acts, l));
    FRUGAL_RETURN_IF_ERROR(method.PrepareLayer(c, l));
    for (size_t i = 0; i < std::size(kLayerMatrices); ++i) {
      FRUGAL_RETURN_IF_ERROR(QuantizeLayerMatrix(c, method, l, kLayerMatrices[i], out));
      ReleaseFinished(l, i);
    }
    if (method.calibrated()) FRUGAL_RETURN_IF_ERROR(AdvanceActivations(c, li, acts));
    ReleaseLayerSource(c, li);
    if (wd != nullptr) {
      FRUGAL_RETURN_IF_ERROR(SpillLayer(c, li, out, *wd, acts.hidden));
      if (stop_after > 0 && li + 1 >= stop_after && li + 1 < n_layer) {
        return Internal("stopped after " + std::to_string(li + 1) +
                        " layers (FRUGAL_QUANTIZE_STOP_AFTER_LAYERS); the checkpoint is in " +
                        wd->path() + ": --resume continues");
      }
    }
  }
  return Status::Ok();
}

// --- the output ---

// The source's metadata (or a Hugging Face folder's config and tokenizer as GGUF metadata),
// and how the file was made.
Status SetOutputMetadata(const QuantizeOptions& o, const Source& s, bool calibrated,
                         const Calibration& calib, GgufWriter& meta) {
  const ModelSource& src = s.src();
  if (src.is_gguf()) {
    FRUGAL_RETURN_IF_ERROR(
        meta.CopyMetadata(*src.gguf(), {"general.file_type", kFrugalFormatVersionKey}));
  } else {
    std::string name = src.path();
    while (name.ends_with('/')) name.pop_back();
    SetHfModelMetadata(s.out_arch, name.substr(name.find_last_of('/') + 1), s.hp(), &meta);
    FRUGAL_RETURN_IF_ERROR(
        SetTokenizerMetadata(s.engine->tokenizer().spec(), src.hf()->chat_template(), &meta));
  }
  meta.SetUint32(kFrugalFormatVersionKey, kFrugalFormatVersion);
  meta.SetString("frugal.quant.method", QuantMethodName(o.method));
  meta.SetString("frugal.quant.scale_fit", o.fit == ScaleFit::kSearch ? "search" : "minmax");
  meta.SetString("frugal.quant.recipe", o.recipe.ToYaml());
  meta.SetString("frugal.quant.recipe_name", o.recipe.name);
  meta.SetString("frugal.quant.source", o.input.substr(o.input.find_last_of('/') + 1));
  if (calibrated) {
    meta.SetString("frugal.quant.calib_sha256", calib.sha256);
    meta.SetUint64("frugal.quant.calib_tokens", static_cast<uint64_t>(calib.tokens));
    meta.SetUint32("frugal.quant.calib_samples", static_cast<uint32_t>(calib.samples.size()));
    meta.SetUint32("frugal.quant.seq_len", static_cast<uint32_t>(o.seq_len));
  }
  return Status::Ok();
}

// One output tensor (QuantizedModel::Tensor's fields) and its report.
struct OutputTensor {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<int64_t> ne;
  QuantizedModel::Blob data;
  std::map<TensorType, QuantizedModel::Blob> alternatives;
  TensorReport report;
  bool output_order = false;  // Q/K already in the file's row order (spilled as written)
};

// A tensor outside the layer loop: a norm (AWQ may have rescaled it), kept, RTN-quantized (the
// embeddings and output head, whatever the method) or float.
Status ConvertOtherTensor(const LayerContext& c, const NamedTensor& nt, OutputTensor& out) {
  const TensorView* t = nt.tensor;
  const TensorChoice& choice = c.plan.at(nt.name);
  TensorReport& rep = out.report;
  rep.name = nt.name;
  rep.source = t->type;
  rep.elements = t->elements();
  rep.note = choice.note;
  if (const std::vector<float>* norm = c.source.model->FindNorm(nt.name)) {
    out.type = TensorType::kF32;
    out.data.bytes = ToF32Bytes(*norm);
  } else if (choice.keep) {
    out.type = t->type;
    out.data.bytes.assign(t->data, t->data + t->nbytes);
  } else if (choice.quantize) {
    FRUGAL_ASSIGN_OR_RETURN(const QuantFormat f, FormatFor(c.o, choice.type, t->ne[0]));
    const std::vector<float> v = Dequantized(*t);
    FRUGAL_ASSIGN_OR_RETURN(
        out.data.bytes,
        QuantizeRtn(f, v.data(), t->rows(), t->ne[0], c.o.fit, nullptr, &c.pool).Pack());
    out.type = choice.type;
  } else {
    out.type = choice.type == TensorType::kF32 ? TensorType::kF32 : TensorType::kF16;
    const std::vector<float> v = Dequantized(*t);
    out.data.bytes = out.type == TensorType::kF32 ? ToF32Bytes(v) : ToF16Bytes(v);
  }
  rep.type = out.type;
  return Status::Ok();
}

// Q/K of a Hugging Face source written as arch llama: the rows in llama.cpp's order.
Status PermuteQk(const LayerContext& c, QuantizedLayers& layers, OutputTensor& out) {
  if (c.qk.Of(out.name).empty() || out.output_order) return Status::Ok();
  if (auto e = layers.export_data.find(out.name); e != layers.export_data.end()) {
    out.data.bytes = std::move(e->second);
  } else {
    const int64_t rows = out.ne.size() >= 2 ? out.ne[1] : out.ne[0];
    FRUGAL_ASSIGN_OR_RETURN(out.data.bytes,
                            FloatQkInFileOrder(c, out.name, out.type, out.data.bytes, rows));
  }
  return Status::Ok();
}

// Every tensor in the source's order, as it is written. With a work directory the layers'
// tensors are already there, and the others (embeddings, output head, norms) go there too as
// they are made: the output holds no tensor's bytes in memory.
StatusOr<std::vector<OutputTensor>> AssembleOutput(const LayerContext& c, QuantizedLayers& layers,
                                                   WorkDir* wd) {
  std::vector<OutputTensor> result;
  if (wd != nullptr) FRUGAL_RETURN_IF_ERROR(wd->BeginTail());
  for (const NamedTensor& nt : c.source.tensors) {
    OutputTensor out;
    out.name = nt.name;
    out.ne = ShapeOf(*nt.tensor);
    if (auto d = layers.done.find(nt.name); d != layers.done.end()) {
      // Moved, not copied: the output is held once (the model's views of the layers' weights
      // keep pointing at the same buffers, and no layer is run again).
      out.data.bytes = std::move(*d->second.first);
      out.type = d->second.second;
      out.report = layers.reports[nt.name];
      if (auto a = layers.alternatives.find(nt.name); a != layers.alternatives.end()) {
        for (auto& [type, bytes] : a->second) out.alternatives[type].bytes = std::move(bytes);
      }
    } else if (auto sp = layers.spilled.find(nt.name); sp != layers.spilled.end()) {
      out.data = sp->second.data;
      out.type = sp->second.type;
      out.alternatives = sp->second.alternatives;
      out.report = layers.reports[nt.name];
      out.output_order = true;
    } else {
      FRUGAL_RETURN_IF_ERROR(ConvertOtherTensor(c, nt, out));
    }
    FRUGAL_RETURN_IF_ERROR(PermuteQk(c, layers, out));
    if (wd != nullptr && out.data.file.empty()) {
      FRUGAL_ASSIGN_OR_RETURN(QuantizedModel::Blob b, wd->Append("tail.bin", out.data.bytes));
      out.data = std::move(b);
    }
    out.report.bytes = out.data.Size();
    result.push_back(std::move(out));
  }
  return result;
}

// Every option that changes the output's bytes, and the input's identity (path, sizes and
// modification times: not its hash, which would cost a read of a 140 GB model).
StatusOr<RunManifest> ManifestOf(const QuantizeOptions& o, const Calibration& calib, int threads) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path input = fs::absolute(o.input, ec);
  std::string identity = input.lexically_normal().string();
  std::vector<fs::path> files;
  if (fs::is_directory(input, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(input, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(input);
  }
  for (const fs::path& f : files) {
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec).time_since_epoch().count();
    identity +=
        " " + f.filename().string() + ":" + std::to_string(size) + "@" + std::to_string(mtime);
  }
  char damp[64];
  std::snprintf(damp, sizeof damp, "%.17g", o.gptq.damp);
  std::string force;
  for (const auto& [name, type] : o.force) force += name + "=" + TypeName(type) + ";";
  RunManifest m;
  m["input"] = identity;
  m["recipe"] = o.recipe.ToYaml();
  m["target"] = o.target == QuantTarget::kFrugal     ? "frugal"
                : o.target == QuantTarget::kLlamaCpp ? "llama.cpp"
                                                     : "vllm";
  m["method"] = QuantMethodName(o.method);
  m["calib"] = calib.sha256;
  m["calib_tokens"] = std::to_string(calib.tokens);
  m["calib_windows"] = std::to_string(calib.samples.size());
  m["calib_samples"] = std::to_string(o.calib_samples);
  m["seq_len"] = std::to_string(o.seq_len);
  m["sample_tokens"] = std::to_string(o.sample_tokens);
  m["scale_fit"] = o.fit == ScaleFit::kSearch ? "search" : "minmax";
  m["integer_zero"] = o.integer_zero ? "yes" : "no";
  m["damp"] = damp;
  m["act_order"] = o.gptq.act_order ? "yes" : "no";
  m["gptq_block"] = std::to_string(o.gptq.block);
  m["awq_grid"] = std::to_string(o.awq.grid);
  m["threads"] = std::to_string(threads);
  m["force"] = force;
  m["int8_alternatives"] = o.int8_alternatives ? "yes" : "no";
  m["g32_alternatives"] = o.g32_alternatives ? "yes" : "no";
  m["max_memory"] = std::to_string(o.max_activation_bytes);
  if (ec) return IoError("cannot read " + o.input + ": " + ec.message());
  return m;
}

}  // namespace
}  // namespace quant_internal

StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& o) {
  namespace qi = quant_internal;
  const auto t0 = std::chrono::steady_clock::now();
  FRUGAL_ASSIGN_OR_RETURN(qi::Source source, qi::LoadSource(o));
  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::DefaultThreads());
  dense::SetThreads(pool.size());  // the Hessians and GPTQ's algebra use as many
  const std::unique_ptr<qi::QuantMethodImpl> method = qi::MakeQuantMethod(o);
  auto qm = std::unique_ptr<QuantizedModel>(new QuantizedModel());
  qi::Calibration calib;
  int64_t windows_dropped = 0;
  if (method->calibrated()) {
    FRUGAL_ASSIGN_OR_RETURN(calib, qi::LoadCalibrationSet(*source.engine, o));
    FRUGAL_ASSIGN_OR_RETURN(windows_dropped,
                            qi::CapCalibration(calib, o.max_activation_bytes, source.hp().n_embd));
    qm->calib_sha256_ = calib.sha256;
    qm->calib_tokens_ = calib.tokens;
  }
  const qi::TypePlan plan = qi::PlanTensorTypes(o, source);
  FRUGAL_ASSIGN_OR_RETURN(const qi::QkOrders qk, qi::QkOrders::Plan(source));
  const qi::LayerContext c{o, source, plan, qk, pool};
  std::unique_ptr<qi::WorkDir> wd;
  if (!o.work_dir.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(const qi::RunManifest manifest,
                            qi::ManifestOf(o, calib, static_cast<int>(pool.size())));
    FRUGAL_ASSIGN_OR_RETURN(wd,
                            qi::WorkDir::Open(o.work_dir, manifest, source.hp().n_layer, o.resume));
  }
  // A failure before any layer is finished leaves nothing worth resuming.
  const auto fail = [&](Status st) {
    if (wd != nullptr && wd->layers_done() == 0) (void)RemoveQuantizeWorkDir(wd->path());
    return st;
  };
  {
    QuantPlan p =
        qi::EstimatePlan(c, *method, calib.tokens, static_cast<int64_t>(calib.samples.size()));
    p.windows_dropped = windows_dropped;
    if (wd != nullptr) {
      // Finished layers leave memory for the work directory: the run's peak is one layer's.
      p.output_spilled = true;
      p.resumed_layers = wd->layers_done();
      p.end_peak_bytes = p.layer_peak_bytes;
      // The finished layers are read back, not quantized again: the time is the rest's.
      p.total_seconds =
          p.layer_seconds * static_cast<double>(std::max<int64_t>(0, p.layers - p.resumed_layers));
    }
    if (o.on_plan) o.on_plan(p);
    if (p.mem_available > 0 && p.layer_peak_bytes > p.mem_available) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "one layer needs about %.1f GB (the source %.1f, a layer's work %.1f, "
                    "calibration states %.1f) and MemAvailable is %.1f GB",
                    static_cast<double>(p.layer_peak_bytes) / 1e9,
                    static_cast<double>(p.source_bytes) / 1e9,
                    static_cast<double>(p.layer_work_bytes) / 1e9,
                    static_cast<double>(p.activation_bytes) / 1e9,
                    static_cast<double>(p.mem_available) / 1e9);
      return fail(ResourceExhausted(std::string(msg) +
                                    ": free memory, or use a machine with more (--max-memory "
                                    "caps only the calibration states)"));
    }
  }
  qi::QuantizedLayers layers;
  if (Status st = qi::QuantizeLayers(c, *method, calib, layers, wd.get()); !st.ok())
    return fail(st);
  const int64_t steps = source.hp().n_layer + 1;
  if (o.progress) o.progress({"embeddings", source.hp().n_layer, steps});

  FRUGAL_RETURN_IF_ERROR(
      qi::SetOutputMetadata(o, source, method->calibrated(), calib, qm->metadata_));
  FRUGAL_ASSIGN_OR_RETURN(std::vector<qi::OutputTensor> tensors,
                          qi::AssembleOutput(c, layers, wd.get()));
  for (qi::OutputTensor& t : tensors) {
    qm->reports_.push_back(std::move(t.report));
    qm->out_.push_back(
        {std::move(t.name), t.type, std::move(t.ne), std::move(t.data), std::move(t.alternatives)});
  }
  if (!source.src().is_gguf()) FRUGAL_RETURN_IF_ERROR(qm->FinishHfExport(source.hp()));
  if (o.progress) o.progress({"done", steps, steps});
  qm->seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return qm;
}

}  // namespace frugal
