// Inside QuantizeModel (quantizer.cc): what its layer stages share, and the quantization methods
// behind one interface (QuantMethodImpl: RTN, GPTQ, and AWQ around either). Internal to quant/:
// nothing outside quantizer.cc and quant_method.cc includes it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_pool.h"
#include "frugal/engine.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "quant/hf_export.h"
#include "quant/quant_format.h"
#include "quant/quantizer.h"
#include "quant/recipe.h"

namespace frugal::quant_internal {

using LinearInput = LlamaModel::LinearInput;

// What a layer's calibration pass learns about one matrix input.
struct InputStats {
  int64_t cols = 0;
  std::vector<float> h;         // sum of x x^T (GPTQ only)
  std::vector<double> abs_sum;  // sum of |x| per channel
  std::vector<float> sample;    // up to sample_tokens inputs, [n][cols]
  int64_t sampled = 0;
  int64_t tokens = 0;
  // GPTQ's factor of h, made by the first matrix on this input and reused by the others (a
  // cache: h must not change while it is set; ScaleInput clears it).
  mutable std::shared_ptr<const GptqFactor> gptq_factor;

  std::vector<double> MeanAbs() const {
    std::vector<double> m(abs_sum.size());
    for (size_t c = 0; c < m.size(); ++c)
      m[c] = abs_sum[c] / static_cast<double>(std::max<int64_t>(1, tokens));
    return m;
  }
};

// The model being quantized: its tensors under GGUF names, and the float model that runs the
// calibration (its matrices are replaced by their quantized forms, layer by layer).
struct Source {
  std::unique_ptr<Engine> engine;
  std::vector<NamedTensor> tensors;  // in the source's order
  std::map<std::string, const TensorView*> by_name;
  std::string out_arch;  // a Hugging Face source: the GGUF architecture it is written as
  std::unique_ptr<LlamaModel> model;

  const ModelSource& src() const { return engine->source(); }
  const LlamaHParams& hp() const { return model->hparams(); }
};

// Each tensor's type: the recipe's choice, unless --force names the tensor.
using TypePlan = std::map<std::string, TensorChoice>;

class QkOrders;  // quantizer.cc: Q/K row orders of a Hugging Face source written as arch llama

// What every layer stage reads.
struct LayerContext {
  const QuantizeOptions& o;
  Source& source;
  const TypePlan& plan;
  const QkOrders& qk;
  ThreadPool& pool;
};

// One layer while it is quantized: its matrices' float weights (AWQ rescales them), what the
// calibration saw of their inputs, and what AWQ did.
struct LayerState {
  int64_t index = 0;
  std::string prefix;  // "blk.N."
  std::map<std::string, std::vector<float>> w;
  std::map<LinearInput, InputStats> stats;
  std::map<std::string, double> alpha;  // the AWQ exponent of each matrix's group
  std::set<std::string> modified;       // matrices whose float weights AWQ rescaled

  std::string NameOf(std::string_view m) const { return prefix + std::string(m) + ".weight"; }
};

// The format of a matrix of `type` with rows of `cols` inputs, on the options' grid.
StatusOr<QuantFormat> FormatFor(const QuantizeOptions& o, TensorType type, int64_t cols);
int64_t RowsOf(const LayerContext& c, const LayerState& l, std::string_view m);
// The format matrix m is quantized to; nullopt when it is kept in float.
std::optional<QuantFormat> FormatOf(const LayerContext& c, const LayerState& l, const char* m);

// How a matrix is quantized, and what a layer needs before it is: the method interface.
class QuantMethodImpl {
 public:
  virtual ~QuantMethodImpl() = default;
  // Whether the method runs the model over calibration data, and needs the inputs' Hessians.
  virtual bool calibrated() const = 0;
  virtual bool needs_hessian() const = 0;
  // Changes the layer's float weights before its matrices are quantized (AWQ's scales).
  virtual Status PrepareLayer(const LayerContext&, LayerState&) const { return Status::Ok(); }
  // Matrix w [rows][cols] in format f; `in` is what calibration saw of its inputs (null
  // without calibration).
  virtual StatusOr<QuantizedMatrix> Quantize(const QuantFormat& f, const float* w, int64_t rows,
                                             int64_t cols, const InputStats* in,
                                             ThreadPool& pool) const = 0;
};

// RTN, GPTQ, AWQ (RTN inside) or AWQ+GPTQ, as the options say; their scale fit is o.fit.
// The run's plan (quant_plan.cc): memory by parts from the shapes, time from short probes.
QuantPlan EstimatePlan(const LayerContext& c, const QuantMethodImpl& method, int64_t calib_tokens,
                       int64_t windows);
// /proc/meminfo's MemAvailable in bytes, or FRUGAL_MEM_AVAILABLE (bytes) when set: to plan for
// a smaller machine, and for tests; 0 when unknown.
size_t MemAvailableBytes();

std::unique_ptr<QuantMethodImpl> MakeQuantMethod(const QuantizeOptions& o);

}  // namespace frugal::quant_internal
