#include "quant/gptq_export.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <sstream>

#include "common/durable.h"
#include "common/fp16.h"
#include "formats/hf_checkpoint.h"
#include "formats/safetensors_writer.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "models/llama.h"
#include "quant/hf_export.h"
#include "quant/quant_format.h"

namespace frugal {

namespace fs = std::filesystem;

std::string GptqScheme::Name() const {
  return "gptq int" + std::to_string(bits) + " g" + std::to_string(group) +
         (sym ? " sym" : " asym");
}

StatusOr<GptqScheme> GptqSchemeOf(TensorType type) {
  const TypeInfo* info = GetTypeInfo(type);
  if (!IsFrugalType(type) || info == nullptr)
    return InvalidArgument(TypeName(type) + " is not a Frugal INT type");
  if (info->group_size == 0) {
    return InvalidArgument(TypeName(type) +
                           " has one float scale per row, which GPTQ's fp16 group scales cannot "
                           "hold: give the rule a group_size (32, 64 or 128)");
  }
  const IntKind kind = IntKindOf(type);
  return GptqScheme{kind == IntKind::kInt8 ? 8 : 4, info->group_size, kind != IntKind::kInt4Asym};
}

StatusOr<GptqLinear> PackGptq(TensorType type, int64_t rows, int64_t cols, const int8_t* q,
                              const float* scale, const float* offset) {
  FRUGAL_ASSIGN_OR_RETURN(const GptqScheme s, GptqSchemeOf(type));
  const IntKind kind = IntKindOf(type);
  const int64_t pack = 32 / s.bits, groups = cols / s.group;
  if (rows % pack != 0 || cols % pack != 0 || cols % s.group != 0) {
    return InvalidArgument("GPTQ packs " + std::to_string(pack) + " values per int32: a [" +
                           std::to_string(rows) + " x " + std::to_string(cols) +
                           "] matrix does not divide");
  }
  GptqLinear g;
  g.scheme = s;
  g.in = cols;
  g.out = rows;
  std::vector<uint32_t> qweight(static_cast<size_t>(cols / pack * rows));
  std::vector<uint32_t> qzeros(static_cast<size_t>(groups * (rows / pack)));
  g.scales.resize(static_cast<size_t>(groups * rows));
  const uint32_t mask = (1u << s.bits) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const size_t pi = static_cast<size_t>(r * groups + gi);
      int zero = 0;
      if (kind == IntKind::kInt8) {
        zero = 128;
      } else if (kind == IntKind::kInt4Sym) {
        zero = 8;
      } else {
        const std::optional<int> z = IntegerZeroOf({scale[pi], offset[pi]});
        if (!z) {
          return InvalidArgument(
              "row " + std::to_string(r) + ", group " + std::to_string(gi) +
              " has a float offset, not an integer zero point: quantize with --target vllm");
        }
        zero = *z;
      }
      g.scales[static_cast<size_t>(gi * rows + r)] = Fp32ToFp16(scale[pi]);
      qzeros[static_cast<size_t>(gi * (rows / pack) + r / pack)] |=
          (static_cast<uint32_t>(zero - 1) & mask) << (s.bits * (r % pack));
      for (int64_t c = gi * s.group; c < (gi + 1) * s.group; ++c) {
        const int v = q[r * cols + c] + (kind == IntKind::kInt8 ? 128 : 0);
        qweight[static_cast<size_t>((c / pack) * rows + r)] |= static_cast<uint32_t>(v)
                                                               << (s.bits * (c % pack));
      }
    }
  }
  g.qweight.resize(qweight.size());
  std::memcpy(g.qweight.data(), qweight.data(), qweight.size() * 4);
  g.qzeros.resize(qzeros.size());
  std::memcpy(g.qzeros.data(), qzeros.data(), qzeros.size() * 4);
  g.g_idx.resize(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c)
    g.g_idx[static_cast<size_t>(c)] = static_cast<int32_t>(c / s.group);
  return g;
}

Status CheckGptqOutputDir(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  if (fs::exists(p, ec) && !(fs::is_directory(p, ec) && fs::is_empty(p, ec))) {
    return InvalidArgument("--target vllm writes a folder: " + dir +
                           " exists and is not an empty folder (remove it or choose another -o)");
  }
  fs::path parent = p.parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec) || access(parent.c_str(), W_OK) != 0)
    return InvalidArgument("cannot write " + dir + ": its parent folder is not writable");
  return Status::Ok();
}

