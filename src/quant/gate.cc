#include "quant/gate.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace frugal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool MetricFromName(std::string_view name, GateMetric* m) {
  struct Name {
    const char* name;
    GateMetric metric;
  };
  static const Name kNames[] = {
      {"ppl", GateMetric::kPpl},          {"kld", GateMetric::kKldMean},
      {"kld_mean", GateMetric::kKldMean}, {"kld_p99", GateMetric::kKldP99},
      {"top1", GateMetric::kTop1},        {"top1_agreement", GateMetric::kTop1},
      {"numeric", GateMetric::kNumeric},  {"numeric_fidelity", GateMetric::kNumeric},
  };
  for (const Name& n : kNames) {
    if (name == n.name) {
      *m = n.metric;
      return true;
    }
  }
  return false;
}

// 'text' (built by appending: GCC 12 warns wrongly (-Wrestrict) on "'" + std::string(...)).
std::string Quoted(std::string_view text) {
  std::string q;
  q.reserve(text.size() + 2);
  q.push_back('\'');
  q.append(text);
  q.push_back('\'');
  return q;
}

Status ClauseError(std::string_view clause, const std::string& what) {
  return InvalidArgument("gate clause '" + std::string(clause) + "': " + what);
}

StatusOr<GateClause> ParseClause(std::string_view text) {
  GateClause c;
  c.text = std::string(text);
  // metric: letters, digits and '_' up to the comparator.
  size_t i = 0;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
    ++i;
  const std::string_view name = Trim(text.substr(0, i));
  if (name.empty())
    return ClauseError(text, "expected a metric (ppl, kld, kld_p99, top1, numeric) first");
  if (!MetricFromName(name, &c.metric)) {
    return ClauseError(text, "unknown metric '" + std::string(name) +
                                 "' (known: ppl, kld, kld_mean, kld_p99, top1, numeric)");
  }
  std::string_view rest = Trim(text.substr(i));
  if (rest.starts_with("<=")) {
    c.cmp = GateCmp::kLe;
    rest.remove_prefix(2);
  } else if (rest.starts_with(">=")) {
    c.cmp = GateCmp::kGe;
    rest.remove_prefix(2);
  } else if (rest.starts_with("<")) {
    c.cmp = GateCmp::kLt;
    rest.remove_prefix(1);
  } else if (rest.starts_with(">")) {
    c.cmp = GateCmp::kGt;
    rest.remove_prefix(1);
  } else {
    return ClauseError(text,
                       "expected a comparator (<, <=, >, >=) after '" + std::string(name) + "'");
  }
  rest = Trim(rest);
  if (rest.starts_with("+")) {
    if (c.metric != GateMetric::kPpl) {
      return ClauseError(text, "'+' (over the reference) applies to ppl only; give " +
                                   std::string(GateMetricName(c.metric)) + " an absolute value");
    }
    c.kind = GateValueKind::kDelta;
    rest = Trim(rest.substr(1));
  }
  if (rest.ends_with("%")) {
    if (c.kind != GateValueKind::kDelta) {
      return ClauseError(
          text,
          c.metric == GateMetric::kPpl
              ? "a percentage is relative to ppl_ref: write it with '+', e.g. ppl<+3%"
              : "'%' applies to ppl only (as ppl<+3%); shares are written 0..1, e.g. top1>=0.9");
    }
    c.kind = GateValueKind::kPercent;
    rest = Trim(rest.substr(0, rest.size() - 1));
  }
  if (rest.empty()) return ClauseError(text, "expected a number after the comparator");
  const char* b = rest.data();
  const char* e = rest.data() + rest.size();
  auto [p, ec] = std::from_chars(b, e, c.value, std::chars_format::general);
  if (ec != std::errc() || p != e || rest.front() == '-' || rest.front() == '+') {
    return ClauseError(text, Quoted(rest) + " is not a non-negative number");
  }
  if (!std::isfinite(c.value) || c.value < 0) {
    return ClauseError(text, Quoted(rest) + " is not a finite non-negative number");
  }
  if ((c.metric == GateMetric::kTop1 || c.metric == GateMetric::kNumeric) && c.value > 1) {
    return ClauseError(text, std::string(GateMetricName(c.metric)) + " is a share in [0, 1]");
  }
  return c;
}

