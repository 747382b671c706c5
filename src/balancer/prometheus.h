// A strict reader of the Prometheus text exposition format 0.0.4, what vLLM, SGLang, TGI and
// llama.cpp's server answer at /metrics (OpenMetrics' closing `# EOF` is accepted too). The load
// adapters (load_adapters.h) read engines' load from it.
//
// Accepted: `# HELP name text` and `# TYPE name counter|gauge|histogram|summary|untyped|unknown`
// (at most one each per name, TYPE before the name's first sample), other `#` lines as comments,
// blank lines, and samples `name{label="value",...} value [timestamp_ms]` with `\\`, `\"` and `\n`
// escaped in label values, values in Go's float syntax including NaN, +Inf and -Inf. Refused, as
// InvalidArgument naming the line: anything else, a label twice in one sample, one series (name
// and label set) twice, text after `# EOF`, and input over the limits below, so a hostile worker
// costs bounded memory and time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frugal/status.h"

namespace frugal::gateway {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };

struct PromLabel {
  std::string name, value;  // the value unescaped
};

struct PromSample {
  std::string name;  // as written: a histogram's are family_bucket, family_sum, family_count
  std::vector<PromLabel> labels;  // in the order written
  double value = 0;
  std::optional<int64_t> timestamp_ms;

  // The value of label `name`, or nullopt when the sample has none.
  std::optional<std::string_view> Label(std::string_view name) const;
};

// A label subset a lookup must match: every pair must be on the sample (other labels may be too).
using LabelMatch = std::vector<std::pair<std::string, std::string>>;

struct PromLimits {
  size_t max_bytes = 8u << 20;  // the whole text
  size_t max_line_bytes = 64u << 10;
  size_t max_samples = 100000;
  size_t max_labels = 64;  // per sample
};

// A histogram's totals over the label sets it was looked up with.
struct HistogramTotals {
  double sum = 0, count = 0;
};

// One parsed /metrics text.
class MetricSet {
 public:
  const std::vector<PromSample>& samples() const { return samples_; }

  // The family's declared TYPE (kUntyped when none was declared).
  MetricType TypeOf(std::string_view family) const;
  // The family's HELP text, unescaped, or nullopt.
  std::optional<std::string_view> HelpOf(std::string_view family) const;

  // Whether any sample is named `name` (and matches `match`).
  bool Has(std::string_view name, const LabelMatch& match = {}) const;
  // The value of the one sample named `name` that matches `match`; nullopt when none or several
  // do (several label sets need Sum or Mean).
  std::optional<double> Value(std::string_view name, const LabelMatch& match = {}) const;
  // The sum, or the mean, of all samples named `name` that match; nullopt when none does.
  std::optional<double> Sum(std::string_view name, const LabelMatch& match = {}) const;
  std::optional<double> Mean(std::string_view name, const LabelMatch& match = {}) const;
  // family_sum and family_count, each summed over the label sets that match; nullopt unless both
  // are present.
  std::optional<HistogramTotals> Histogram(std::string_view family,
                                           const LabelMatch& match = {}) const;

 private:
  friend StatusOr<MetricSet> ParsePrometheusText(std::string_view text, const PromLimits& limits);
  // Calls f(sample) for each sample named `name` that matches; returns how many.
  template <typename F>
  size_t ForEach(std::string_view name, const LabelMatch& match, F&& f) const;

  std::vector<PromSample> samples_;
  std::unordered_map<std::string, std::vector<size_t>> by_name_;  // sample name -> indices
  std::unordered_map<std::string, MetricType> types_;
  std::unordered_map<std::string, std::string> help_;
};

StatusOr<MetricSet> ParsePrometheusText(std::string_view text, const PromLimits& limits = {});

}  // namespace frugal::gateway