namespace {

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

StatusOr<std::string> DtypeName(TensorType t) {
  switch (t) {
    case TensorType::kF32:
      return std::string("F32");
    case TensorType::kF16:
      return std::string("F16");
    case TensorType::kBF16:
      return std::string("BF16");
    default:
      return InvalidArgument(TypeName(t) + " is not a safetensors float type");
  }
}

// v in `dtype` ("F32", "F16", "BF16"); nullopt when that type does not hold every value exactly.
std::optional<std::vector<uint8_t>> ToDtype(const std::vector<float>& v, const std::string& dtype) {
  if (dtype == "F32") return Bytes(v);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const bool f16 = dtype == "F16";
    h[i] = f16 ? Fp32ToFp16(v[i]) : Fp32ToBf16(v[i]);
    const float back = f16 ? Fp16ToFp32(h[i]) : Bf16ToFp32(h[i]);
    if (back != v[i] && !(std::isnan(back) && std::isnan(v[i]))) return std::nullopt;
  }
  return Bytes(h);
}

// Rows of a row-major array back from an order (from[i] = source row of row i) to the source's.
template <typename T>
std::vector<T> UnpermuteRows(const std::vector<T>& v, const std::vector<int64_t>& from) {
  if (from.empty()) return v;
  const size_t row = v.size() / from.size();
  std::vector<T> out(v.size());
  for (size_t i = 0; i < from.size(); ++i) {
    std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(i * row), row,
                out.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(from[i]) * row));
  }
  return out;
}

// "model.layers.3.self_attn.q_proj.weight" -> {"model.layers.", 3, "self_attn.q_proj"}.
struct LayerModule {
  std::string prefix;
  int64_t layer = -1;
  std::string kind;
};
std::optional<LayerModule> ParseModule(const std::string& hf_weight) {
  const size_t at = hf_weight.find("layers.");
  if (at == std::string::npos || !hf_weight.ends_with(".weight")) return std::nullopt;
  const size_t num = at + 7, dot = hf_weight.find('.', num);
  if (dot == std::string::npos || dot == num) return std::nullopt;
  LayerModule m;
  m.prefix = hf_weight.substr(0, num);
  try {
    m.layer = std::stoll(hf_weight.substr(num, dot - num));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  m.kind = hf_weight.substr(dot + 1, hf_weight.size() - 7 - dot - 1);
  return m;
}

// vLLM loads q/k/v as one qkv_proj and gate/up as one gate_up_proj: one scheme each.
const std::vector<std::pair<std::string, std::vector<std::string>>>& FusedModules() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kFused = {
      {"self_attn.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
      {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj"}}};
  return kFused;
}

std::string RegexEscape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (std::strchr(".^$*+?()[]{}|\\", c) != nullptr) out += '\\';
    out += c;
  }
  return out;
}

// How each Linear of the layers was written: a scheme, or unquantized.
struct ModuleScheme {
  std::optional<GptqScheme> scheme;  // nullopt: unquantized
  int64_t weights = 0;
};

// The "dynamic" rules: for every scheme but `base` (and for unquantized Linears, "-:"), one
// pattern per set of layers, naming the modules by their HF names and by vLLM's fused names.
nlohmann::ordered_json DynamicRules(
    const std::string& prefix, int64_t n_layer,
    const std::map<std::pair<int64_t, std::string>, ModuleScheme>& mods, const GptqScheme& base,
    GptqExportReport& rep) {
  // scheme (nullopt = unquantized) -> kind -> layers
  std::map<std::optional<GptqScheme>, std::map<std::string, std::set<int64_t>>> by;
  for (const auto& [key, ms] : mods) {
    if (ms.scheme == base) continue;
    by[ms.scheme][key.second].insert(key.first);
  }
  nlohmann::ordered_json rules = nlohmann::ordered_json::object();
  for (const auto& [scheme, kinds] : by) {
    std::map<std::set<int64_t>, std::vector<std::string>> by_layers;
    for (const auto& [kind, layers] : kinds) by_layers[layers].push_back(kind);
    for (const auto& [layers, kind_list] : by_layers) {
      std::vector<std::string> names = kind_list;
      const std::vector<std::string>& kl = kind_list;  // lambdas cannot capture bindings (clang)
      for (const auto& [fused, parts] : FusedModules()) {
        if (std::all_of(parts.begin(), parts.end(), [&kl](const std::string& p) {
              return std::find(kl.begin(), kl.end(), p) != kl.end();
            }))
          names.push_back(fused);
      }
      std::string layer_re;
      if (static_cast<int64_t>(layers.size()) == n_layer) {
        layer_re = "\\d+";
      } else {
        for (const int64_t l : layers)
          layer_re += (layer_re.empty() ? "" : "|") + std::to_string(l);
      }
      std::string kind_re;
      for (const std::string& k : names) kind_re += (kind_re.empty() ? "" : "|") + RegexEscape(k);
      const std::string pattern =
          RegexEscape(prefix) + "(?:" + layer_re + ")\\.(?:" + kind_re + ")$";
      if (scheme) {
        rules["+:" + pattern] = {{"bits", scheme->bits},
                                 {"group_size", scheme->group},
                                 {"sym", scheme->sym},
                                 {"desc_act", false}};
        rep.dynamic["+:" + pattern] = scheme->Name();
      } else {
        rules["-:" + pattern] = nlohmann::ordered_json::object();
        rep.dynamic["-:" + pattern] = "unquantized";
      }
    }
  }
  return rules;
}

StatusOr<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return NotFound("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();
  if (!out) return IoError("cannot write " + p.string());
  return Status::Ok();
}

// The source's files that are not weights or configuration we rewrite: tokenizer, generation
// config, chat template, README, ...
bool CopiedUnchanged(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name == "config.json" || name == "quantize_config.json") return false;
  for (const char* ext : {".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json",
                          ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".onnx", ".ckpt"}) {
    if (name.ends_with(ext)) return false;
  }
  return true;
}