bool Compare(double measured, GateCmp cmp, double limit) {
  switch (cmp) {
    case GateCmp::kLt:
      return measured < limit;
    case GateCmp::kLe:
      return measured <= limit;
    case GateCmp::kGt:
      return measured > limit;
    case GateCmp::kGe:
      return measured >= limit;
  }
  return false;
}

std::string Num(double v, const char* fmt = "%.6g") {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

const char* GateMetricName(GateMetric m) {
  switch (m) {
    case GateMetric::kPpl:
      return "ppl";
    case GateMetric::kKldMean:
      return "kld_mean";
    case GateMetric::kKldP99:
      return "kld_p99";
    case GateMetric::kTop1:
      return "top1";
    case GateMetric::kNumeric:
      return "numeric";
  }
  return "?";
}

const char* GateCmpText(GateCmp c) {
  switch (c) {
    case GateCmp::kLt:
      return "<";
    case GateCmp::kLe:
      return "<=";
    case GateCmp::kGt:
      return ">";
    case GateCmp::kGe:
      return ">=";
  }
  return "?";
}

bool Gate::uses_numeric() const {
  for (const auto& c : clauses) {
    if (c.metric == GateMetric::kNumeric) return true;
  }
  return false;
}

StatusOr<Gate> ParseGate(std::string_view spec) {
  Gate g;
  g.spec = std::string(spec);
  if (Trim(spec).empty())
    return InvalidArgument("the gate is empty (expected e.g. ppl<+3%,kld<0.05,numeric>=0.98)");
  size_t start = 0;
  int index = 0;
  for (;;) {
    const size_t comma = spec.find(',', start);
    const std::string_view part = Trim(spec.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    ++index;
    if (part.empty()) {
      return InvalidArgument("gate '" + std::string(spec) + "': clause " + std::to_string(index) +
                             " is empty (clauses are separated by single commas)");
    }
    FRUGAL_ASSIGN_OR_RETURN(GateClause c, ParseClause(part));
    g.clauses.push_back(std::move(c));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return g;
}

std::vector<GateFailure> CheckGate(const EvalReport& r, const Gate& gate) {
  std::vector<GateFailure> out;
  for (const GateClause& c : gate.clauses) {
    double measured = 0;
    std::string what;  // the measurement in words
    switch (c.metric) {
      case GateMetric::kPpl:
        if (c.kind == GateValueKind::kAbsolute) {
          measured = r.ppl;
          what = "ppl " + Num(r.ppl, "%.4f");
        } else if (c.kind == GateValueKind::kDelta) {
          measured = r.ppl - r.ppl_ref;
          what = "ppl " + Num(r.ppl, "%.4f") + " is " + Num(measured, "%+.4f") + " over ppl_ref " +
                 Num(r.ppl_ref, "%.4f");
        } else {
          measured = r.ppl_ref > 0 ? 100.0 * (r.ppl / r.ppl_ref - 1.0) : std::nan("");
          what = "ppl " + Num(r.ppl, "%.4f") + " is " + Num(measured, "%+.3f") + "% over ppl_ref " +
                 Num(r.ppl_ref, "%.4f");
        }
        break;
      case GateMetric::kKldMean:
        measured = r.kld_mean;
        what = "kld_mean " + Num(measured);
        break;
      case GateMetric::kKldP99:
        measured = r.kld_p99;
        what = "kld_p99 " + Num(measured);
        break;
      case GateMetric::kTop1:
        measured = r.top1_agreement;
        what = "top1 " + Num(measured, "%.4f");
        break;
      case GateMetric::kNumeric:
        measured = r.numeric_fidelity;
        what = std::isnan(measured)
                   ? std::string("numeric n/a (no probes)")
                   : "numeric " + Num(measured, "%.4f") + " (" + std::to_string(r.probes_matched) +
                         "/" + std::to_string(r.probes) + ")";
        break;
    }
    if (!std::isnan(measured) && Compare(measured, c.cmp, c.value)) continue;
    GateFailure f;
    f.clause = c;
    f.measured = measured;
    f.message = c.text + ": " + what;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace frugal
