// QuantizedModel (the quantized tensors, their reports, raises and sizes, and the GGUF file it
// writes) and the names of methods and targets; QuantizeModel, which makes one, is quantizer.cc.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "quant/gguf_grid.h"
#include "quant/quantizer.h"

namespace frugal {

StatusOr<QuantTarget> ParseQuantTarget(std::string_view name) {
  if (name == "frugal") return QuantTarget::kFrugal;
  if (name == "llama.cpp") return QuantTarget::kLlamaCpp;
  if (name == "vllm") return QuantTarget::kVllm;
  return InvalidArgument("unknown target '" + std::string(name) + "' (frugal | llama.cpp | vllm)");
}

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

StatusOr<std::span<const uint8_t>> QuantizedModel::Read(const Blob& b, std::vector<uint8_t>& buf) {
  if (b.file.empty()) return std::span<const uint8_t>(b.bytes);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(b.file.c_str(), "rb"), &std::fclose);
  if (!f) return IoError("cannot read " + b.file + ": " + std::strerror(errno));
  buf.resize(static_cast<size_t>(b.size));
  if (::fseeko(f.get(), static_cast<off_t>(b.offset), SEEK_SET) != 0 ||
      std::fread(buf.data(), 1, buf.size(), f.get()) != buf.size()) {
    return DataLoss("cannot read " + std::to_string(b.size) + " bytes at " +
                    std::to_string(b.offset) + " of " + b.file + " (the work directory changed?)");
  }
  return std::span<const uint8_t>(buf);
}

const QuantizedModel::Blob& QuantizedModel::Tensor::DataIn(const Raise& raise) const {
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
  out.reserve(c.size());
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
    s.bytes += t.DataIn(raise).Size();
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
    f.data.bytes.resize(hp.rope_freq_factors.size() * sizeof(float));
    std::memcpy(f.data.bytes.data(), hp.rope_freq_factors.data(), f.data.bytes.size());
    TensorReport r;
    r.name = f.name;
    r.source = TensorType::kF32;
    r.type = TensorType::kF32;
    r.elements = f.ne[0];
    r.bytes = f.data.Size();
    r.note = "from config.json rope_scaling";
    reports_.push_back(r);
    out_.push_back(std::move(f));
  }
  return Status::Ok();
}

std::vector<QuantizedModel::TensorOut> QuantizedModel::TensorsIn(const Raise& raise) const {
  std::vector<TensorOut> out;
  out.reserve(out_.size());
  for (const Tensor& t : out_) {
    const Blob& data = t.DataIn(raise);
    out.push_back({&t.name, &data == &t.data ? t.type : raise.at(t.name), &t.ne, &data});
  }
  return out;
}

Status QuantizedModel::Write(const std::string& path, const Raise& raise,
                             QuantTarget target) const {
  if (target == QuantTarget::kVllm)
    return InvalidArgument("--target vllm writes a Hugging Face folder (WriteGptqFolder)");
  // The header first (metadata and every tensor's name, type and shape), then each tensor's
  // bytes as the file reaches it: the quantized model's own buffers, or for llama.cpp one
  // tensor's GGUF blocks at a time. No second copy of the model is made.
  GgufWriter w = metadata_;
  std::vector<std::string> to_int8, to_g32;
  std::vector<TensorType> written_as(out_.size());
  bool frugal_types = false;
  for (size_t i = 0; i < out_.size(); ++i) {
    const Tensor& t = out_[i];
    const Blob& data = t.DataIn(raise);
    const TensorType type = &data == &t.data ? t.type : raise.at(t.name);
    if (type != t.type) (GetTypeInfo(type)->bits == 8 ? to_int8 : to_g32).push_back(t.name);
    written_as[i] = type;
    if (target == QuantTarget::kLlamaCpp && IsFrugalType(type)) {
      const std::optional<TensorType> gguf = GgufEquivalent(type);
      if (!gguf) {
        return InvalidArgument("tensor " + t.name + " is " + TypeName(type) +
                               ", which llama.cpp cannot read: --target llama.cpp needs groups of "
                               "32 (INT8 -> Q8_0, INT4 -> Q4_0 / Q4_1)");
      }
      FRUGAL_RETURN_IF_ERROR(w.AddTensorInfo(t.name, *gguf, t.ne));
      continue;
    }
    frugal_types |= IsFrugalType(type);
    FRUGAL_RETURN_IF_ERROR(w.AddTensorInfo(t.name, type, t.ne));
  }
  if (target == QuantTarget::kLlamaCpp) {
    // No Frugal type in the file, so no Frugal format version either; llama.cpp's file type
    // names the 4-bit type where there is one (llama_ftype: 2 Q4_0, 3 Q4_1, 7 Q8_0), and the
    // quantization version is ggml's current one, as llama-quantize writes them.
    if (!frugal_types) w.Remove(kFrugalFormatVersionKey);
    std::set<TensorType> written;
    for (const TensorType type : written_as) {
      if (const std::optional<TensorType> g = GgufEquivalent(type)) written.insert(*g);
      if (IsGgufGrid(type)) written.insert(type);
    }
    if (written.count(TensorType::kQ4_K) != 0) {
      w.SetUint32("general.file_type", 15);  // Q4_K_M
    } else if (written.count(TensorType::kQ5_K) != 0) {
      w.SetUint32("general.file_type", 17);  // Q5_K_M
    } else if (written.count(TensorType::kQ6_K) != 0) {
      w.SetUint32("general.file_type", 18);
    } else if (written.count(TensorType::kQ5_1) != 0) {
      w.SetUint32("general.file_type", 9);
    } else if (written.count(TensorType::kQ5_0) != 0) {
      w.SetUint32("general.file_type", 8);
    } else if (written.count(TensorType::kQ4_1) != 0) {
      w.SetUint32("general.file_type", 3);
    } else if (written.count(TensorType::kQ4_0) != 0) {
      w.SetUint32("general.file_type", 2);
    } else if (written.count(TensorType::kQ8_0) != 0) {
      w.SetUint32("general.file_type", 7);
    }
    w.SetUint32("general.quantization_version", 2);
  }
  if (!to_int8.empty()) w.SetStringArray("frugal.quant.raised_to_int8", to_int8);
  if (!to_g32.empty()) w.SetStringArray("frugal.quant.regrouped_to_g32", to_g32);
  // One tensor at a time: read back from the work directory when spilled, converted for
  // llama.cpp when asked.
  std::vector<uint8_t> read, blocks;
  return w.WriteStreamed(path, [&](size_t i) -> StatusOr<std::span<const uint8_t>> {
    const Tensor& t = out_[i];
    FRUGAL_ASSIGN_OR_RETURN(const std::span<const uint8_t> data, Read(t.DataIn(raise), read));
    const TensorType type = written_as[i];
    if (target != QuantTarget::kLlamaCpp || !IsFrugalType(type)) return data;
    const int64_t rows = static_cast<int64_t>(data.size() / *RowBytes(type, t.ne[0]));
    blocks.assign(data.size(), 0);
    UnpackToGguf(TensorView::Matrix(type, t.ne[0], rows, data.data(), data.size()), blocks.data());
    return std::span<const uint8_t>(blocks);
  });
}

}  // namespace frugal