// Writes the folder in two passes. The first describes every tensor of the output (name, dtype,
// shape, bytes) from the quantized model's types and shapes, and checks what vLLM needs (the
// fused Linears, the schemes) before anything is written; the second writes the shards one
// after the other, making each tensor's bytes when the file reaches it: one quantized Linear
// (its four tensors) or one float tensor is held at a time, never a shard or the model.
class FolderWriter {
 public:
  FolderWriter(const QuantizedModel& m, const Raise& raise, const GptqExportOptions& o)
      : m_(m), raise_(raise), o_(o) {}

  StatusOr<GptqExportReport> Run();

 private:
  // One source tensor and what it becomes.
  struct Item {
    const TensorView* src = nullptr;
    QuantizedModel::TensorOut t{};
    std::vector<int64_t> order;  // Q/K of arch llama: the GGUF's rows back to the source's
    bool quantized = false;
    std::string dtype;  // float tensors: as written
  };
  // An entry of the output: part of item `item` (a quantized Linear's qweight 0, qzeros 1,
  // scales 2, g_idx 3; a float tensor 0).
  struct EntryOf {
    size_t item = 0;
    int part = 0;
  };

  Status Plan();
  Status DescribeQuantized(size_t item);
  Status DescribeFloat(size_t item);
  StatusOr<std::span<const uint8_t>> BytesOf(size_t entry);
  StatusOr<std::vector<float>> FloatValues(const Item& it) const;
  Status CheckFused() const;
  StatusOr<nlohmann::ordered_json> QuantizationConfig();
  Status WriteWeights(const fs::path& dir);
  Status WriteFiles(const fs::path& dir, const nlohmann::ordered_json& qc);

  const QuantizedModel& m_;
  const Raise& raise_;
  const GptqExportOptions& o_;
  std::unique_ptr<HfCheckpoint> hf_;
  std::map<std::string, QuantizedModel::TensorOut> by_gguf_;
  bool permutes_qk_ = false;
  std::vector<Item> items_;
  std::vector<SafetensorsEntry> entries_;
  std::vector<EntryOf> entry_of_;
  // The one Linear packed at a time (its four tensors are written one after the other), and
  // the one float tensor's bytes.
  std::optional<size_t> packed_item_;
  GptqLinear packed_;
  std::vector<uint8_t> float_bytes_;
  std::vector<uint8_t> read_;  // a spilled tensor read back from the work directory
  std::string prefix_;         // "model.layers."
  std::map<std::pair<int64_t, std::string>, ModuleScheme> modules_;
  GptqExportReport rep_;
};

