#include "quant/gate_search.h"

#include <algorithm>
#include <cstdio>

namespace frugal {

std::unique_ptr<QuantizedCandidates> QuantizedCandidates::ForGguf(const QuantizedModel& model,
                                                                  QuantTarget target,
                                                                  std::string output) {
  auto c = std::unique_ptr<QuantizedCandidates>(new QuantizedCandidates(model));
  c->target_ = target;
  c->output_ = std::move(output);
  return c;
}

std::unique_ptr<QuantizedCandidates> QuantizedCandidates::ForVllm(const QuantizedModel& model,
                                                                  GptqExportOptions export_options,
                                                                  std::string keep_gguf) {
  auto c = std::unique_ptr<QuantizedCandidates>(new QuantizedCandidates(model));
  c->target_ = QuantTarget::kFrugal;  // the gate evaluates the Frugal GGUF of the quantization
  c->vllm_ = std::move(export_options);
  c->keep_gguf_ = std::move(keep_gguf);
  return c;
}

std::vector<std::pair<std::string, TensorType>> QuantizedCandidates::RaiseOrder() const {
  return model_.RaiseCandidates();
}

size_t QuantizedCandidates::Bytes(const Raise& raise) const { return model_.Size(raise).bytes; }

Status QuantizedCandidates::WriteCandidate(const std::string& path, const Raise& raise) {
  return model_.Write(path, raise, target_);
}

Status QuantizedCandidates::Ship(const std::string& candidate, const Raise& raise) {
  if (!vllm_) {
    if (std::rename(candidate.c_str(), output_.c_str()) != 0) {
      std::remove(candidate.c_str());
      return IoError("cannot rename " + candidate + " to " + output_);
    }
    return Status::Ok();
  }
  // The folder from the quantization the gate passed; the candidate is its Frugal GGUF, kept
  // as keep_gguf when asked.
  const std::string gguf = keep_gguf_.empty() ? candidate : keep_gguf_;
  if (gguf != candidate && std::rename(candidate.c_str(), gguf.c_str()) != 0) {
    std::remove(candidate.c_str());
    return IoError("cannot rename " + candidate + " to " + gguf);
  }
  StatusOr<GptqExportReport> rep = WriteGptqFolder(model_, raise, *vllm_);
  if (!rep.ok() || gguf == candidate) std::remove(gguf.c_str());
  if (!rep.ok()) return rep.status();
  vllm_report_ = std::move(rep).value();
  return Status::Ok();
}

namespace {

std::vector<std::string> RaisedNames(const Raise& r) {
  std::vector<std::string> n;
  n.reserve(r.size());
  for (const auto& [name, type] : r) n.push_back(name);
  return n;
}

}  // namespace

StatusOr<GateSearchResult> RunGateSearch(CandidateSource& source, CandidateEvaluator& evaluator,
                                         const Gate& gate, Raise initial,
                                         const GateSearchOptions& options) {
  const std::string& candidate = options.candidate_path;
  if (candidate.empty()) return InvalidArgument("the gate's search needs a candidate path");
  const std::vector<std::pair<std::string, TensorType>> order = source.RaiseOrder();
  GateSearchResult r;
  r.raised = std::move(initial);
  for (size_t step = 0;; ++step) {
    FRUGAL_RETURN_IF_ERROR(source.WriteCandidate(candidate, r.raised));
    StatusOr<GateVerdict> v = ValidateCandidate(evaluator, candidate, gate, options.progress);
    if (!v.ok()) {
      std::remove(candidate.c_str());
      return v.status();
    }
    r.verdict = std::move(v).value();
    GateStep s;
    s.raised = RaisedNames(r.raised);
    s.bytes = source.Bytes(r.raised);
    s.ppl = r.verdict.report.ppl;
    s.kld_mean = r.verdict.report.kld_mean;
    s.passed = r.verdict.passed();
    r.steps.push_back(s);
    if (options.on_step) options.on_step(r.steps.back(), r.verdict);
    if (r.verdict.passed() || !options.raise_until_pass ||
        step >= static_cast<size_t>(std::max(0, options.max_raises)) || step >= order.size())
      break;
    r.raised.insert(order[step]);  // the most sensitive tensor left
  }
  if (!r.verdict.passed()) {
    std::remove(candidate.c_str());  // refused: nothing is left behind
    return r;
  }
  FRUGAL_RETURN_IF_ERROR(source.Ship(candidate, r.raised));
  return r;
}

}  // namespace frugal
