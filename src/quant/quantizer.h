// `frugal quantize`: turns a model into Frugal's INT8/INT4 formats by a recipe, with RTN, GPTQ,
// AWQ or AWQ then GPTQ.
//
// Calibrated methods run the model one layer at a time over the calibration tokens (kept as
// hidden states between layers, so memory stays near one layer's activations plus the
// calibration set's hidden states), watch the inputs of the layer's matrices, quantize the
// layer, and feed its quantized output to the next layer: each layer is calibrated on what the
// quantized layers before it really produce. Embeddings and the output head (INT8 in the
// presets) are quantized by RTN.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"
#include "frugal/engine.h"
#include "models/llama.h"
#include "quant/awq.h"
#include "quant/gptq.h"
#include "quant/recipe.h"

namespace frugal {

enum class QuantMethod { kRtn, kGptq, kAwq, kAwqGptq };
StatusOr<QuantMethod> ParseQuantMethod(std::string_view name);
const char* QuantMethodName(QuantMethod m);

struct QuantProgress {
  std::string stage;   // "calibration", "layer", "embeddings", "write"
  int64_t done = 0;    // layers done (and the embeddings as one more step)
  int64_t total = 0;
};

struct QuantizeOptions {
  std::string input;  // a GGUF file
  Recipe recipe;
  QuantMethod method = QuantMethod::kGptq;
  std::string calib_path;        // text or JSONL; needed by GPTQ and AWQ
  int64_t calib_samples = 32;    // sequences of seq_len tokens
  int64_t seq_len = 256;
  int64_t sample_tokens = 512;   // inputs per layer kept for AWQ's search and the error measure
  // How INT4 group scales are chosen, by every method (GPTQ weighs the search by its Hessian's
  // diagonal); overrides gptq.fit and awq.fit.
  ScaleFit fit = ScaleFit::kSearch;
  GptqOptions gptq;
  AwqOptions awq;
  int threads = 0;
  // Per-tensor types that override the recipe (auto-mixed raises tensors to INT8 this way).
  std::map<std::string, TensorType> force;
  // Also quantize every INT4 tensor to INT8 at the same group size, so that tensors can be
  // raised without another calibration run (QuantizedModel::Write's `raise`).
  bool int8_alternatives = false;
  std::function<void(const QuantProgress&)> progress;
};

struct TensorReport {
  std::string name;
  TensorType source = TensorType::kF32;
  TensorType type = TensorType::kF32;
  int64_t elements = 0;
  size_t bytes = 0;
  std::string note;          // e.g. a group size that had to shrink
  double rel_error = -1;     // ||(Wq - W) X||^2 / ||W X||^2 on sampled calibration inputs; -1 n/a
  double awq_alpha = -1;     // the AWQ exponent chosen for the group this matrix is in; -1 n/a
  bool has_int8_alternative = false;
  TensorType alt_type = TensorType::kF32;  // the INT8 alternative's type and bytes, when made
  size_t alt_bytes = 0;

  // The type and bytes the tensor is written with when `raise` names it.
  TensorType TypeIn(const std::set<std::string>& raise) const {
    return has_int8_alternative && raise.count(name) ? alt_type : type;
  }
  size_t BytesIn(const std::set<std::string>& raise) const {
    return has_int8_alternative && raise.count(name) ? alt_bytes : bytes;
  }
};

struct SizeSummary {
  size_t bytes = 0;       // tensor data
  size_t f16_bytes = 0;   // the same parameters at 16 bits
  int64_t params = 0;
  double bits_per_weight() const { return params > 0 ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0; }
};

class QuantizedModel {
 public:
  const std::vector<TensorReport>& tensors() const { return reports_; }
  // INT4 tensors that have an INT8 alternative, largest relative output error first.
  std::vector<std::string> RaiseCandidates() const;
  // The most sensitive INT4 tensors (RaiseCandidates' order) that can be raised to INT8 with
  // the tensor data staying within max_bytes: each in turn is raised if it still fits.
  std::set<std::string> RaiseWithin(size_t max_bytes) const;
  SizeSummary Size(const std::set<std::string>& raise = {}) const;
  // Writes the GGUF file, with the tensors in `raise` in their INT8 alternative.
  Status Write(const std::string& path, const std::set<std::string>& raise = {}) const;

  int64_t calib_tokens() const { return calib_tokens_; }
  const std::string& calib_sha256() const { return calib_sha256_; }
  double seconds() const { return seconds_; }

 private:
  friend StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& options);
  // The reports of the tensors with an INT8 alternative, largest relative output error first.
  std::vector<const TensorReport*> ByError() const;
  // A Hugging Face source: Llama 3's rope frequency factors become the rope_freqs tensor.
  Status FinishHfExport(const LlamaHParams& hp);
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
    TensorType alt_type = TensorType::kF32;
    std::vector<uint8_t> alt_data;  // INT8 alternative, when made
  };
  GgufWriter metadata_;   // metadata only; tensors are added per Write
  std::vector<Tensor> out_;
  std::vector<TensorReport> reports_;
  int64_t calib_tokens_ = 0;
  std::string calib_sha256_;
  double seconds_ = 0;
};

StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& options);

// Calibration token sequences from a file: plain text, or JSONL with {"text": ...},
// {"prompt": ..., "answer": ...} or {"messages": [...]} per line (chat-rendered). The documents'
// tokens are concatenated and cut into windows of seq_len; up to `samples` windows spread evenly
// over the stream are returned.
StatusOr<std::vector<std::vector<int32_t>>> LoadCalibration(Engine& engine, const std::string& path,
                                                            int64_t samples, int64_t seq_len);

}  // namespace frugal