Status FolderWriter::Plan() {
  FRUGAL_ASSIGN_OR_RETURN(hf_, HfCheckpoint::Open(o_.source_dir));
  FRUGAL_ASSIGN_OR_RETURN(const std::string arch, GgufArchForHf(hf_->config().model_type));
  permutes_qk_ = PermutesQk(arch);
  for (const QuantizedModel::TensorOut& t : m_.TensorsIn(raise_)) by_gguf_.emplace(*t.name, t);
  const HfConfig& cfg = hf_->config();
  const int64_t n_head_kv =
      cfg.num_key_value_heads > 0 ? cfg.num_key_value_heads : cfg.num_attention_heads;
  for (const TensorView* src : hf_->AllTensors()) {
    const std::string gguf = LlamaGgufTensorName(src->name);
    if (gguf.empty()) continue;  // rotary_emb.inv_freq: follows from the config
    const auto it = by_gguf_.find(gguf);
    if (it == by_gguf_.end()) return Internal(src->name + " (" + gguf + ") was not quantized");
    Item item;
    item.src = src;
    item.t = it->second;
    const bool is_q = gguf.find(".attn_q.") != std::string::npos,
               is_k = gguf.find(".attn_k.") != std::string::npos;
    if (permutes_qk_ && (is_q || is_k)) {
      const int64_t rows = item.t.ne->size() >= 2 ? (*item.t.ne)[1] : (*item.t.ne)[0];
      FRUGAL_ASSIGN_OR_RETURN(item.order,
                              QkRowOrder(rows, is_q ? cfg.num_attention_heads : n_head_kv));
    }
    item.quantized = IsFrugalType(item.t.type);
    items_.push_back(std::move(item));
    FRUGAL_RETURN_IF_ERROR(items_.back().quantized ? DescribeQuantized(items_.size() - 1)
                                                   : DescribeFloat(items_.size() - 1));
  }
  return Status::Ok();
}

Status FolderWriter::DescribeQuantized(size_t item) {
  const Item& it = items_[item];
  const TensorView& src = *it.src;
  const int64_t cols = (*it.t.ne)[0], rows = it.t.ne->size() >= 2 ? (*it.t.ne)[1] : 1;
  const std::optional<LayerModule> mod = ParseModule(src.name);
  if (!mod) {
    return InvalidArgument(src.name + " is quantized (" + TypeName(it.t.type) +
                           "), but --target vllm quantizes only the layers' Linears: keep it in "
                           "the recipe");
  }
  auto scheme = GptqSchemeOf(it.t.type);
  if (!scheme.ok()) return scheme.status().WithContext(src.name);
  const int64_t pack = 32 / scheme->bits, ng = cols / scheme->group;
  if (rows % pack != 0 || cols % pack != 0 || cols % scheme->group != 0) {
    return InvalidArgument(src.name + ": GPTQ packs " + std::to_string(pack) +
                           " values per int32: a [" + std::to_string(rows) + " x " +
                           std::to_string(cols) + "] matrix does not divide");
  }
  const std::string base = src.name.substr(0, src.name.size() - 7);  // less ".weight"
  const auto add = [&](int part, const std::string& suffix, const char* dtype,
                       std::vector<int64_t> shape, size_t elem) {
    size_t n = 1;
    for (const int64_t d : shape) n *= static_cast<size_t>(d);
    entries_.push_back({base + suffix, dtype, std::move(shape), n * elem});
    entry_of_.push_back({item, part});
  };
  add(0, ".qweight", "I32", {cols / pack, rows}, 4);
  add(1, ".qzeros", "I32", {ng, rows / pack}, 4);
  add(2, ".scales", "F16", {ng, rows}, 2);
  add(3, ".g_idx", "I32", {cols}, 4);
  if (prefix_.empty()) prefix_ = mod->prefix;
  modules_[{mod->layer, mod->kind}] = {*scheme, rows * cols};
  rep_.modules[base] = scheme->Name();
  ++rep_.formats[scheme->Name()];
  return Status::Ok();
}

