// The gated search of `frugal quantize` (docs/quantization.md, "The gate" and "--auto-mixed"):
// write a candidate, validate it (quant/candidate_gate.h), and ship it only when the gate holds;
// with raise_until_pass, raise the most sensitive INT4 tensor left to INT8 after each failing
// candidate and try again, until the gate holds or the raises run out.
//
// The search sees the quantized model only through CandidateSource and the models' evaluation
// only through CandidateEvaluator, so its order, stop rule and file handling are tested without
// weights; QuantizedCandidates is the real source, on a QuantizedModel.
//
//   step 0: candidate with `initial` raises     -> pass: ship, stop
//   step k: + RaiseOrder()[k-1]                 -> fail: stop when !raise_until_pass,
//                                                  k >= max_raises or k >= RaiseOrder().size()
//
// The candidate file is left only as what Ship makes of it: a refused candidate is removed, and
// so is one whose evaluation failed.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frugal/status.h"
#include "quant/candidate_gate.h"
#include "quant/gptq_export.h"
#include "quant/quantizer.h"

namespace frugal {

// What the search makes candidates of: the quantized model. Not thread-safe.
class CandidateSource {
 public:
  virtual ~CandidateSource() = default;
  // The tensors the search may raise, in the order it raises them (most sensitive first), each
  // with the type it is raised to.
  virtual std::vector<std::pair<std::string, TensorType>> RaiseOrder() const = 0;
  // The tensor data's bytes under `raise`.
  virtual size_t Bytes(const Raise& raise) const = 0;
  // Writes the candidate file the evaluator reads (a GGUF) for `raise`.
  virtual Status WriteCandidate(const std::string& path, const Raise& raise) = 0;
  // Makes the output of a candidate the gate passed; the candidate file is gone afterwards
  // (moved into place, or removed), on success and on error.
  virtual Status Ship(const std::string& candidate, const Raise& raise) = 0;
};

// The real source: candidates written from a QuantizedModel, shipped as the target's output.
class QuantizedCandidates final : public CandidateSource {
 public:
  // A GGUF target (frugal, llama.cpp): candidates are the output file, renamed to `output`.
  static std::unique_ptr<QuantizedCandidates> ForGguf(const QuantizedModel& model,
                                                      QuantTarget target, std::string output);
  // --target vllm: candidates are Frugal GGUFs; shipping writes the GPTQ folder (export's
  // output_dir) and keeps the candidate as `keep_gguf`, or removes it when that is empty.
  static std::unique_ptr<QuantizedCandidates> ForVllm(const QuantizedModel& model,
                                                      GptqExportOptions export_options,
                                                      std::string keep_gguf);

  std::vector<std::pair<std::string, TensorType>> RaiseOrder() const override;
  size_t Bytes(const Raise& raise) const override;
  Status WriteCandidate(const std::string& path, const Raise& raise) override;
  Status Ship(const std::string& candidate, const Raise& raise) override;

  // --target vllm: what the folder holds, once shipped.
  const std::optional<GptqExportReport>& vllm_report() const { return vllm_report_; }

 private:
  explicit QuantizedCandidates(const QuantizedModel& model) : model_(model) {}

  const QuantizedModel& model_;
  QuantTarget target_ = QuantTarget::kFrugal;  // what WriteCandidate writes: never kVllm
  std::string output_;                         // GGUF targets
  std::optional<GptqExportOptions> vllm_;      // --target vllm
  std::string keep_gguf_;
  std::optional<GptqExportReport> vllm_report_;
};

// One candidate the search evaluated.
struct GateStep {
  std::vector<std::string> raised;  // the raised tensors' names, sorted
  size_t bytes = 0;                 // tensor data, CandidateSource::Bytes
  double ppl = 0, kld_mean = 0;
  bool passed = false;
};

struct GateSearchOptions {
  std::string candidate_path;     // where each candidate is written (required)
  bool raise_until_pass = false;  // --auto-mixed: raise one more tensor after a failing step
  int max_raises = 16;            // --auto-mixed-max: tensors raised at most
  EvalProgress progress;          // the evaluator's progress, passed on
  // After each candidate's evaluation, before the search decides whether to go on.
  std::function<void(const GateStep&, const GateVerdict&)> on_step;
};

struct GateSearchResult {
  GateVerdict verdict;  // the last candidate's
  Raise raised;         // the last candidate's raises (the shipped ones when it passed)
  std::vector<GateStep> steps;
  bool shipped() const { return verdict.passed(); }
};

// The search above, from `initial` raises (--max-size's, or none). A refused model is a result,
// not an error (shipped() false; nothing left behind); errors are the source's, the evaluator's
// or Ship's. A candidate that cannot be written is not removed (nothing was evaluated).
StatusOr<GateSearchResult> RunGateSearch(CandidateSource& source, CandidateEvaluator& evaluator,
                                         const Gate& gate, Raise initial,
                                         const GateSearchOptions& options);

}  // namespace frugal
