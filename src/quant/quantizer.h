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
#include <span>
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

// Who reads the output: Frugal (its tiled formats), stock llama.cpp (GGUF block types only), or
// vLLM / transformers (a Hugging Face folder in GPTQ's layout, src/quant/gptq_export.h; the
// quantization itself is Frugal's, INT4 asymmetric on integer zero points).
enum class QuantTarget { kFrugal, kLlamaCpp, kVllm };
StatusOr<QuantTarget> ParseQuantTarget(std::string_view name);
StatusOr<QuantMethod> ParseQuantMethod(std::string_view name);
const char* QuantMethodName(QuantMethod m);

struct QuantProgress {
  std::string stage;  // "calibration", "layer", "embeddings", "write"
  int64_t done = 0;   // layers done (and the embeddings as one more step)
  int64_t total = 0;
};

// What a run will cost, estimated before the long part (QuantizeOptions::on_plan; docs/
// quantization.md "The plan"). Memory is counted by parts, bytes; time from short probes of this
// machine's speed on the run's own kernels and thread count.
struct QuantPlan {
  int64_t layers = 0;
  int64_t layer_params = 0;      // one layer's matrix weights (the largest layer)
  int64_t calib_tokens = 0;      // after --max-memory
  int64_t windows = 0;           // calibration windows used
  int64_t windows_dropped = 0;   // by --max-memory
  size_t mapped_bytes = 0;       // every tensor of the source (mapped, read once)
  size_t source_bytes = 0;       // of those, resident at once: outside the layers + one layer
  size_t activation_bytes = 0;   // the calibration hidden states, kept between layers
  size_t layer_work_bytes = 0;   // one layer's own peak: its float weights, Hessians, GPTQ's
                                 // factor and working copy, at the worst moment
  size_t output_bytes = 0;       // the quantized model: held in memory until written, or
                                 // spilled to the work directory layer by layer
  bool output_spilled = false;   // QuantizeOptions::work_dir: the output costs no memory
  int64_t resumed_layers = 0;    // layers a checkpoint had finished (--resume)
  size_t layer_peak_bytes = 0;   // source + activations + layer work: what one layer needs
  size_t end_peak_bytes = 0;     // the whole run's estimate: one layer beside the output
                                 // (held once, or none of it when spilled; the write streams
                                 // it, tensor by tensor)
  size_t mem_available = 0;      // /proc/meminfo MemAvailable; 0 when unknown
  double blas_gflops = 0;        // probe: sgemm on the dense threads
  double matmul_gflops = 0;      // probe: the engine's kernel on layer 0's own ffn_up type
  double fit_ns_per_weight = 0;  // probe: the group-scale fit, on the pool
  double layer_seconds = 0;      // estimated, per layer
  double total_seconds = 0;      // estimated, the whole quantization (not the gate)
};

struct QuantizeOptions {
  std::string input;  // a GGUF file
  Recipe recipe;
  // Who reads the file (the reports name the types as it is written; QuantizedModel::Write
  // takes the target itself).
  QuantTarget target = QuantTarget::kFrugal;
  QuantMethod method = QuantMethod::kGptq;
  std::string calib_path;     // text or JSONL; needed by GPTQ and AWQ
  int64_t calib_samples = 0;  // windows of seq_len tokens; 0 = all of them (every document)
  int64_t seq_len = 256;
  int64_t sample_tokens = 512;  // inputs per layer kept for AWQ's search and the error measure
  // How INT4 group scales are chosen, by every method (GPTQ weighs the search by its Hessian's
  // diagonal); overrides gptq.fit and awq.fit.
  ScaleFit fit = ScaleFit::kSearch;
  // INT4 asymmetric groups on integer zero points (QuantFormat::integer_zero), as GPTQ
  // checkpoints store them (--target vllm); every method quantizes on that grid.
  bool integer_zero = false;
  GptqOptions gptq;
  AwqOptions awq;
  int threads = 0;
  // Per-tensor types that override the recipe.
  std::map<std::string, TensorType> force;
  // Also quantize every INT4 tensor in larger formats, so that tensors can be raised without
  // another calibration run (QuantizedModel::Write's `raise`): INT8 at the same group size, and
  // INT4 of the same kind with groups of 32 when its groups are larger.
  bool int8_alternatives = false;
  bool g32_alternatives = false;
  std::function<void(const QuantProgress&)> progress;
  // Called once, before the first layer, with the plan. A plan whose one layer does not fit in
  // MemAvailable fails the run (ResourceExhausted) right after.
  std::function<void(const QuantPlan&)> on_plan;
  // Caps the calibration hidden states (kept in memory between layers): windows are dropped,
  // evenly over the set, until the rest fit; 0 = no cap. InvalidArgument when not one fits.
  size_t max_activation_bytes = 0;
  // The run's work directory (src/quant/work_dir.h; "" = none: everything stays in memory).
  // Each finished layer's tensors are spilled there, so the output costs no memory until it is
  // written (QuantizedModel reads them back as it writes), and with the calibration states
  // after the layer and a manifest of these options it is a checkpoint per layer. Left in place:
  // RemoveQuantizeWorkDir removes it once the output is written.
  std::string work_dir;
  // Continue from the last finished layer of the checkpoint in work_dir (InvalidArgument when
  // its manifest does not match these options); without it, a work_dir holding a checkpoint is
  // refused. No checkpoint there: the run starts at layer 0.
  bool resume = false;
};

// Tensors to write in one of their alternatives (TensorReport::alternatives) instead of the
// type they were quantized to: name -> the alternative's type.
using Raise = std::map<std::string, TensorType>;