// The float values of a tensor written as float, in the source's row order.
StatusOr<std::vector<float>> FolderWriter::FloatValues(const Item& it) const {
  int64_t n = 1;
  for (const int64_t d : *it.t.ne) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  const int64_t cols = it.t.ne->size() >= 2 ? (*it.t.ne)[0] : 1;
  std::vector<uint8_t> buf;
  FRUGAL_ASSIGN_OR_RETURN(const std::span<const uint8_t> data,
                          QuantizedModel::Read(*it.t.data, buf));
  DequantizeTensor(TensorView::Matrix(it.t.type, cols, n / cols, data.data(), data.size()),
                   v.data());
  return UnpermuteRows(v, it.order);
}

Status FolderWriter::DescribeFloat(size_t item) {
  Item& it = items_[item];
  const TensorView& src = *it.src;
  FRUGAL_ASSIGN_OR_RETURN(const std::string dtype, DtypeName(src.type));
  std::vector<int64_t> shape;
  for (int i = std::max(1, src.n_dims) - 1; i >= 0; --i) shape.push_back(src.ne[i]);
  int64_t n = 1;
  for (const int64_t d : *it.t.ne) n *= d;
  it.dtype = dtype;
  if (it.t.type != src.type) {
    // Changed by the method (AWQ's scales folded into a norm, or a recipe's float type): the
    // source's dtype only if it holds every value. Norms are small; this converts them once
    // more when they are written.
    FRUGAL_ASSIGN_OR_RETURN(const std::vector<float> v, FloatValues(it));
    if (!ToDtype(v, dtype)) {
      rep_.notes.push_back(src.name + ": written as F32 (the source's " + dtype +
                           " cannot hold the rescaled values)");
      it.dtype = "F32";
    }
  }
  entries_.push_back(
      {src.name, it.dtype, shape, static_cast<size_t>(n) * SafetensorsDtypeSize(it.dtype)});
  entry_of_.push_back({item, 0});
  if (const std::optional<LayerModule> mod = ParseModule(src.name); mod && it.t.ne->size() >= 2) {
    // A Linear of the layers left in float by the recipe.
    if (prefix_.empty()) prefix_ = mod->prefix;
    modules_[{mod->layer, mod->kind}] = {std::nullopt, n};
    rep_.modules[src.name.substr(0, src.name.size() - 7)] = "unquantized (" + dtype + ")";
  }
  return Status::Ok();
}

StatusOr<std::span<const uint8_t>> FolderWriter::BytesOf(size_t entry) {
  const EntryOf& e = entry_of_[entry];
  const Item& it = items_[e.item];
  const auto as_bytes = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                    v.size() * sizeof(v[0]));
  };
  if (it.quantized) {
    if (packed_item_ != e.item) {
      packed_item_.reset();
      packed_ = GptqLinear{};
      const int64_t cols = (*it.t.ne)[0], rows = it.t.ne->size() >= 2 ? (*it.t.ne)[1] : 1;
      const int64_t groups = GroupsPerRow(it.t.type, cols);
      std::vector<int8_t> q(static_cast<size_t>(rows * cols));
      std::vector<float> scale(static_cast<size_t>(rows * groups)), offset;
      if (IntKindOf(it.t.type) == IntKind::kInt4Asym) offset.resize(scale.size());
      FRUGAL_ASSIGN_OR_RETURN(const std::span<const uint8_t> data,
                              QuantizedModel::Read(*it.t.data, read_));
      FRUGAL_RETURN_IF_ERROR(UnpackRows(it.t.type, rows, cols, data.data(), q.data(), scale.data(),
                                        offset.empty() ? nullptr : offset.data()));
      q = UnpermuteRows(q, it.order);
      scale = UnpermuteRows(scale, it.order);
      offset = UnpermuteRows(offset, it.order);
      auto g = PackGptq(it.t.type, rows, cols, q.data(), scale.data(),
                        offset.empty() ? nullptr : offset.data());
      if (!g.ok()) return g.status().WithContext(it.src->name);
      packed_ = *std::move(g);
      packed_item_ = e.item;
    }
    switch (e.part) {
      case 0:
        return as_bytes(packed_.qweight);
      case 1:
        return as_bytes(packed_.qzeros);
      case 2:
        return as_bytes(packed_.scales);
      default:
        return as_bytes(packed_.g_idx);
    }
  }
  packed_item_.reset();
  packed_ = GptqLinear{};
  if (it.t.type == it.src->type) {  // as the source has it (Q/K rows back in its order)
    FRUGAL_ASSIGN_OR_RETURN(const std::span<const uint8_t> data,
                            QuantizedModel::Read(*it.t.data, read_));
    if (it.order.empty()) return data;
    float_bytes_ = UnpermuteRows(std::vector<uint8_t>(data.begin(), data.end()), it.order);
    return std::span<const uint8_t>(float_bytes_);
  }
  FRUGAL_ASSIGN_OR_RETURN(const std::vector<float> v, FloatValues(it));
  std::optional<std::vector<uint8_t>> bytes = ToDtype(v, it.dtype);
  if (!bytes) return Internal(it.src->name + ": not exact in " + it.dtype + " when written");
  float_bytes_ = std::move(*bytes);
  return std::span<const uint8_t>(float_bytes_);
}

