#include "quant/candidate_gate.h"

#include <utility>

namespace frugal {

StatusOr<std::unique_ptr<ReferenceEvaluator>> ReferenceEvaluator::Build(
    EvalReferenceOptions options) {
  options.defer_probes = true;  // answered only if a candidate passes on the text
  const int threads = options.engine.threads;
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<EvalReference> ref, EvalReference::Build(options));
  return std::unique_ptr<ReferenceEvaluator>(new ReferenceEvaluator(std::move(ref), threads));
}

ReferenceEvaluator::ReferenceEvaluator(std::unique_ptr<EvalReference> ref, int threads)
    : ref_(std::move(ref)), threads_(threads) {}

EngineOptions ReferenceEvaluator::CandidateOptions(const std::string& candidate) const {
  EngineOptions eo;
  eo.model_path = candidate;
  eo.threads = threads_;
  // As the reference (EvalReferenceOptions): the weights alone are measured.
  eo.int8_activations = false;
  eo.kv_type = KvCacheType::kF32;
  return eo;
}

StatusOr<EvalReport> ReferenceEvaluator::ScoreText(const std::string& candidate,
                                                   const EvalProgress& progress) {
  return EvaluateAgainst(*ref_, CandidateOptions(candidate), progress, /*with_probes=*/false);
}

Status ReferenceEvaluator::AddProbes(const std::string& candidate, EvalReport& report,
                                     const EvalProgress& progress) {
  FRUGAL_RETURN_IF_ERROR(ref_->AnswerProbes(progress));  // once, for the first candidate
  return frugal::AddProbes(report, *ref_, CandidateOptions(candidate), progress);
}

StatusOr<GateVerdict> ValidateCandidate(CandidateEvaluator& evaluator, const std::string& candidate,
                                        const Gate& gate, const EvalProgress& progress) {
  GateVerdict v;
  FRUGAL_ASSIGN_OR_RETURN(v.report, evaluator.ScoreText(candidate, progress));
  Gate text_gate = gate;
  std::erase_if(text_gate.clauses,
                [](const GateClause& c) { return c.metric == GateMetric::kNumeric; });
  v.failures = CheckGate(v.report, text_gate);
  if (!gate.uses_numeric()) return v;
  if (!v.failures.empty()) {
    for (const GateClause& c : gate.clauses) {
      if (c.metric == GateMetric::kNumeric) v.not_measured.push_back(c.text);
    }
    return v;
  }
  FRUGAL_RETURN_IF_ERROR(evaluator.AddProbes(candidate, v.report, progress));
  v.failures = CheckGate(v.report, gate);
  return v;
}

}  // namespace frugal
