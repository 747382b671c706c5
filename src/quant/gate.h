// A quality gate over an EvalReport: `frugal eval --gate SPEC` and `frugal quantize --gate SPEC`.
//
// Grammar (whitespace around tokens is ignored; docs/eval.md):
//
//   gate    := clause ( "," clause )*
//   clause  := metric cmp value
//   metric  := "ppl" | "kld" | "kld_mean" | "kld_p99" | "top1" | "top1_agreement"
//            | "numeric" | "numeric_fidelity"            ("kld" is kld_mean)
//   cmp     := "<" | "<=" | ">" | ">="
//   value   := number                 absolute:  ppl<21.0  kld<0.05  top1>=0.9  numeric>=0.98
//            | "+" number             ppl only, delta over ppl_ref:    ppl<+0.5
//            | "+" number "%"         ppl only, percent over ppl_ref:  ppl<+3%
//   number  := decimal, optional exponent (0.05, 5e-2); finite and >= 0
//
// top1 and numeric are shares in [0, 1]. A clause passes when `measured cmp value` holds; a
// measurement that is NaN (numeric without probes) fails every clause on it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frugal/status.h"
#include "quant/eval.h"

namespace frugal {

enum class GateMetric { kPpl, kKldMean, kKldP99, kTop1, kNumeric };
enum class GateCmp { kLt, kLe, kGt, kGe };
enum class GateValueKind {
  kAbsolute,  // the metric itself
  kDelta,     // ppl - ppl_ref
  kPercent,   // 100 * (ppl / ppl_ref - 1)
};

struct GateClause {
  std::string text;  // the clause as written, trimmed
  GateMetric metric = GateMetric::kPpl;
  GateCmp cmp = GateCmp::kLt;
  GateValueKind kind = GateValueKind::kAbsolute;
  double value = 0;
};

// The gate `frugal quantize` applies when none is given (docs/quantization.md, "The default
// gate": what the default quantization of the shipped model passes on the shipped held-out data,
// with margin).
inline constexpr const char* kDefaultGate = "ppl<+10%,kld<0.10,numeric>=0.30";

struct Gate {
  std::string spec;
  std::vector<GateClause> clauses;
  bool uses_numeric() const;
};

// InvalidArgument naming the clause (and what is wrong with it) for anything off the grammar.
StatusOr<Gate> ParseGate(std::string_view spec);

struct GateFailure {
  GateClause clause;
  double measured = 0;  // in the clause's terms: ppl, its delta, or its percent; NaN if n/a
  std::string message;  // "ppl<+3%: ppl 17.40 is +3.41% over ppl_ref 16.83"
};

// The clauses that fail, in the gate's order; empty when the report passes.
std::vector<GateFailure> CheckGate(const EvalReport& report, const Gate& gate);

const char* GateMetricName(GateMetric m);  // "ppl", "kld_mean", "kld_p99", "top1", "numeric"
const char* GateCmpText(GateCmp c);        // "<", "<=", ">", ">="

}  // namespace frugal