Status FolderWriter::CheckFused() const {
  std::set<int64_t> layers;
  for (const auto& [key, ms] : modules_) layers.insert(key.first);
  for (const int64_t l : layers) {
    for (const auto& [fused, parts] : FusedModules()) {
      std::optional<std::optional<GptqScheme>> first;
      for (const std::string& p : parts) {
        const auto it = modules_.find({l, p});
        if (it == modules_.end()) continue;
        if (!first) {
          first = it->second.scheme;
        } else if (*first != it->second.scheme) {
          return InvalidArgument("layer " + std::to_string(l) + ": vLLM runs " + fused +
                                 " as one layer with one quantization, but its parts differ (" +
                                 (*first ? (*first)->Name() : "unquantized") + " and " +
                                 (it->second.scheme ? it->second.scheme->Name() : "unquantized") +
                                 "): give them the same rule");
        }
      }
    }
  }
  return Status::Ok();
}

StatusOr<nlohmann::ordered_json> FolderWriter::QuantizationConfig() {
  // The base scheme: the one that holds the most weights, among the asymmetric ones if there
  // are any (the mixed preset's FFN). vLLM chooses its kernels from the base fields alone: a
  // symmetric base sends the model to gptq_marlin, which has no asymmetric type and refuses an
  // asymmetric override, while an asymmetric base keeps every Linear on the gptq kernels,
  // which read the zero points of both kinds.
  std::map<GptqScheme, int64_t> weights;
  const bool any_asym = std::any_of(modules_.begin(), modules_.end(), [](const auto& kv) {
    return kv.second.scheme && !kv.second.scheme->sym;
  });
  for (const auto& [key, ms] : modules_) {
    if (ms.scheme && (!any_asym || !ms.scheme->sym)) weights[*ms.scheme] += ms.weights;
  }
  if (weights.empty()) {
    return InvalidArgument(
        "nothing is quantized: --target vllm writes GPTQ Linears (use an INT "
        "recipe, e.g. the default mixed-int4-int8)");
  }
  rep_.base = std::max_element(weights.begin(), weights.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
              })->first;
  const nlohmann::ordered_json dynamic =
      DynamicRules(prefix_, hf_->config().num_hidden_layers, modules_, rep_.base, rep_);
  nlohmann::ordered_json qc;
  qc["quant_method"] = "gptq";
  qc["bits"] = rep_.base.bits;
  qc["group_size"] = rep_.base.group;
  qc["desc_act"] = false;  // groups are contiguous; g_idx is i / group
  qc["sym"] = rep_.base.sym;
  qc["lm_head"] = false;
  qc["static_groups"] = false;
  qc["true_sequential"] = true;
  qc["damp_percent"] = o_.damp;
  qc["checkpoint_format"] = "gptq";  // v1: zero points stored minus one
  qc["pack_dtype"] = "int32";
  if (!dynamic.empty()) qc["dynamic"] = dynamic;
  qc["meta"] = {{"quantizer", {"frugal"}}, {"method", o_.method}, {"scale_fit", o_.scale_fit}};
  return qc;
}

