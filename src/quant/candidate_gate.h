// The quality gate applied to one quantized candidate (`frugal quantize`, docs/quantization.md):
// score it against the source model and say whether the gate (quant/gate.h) holds, and if not,
// which clauses fail.
//
// The gate sees the models only through CandidateEvaluator, so its rules are tested without
// weights (tests/unit/quant_gate_search_test.cc); ReferenceEvaluator is the real one, on an
// EvalReference of the source model (quant/eval.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frugal/engine.h"
#include "frugal/status.h"
#include "quant/eval.h"
#include "quant/gate.h"

namespace frugal {

// What the gate measures a candidate file with. Not thread-safe: one gate run at a time.
class CandidateEvaluator {
 public:
  virtual ~CandidateEvaluator() = default;
  // The candidate scored on the held-out text only: perplexity, KL divergence, top-1 agreement
  // (numeric_fidelity NaN and probes 0, as EvaluateAgainst without probes).
  virtual StatusOr<EvalReport> ScoreText(const std::string& candidate,
                                         const EvalProgress& progress) = 0;
  // The numeric probes added to a report from ScoreText (the costly part: the reference's own
  // answers are made on the first call).
  virtual Status AddProbes(const std::string& candidate, EvalReport& report,
                           const EvalProgress& progress) = 0;
};

// The real evaluator: each candidate opened as an engine (float activations, as the reference)
// and compared with one EvalReference of the source model, built once. Not thread-safe
// (AddProbes answers the reference's probes on first use).
class ReferenceEvaluator final : public CandidateEvaluator {
 public:
  // Builds the reference (options.defer_probes is forced on: the probes are answered only when a
  // candidate passes on the text). Candidates run with options.engine's threads.
  static StatusOr<std::unique_ptr<ReferenceEvaluator>> Build(EvalReferenceOptions options);

  StatusOr<EvalReport> ScoreText(const std::string& candidate,
                                 const EvalProgress& progress) override;
  Status AddProbes(const std::string& candidate, EvalReport& report,
                   const EvalProgress& progress) override;

 private:
  ReferenceEvaluator(std::unique_ptr<EvalReference> ref, int threads);
  EngineOptions CandidateOptions(const std::string& candidate) const;

  std::unique_ptr<EvalReference> ref_;
  int threads_ = 0;
};

// One candidate's evaluation and the gate's verdict on it.
struct GateVerdict {
  EvalReport report;
  std::vector<GateFailure> failures;  // in the gate's order; empty when the candidate passes
  // The numeric clauses, as written, when they were not measured: the text failed first.
  std::vector<std::string> not_measured;
  bool passed() const { return failures.empty(); }
};

// The gate on one candidate: the held-out text first, then the numeric probes only when the text
// passes the gate's other clauses (and only when the gate has a numeric clause). Errors are the
// evaluator's.
StatusOr<GateVerdict> ValidateCandidate(CandidateEvaluator& evaluator, const std::string& candidate,
                                        const Gate& gate, const EvalProgress& progress = {});

}  // namespace frugal