struct TensorReport {
  std::string name;
  TensorType source = TensorType::kF32;
  TensorType type = TensorType::kF32;
  int64_t elements = 0;
  size_t bytes = 0;
  std::string note;       // e.g. a group size that had to shrink
  double rel_error = -1;  // ||(Wq - W) X||^2 / ||W X||^2 on sampled calibration inputs; -1 n/a
  double awq_alpha = -1;  // the AWQ exponent chosen for the group this matrix is in; -1 n/a
  struct Alternative {
    TensorType type = TensorType::kF32;
    size_t bytes = 0;
    double rel_error = -1;  // as rel_error above
  };
  std::vector<Alternative> alternatives;  // smallest first, each larger than `type`

  // The type and bytes the tensor is written with under `raise`.
  TensorType TypeIn(const Raise& raise) const;
  size_t BytesIn(const Raise& raise) const;
  const Alternative* FindAlternative(TensorType t) const;
  const Alternative* Int8Alternative() const;
};

struct SizeSummary {
  size_t bytes = 0;      // tensor data
  size_t f16_bytes = 0;  // the same parameters at 16 bits
  int64_t params = 0;
  double bits_per_weight() const {
    return params > 0 ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0;
  }
};

class QuantizedModel {
 public:
  const std::vector<TensorReport>& tensors() const { return reports_; }
  // INT4 tensors that have an INT8 alternative, largest relative output error first, each
  // with its INT8 type (what --auto-mixed raises, one at a time).
  std::vector<std::pair<std::string, TensorType>> RaiseCandidates() const;
  // Raises that keep the tensor data within max_bytes, chosen greedily: each step takes, among
  // every tensor's larger alternatives that still fit, the one that removes the most relative
  // output error per added byte, until none fits or none lowers the error.
  Raise RaiseWithin(size_t max_bytes) const;
  SizeSummary Size(const Raise& raise = {}) const;
  // Writes the GGUF file, with the tensors in `raise` in the alternative it names. For
  // QuantTarget::kLlamaCpp every Frugal tensor is written as the GGUF block type with exactly
  // its values (kernels/quantize.h GgufEquivalent: I8_G32 -> Q8_0, I4S_G32 -> Q4_0,
  // I4A_G32 -> Q4_1), so that stock llama.cpp loads the file; a tensor of another Frugal type
  // is refused (InvalidArgument).
  Status Write(const std::string& path, const Raise& raise = {},
               QuantTarget target = QuantTarget::kFrugal) const;
  // A tensor's bytes: in memory, or spilled to a file of the run's work directory
  // (QuantizeOptions::work_dir), read back when they are written.
  struct Blob {
    std::vector<uint8_t> bytes;  // in memory (file empty)
    std::string file;            // spilled: where
    uint64_t offset = 0, size = 0;
    size_t Size() const { return file.empty() ? bytes.size() : static_cast<size_t>(size); }
  };
  // The bytes of `b`: a view of its memory, or read from its file into `buf`.
  static StatusOr<std::span<const uint8_t>> Read(const Blob& b, std::vector<uint8_t>& buf);
  // The tensors as Write writes them for QuantTarget::kFrugal under `raise`, in the file's
  // order: GGUF name, type, shape (ne[0] contiguous) and bytes (Frugal's packed tiles for the
  // INT types; Q/K of a Hugging Face source of arch llama in llama.cpp's row order; Read them).
  // Views into this model.
  struct TensorOut {
    const std::string* name;
    TensorType type;
    const std::vector<int64_t>* ne;
    const Blob* data;
  };
  std::vector<TensorOut> TensorsIn(const Raise& raise = {}) const;

  int64_t calib_tokens() const { return calib_tokens_; }
  const std::string& calib_sha256() const { return calib_sha256_; }
  double seconds() const { return seconds_; }

 private:
  friend StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& options);
  // A Hugging Face source: Llama 3's rope frequency factors become the rope_freqs tensor.
  Status FinishHfExport(const LlamaHParams& hp);
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    Blob data;
    std::map<TensorType, Blob> alternatives;
    const Blob& DataIn(const Raise& raise) const;
  };
  GgufWriter metadata_;  // metadata only; tensors are added per Write
  std::vector<Tensor> out_;
  std::vector<TensorReport> reports_;
  int64_t calib_tokens_ = 0;
  std::string calib_sha256_;
  double seconds_ = 0;
};

StatusOr<std::unique_ptr<QuantizedModel>> QuantizeModel(const QuantizeOptions& options);

// Removes a work directory (QuantizeOptions::work_dir): only the files a work directory holds,
// then the directory itself when it is empty, unless keep_dir. Nothing when it does not exist.
Status RemoveQuantizeWorkDir(const std::string& dir, bool keep_dir = false);

// Fits options.recipe to options.target, after any --group-size override (group_size, 0 for
// none): QuantTarget::kLlamaCpp stores groups of 32 (Q8_0 / Q4_0 / Q4_1), so every INT rule gets
// them and another group_size or a per-row INT8 rule is refused; QuantTarget::kVllm needs a
// Hugging Face folder as options.input and rules a GPTQ checkpoint can hold (INT types with
// group scales), keeps the embeddings and output head as the source has them, and sets
// integer_zero. InvalidArgument naming the flag or rule otherwise (quant_target.cc).
Status ApplyQuantTarget(QuantizeOptions& options, int group_size);

// Calibration token sequences from a file: plain text, or JSONL with {"text": ...},
// {"prompt": ..., "answer": ...} or {"messages": [...]} per line (chat-rendered). The documents'
// tokens are concatenated and cut into windows of seq_len; up to `samples` windows spread evenly
// over the stream are returned, or with samples = 0 all of them (the last one shorter when the
// stream does not divide), so every document is used.
StatusOr<std::vector<std::vector<int32_t>>> LoadCalibration(Engine& engine, const std::string& path,
                                                            int64_t samples, int64_t seq_len);

}  // namespace frugal