// model.safetensors when everything fits in one shard (as transformers writes it); otherwise
// model-0000N-of-0000M.safetensors and model.safetensors.index.json.
Status FolderWriter::WriteWeights(const fs::path& dir) {
  const std::vector<std::vector<size_t>> shards = PlanShards(entries_, o_.shard_bytes);
  const SafetensorsBytes bytes = [this](size_t i) { return BytesOf(i); };
  std::error_code ec;
  rep_.safetensors_bytes = 0;
  rep_.shards = shards.size();
  for (size_t s = 0; s < shards.size(); ++s) {
    const fs::path file = dir / (shards.size() == 1 ? std::string("model.safetensors")
                                                    : ShardFileName(s, shards.size()));
    FRUGAL_RETURN_IF_ERROR(WriteSafetensorsStreamed(file.string(), entries_, shards[s], bytes));
    rep_.safetensors_bytes += static_cast<size_t>(fs::file_size(file, ec));
  }
  packed_item_.reset();
  packed_ = GptqLinear{};
  std::vector<uint8_t>().swap(float_bytes_);
  std::vector<uint8_t>().swap(read_);
  if (shards.size() > 1)
    FRUGAL_RETURN_IF_ERROR(
        WriteFile(dir / "model.safetensors.index.json", ShardIndexJson(entries_, shards)));
  return Status::Ok();
}

Status FolderWriter::WriteFiles(const fs::path& dir, const nlohmann::ordered_json& qc) {
  FRUGAL_RETURN_IF_ERROR(WriteWeights(dir));
  std::error_code ec;
  const fs::path src(o_.source_dir);
  FRUGAL_ASSIGN_OR_RETURN(const std::string config_text, ReadFile(src / "config.json"));
  nlohmann::ordered_json config =
      nlohmann::ordered_json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object())
    return InvalidArgument(o_.source_dir + "/config.json is not a JSON object");
  config["quantization_config"] = qc;
  // GPTQ's kernels compute in fp16 (vLLM's gptq method supports no other activation type).
  if (config.contains("dtype")) config["dtype"] = "float16";
  config["torch_dtype"] = "float16";
  FRUGAL_RETURN_IF_ERROR(WriteFile(dir / "config.json", config.dump(2) + "\n"));
  FRUGAL_RETURN_IF_ERROR(WriteFile(dir / "quantize_config.json", qc.dump(2) + "\n"));
  for (const fs::directory_entry& e : fs::directory_iterator(src, ec)) {
    if (!e.is_regular_file() || !CopiedUnchanged(e.path())) continue;
    fs::copy_file(e.path(), dir / e.path().filename(), ec);
    if (ec) return IoError("cannot copy " + e.path().string() + ": " + ec.message());
  }
  if (ec) return IoError("cannot list " + o_.source_dir + ": " + ec.message());
  return Status::Ok();
}

StatusOr<GptqExportReport> FolderWriter::Run() {
  if (o_.shard_bytes == 0) return InvalidArgument("--shard-size must be more than 0 bytes");
  FRUGAL_RETURN_IF_ERROR(Plan());
  FRUGAL_RETURN_IF_ERROR(CheckFused());
  FRUGAL_ASSIGN_OR_RETURN(const nlohmann::ordered_json qc, QuantizationConfig());
  rep_.quantization_config = qc.dump();

  const fs::path out(o_.output_dir), tmp(o_.output_dir + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) return IoError("cannot create " + tmp.string());
  Status written = WriteFiles(tmp, qc);
  // Every file and the folder on disk before the folder takes its name, and the name after
  // (common/durable.h): the shards already are; config and tokenizer files are synced here.
  for (const auto& e : fs::directory_iterator(tmp, ec)) {
    if (!written.ok()) break;
    if (e.is_regular_file()) written = SyncPath(e.path().string());
  }
  if (written.ok()) written = SyncPath(tmp.string());
  if (!written.ok()) {
    fs::remove_all(tmp, ec);
    return written;
  }
  if (fs::exists(out, ec)) fs::remove(out, ec);  // an empty folder (CheckGptqOutputDir)
  fs::rename(tmp, out, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    return IoError("cannot rename " + tmp.string() + " to " + out.string());
  }
  FRUGAL_RETURN_IF_ERROR(SyncParentDirectory(out.string()));
  return rep_;
}

}  // namespace

StatusOr<GptqExportReport> WriteGptqFolder(const QuantizedModel& m, const Raise& raise,
                                           const GptqExportOptions& o) {
  FolderWriter w(m, raise, o);
  return w.Run();
}

}  // namespace frugal
