#include "balancer/prometheus.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace frugal::gateway {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

// A cursor over one line; every error names the line.
class LineReader {
 public:
  LineReader(std::string_view line, size_t number) : s_(line), number_(number) {}

  Status Error(std::string_view what) const {
    return InvalidArgument("metrics line " + std::to_string(number_) + ": " + std::string(what));
  }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }
  bool Consume(char c) {
    if (Peek() != c || AtEnd()) return false;
    ++pos_;
    return true;
  }
  // Skips blanks; returns whether there were any.
  bool SkipBlanks() {
    const size_t start = pos_;
    while (!AtEnd() && IsBlank(s_[pos_])) ++pos_;
    return pos_ > start;
  }
  // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, without colons, a label name.
  StatusOr<std::string_view> Name(bool colon) {
    const size_t start = pos_;
    if (AtEnd() || !IsNameStart(s_[pos_], colon))
      return Error(colon ? "expected a metric name" : "expected a label name");
    while (!AtEnd() && IsNameChar(s_[pos_], colon)) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // Characters up to the next blank or the end.
  std::string_view Token() {
    const size_t start = pos_;
    while (!AtEnd() && !IsBlank(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string_view Rest() {
    std::string_view r = s_.substr(std::min(pos_, s_.size()));
    pos_ = s_.size();
    return r;
  }
  // A quoted label value after its opening quote, unescaping \\, \" and \n.
  StatusOr<std::string> QuotedValue() {
    std::string out;
    while (!AtEnd()) {
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (AtEnd()) break;
      const char e = s_[pos_++];
      if (e == '\\' || e == '"') {
        out.push_back(e);
      } else if (e == 'n') {
        out.push_back('\n');
      } else {
        return Error("invalid escape in a label value (only \\\\, \\\" and \\n)");
      }
    }
    return Error("unterminated label value");
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  size_t number_;
};

// Go's float syntax as Prometheus writes it: decimal or exponent form, NaN, +Inf, -Inf (and Inf).
std::optional<double> ParseValue(std::string_view t) {
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "+Inf" || t == "Inf") return std::numeric_limits<double>::infinity();
  if (t == "-Inf") return -std::numeric_limits<double>::infinity();
  if (t.empty()) return std::nullopt;
  for (char c : t) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
      return std::nullopt;
  }
  if (t[0] == '+') {
    t.remove_prefix(1);
    if (t.empty() || t[0] == '-' || t[0] == '+') return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseTimestamp(std::string_view t) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<MetricType> ParseType(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "untyped" || t == "unknown") return MetricType::kUntyped;
  return std::nullopt;
}

// HELP text: \\ and \n are the only escapes.
std::optional<std::string> UnescapeHelp(std::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '\\') {
      out.push_back(t[i]);
      continue;
    }
    if (++i == t.size()) return std::nullopt;
    if (t[i] == '\\') {
      out.push_back('\\');
    } else if (t[i] == 'n') {
      out.push_back('\n');
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// name, then the labels sorted by name: one key per series.
std::string SeriesKey(const PromSample& s) {
  std::vector<const PromLabel*> sorted;
  sorted.reserve(s.labels.size());
  for (const auto& l : s.labels) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(),
            [](const PromLabel* a, const PromLabel* b) { return a->name < b->name; });
  std::string key = s.name;
  for (const PromLabel* l : sorted) {
    key.push_back('\0');
    key += l->name;
    key.push_back('\0');
    key += l->value;
  }
  return key;
}

}  // namespace

std::optional<std::string_view> PromSample::Label(std::string_view n) const {
  for (const auto& l : labels) {
    if (l.name == n) return std::string_view(l.value);
  }
  return std::nullopt;
}

StatusOr<MetricSet> ParsePrometheusText(std::string_view text, const PromLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return InvalidArgument("metrics text is " + std::to_string(text.size()) +
                           " bytes, over the limit of " + std::to_string(limits.max_bytes));
  }
  MetricSet set;
  std::unordered_set<std::string> series;
  bool eof = false;
  size_t number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    LineReader r(line, ++number);
    if (line.size() > limits.max_line_bytes) {
      return r.Error("longer than the limit of " + std::to_string(limits.max_line_bytes) +
                     " bytes");
    }
    if (eof) return r.Error("text after # EOF");
    r.SkipBlanks();
    if (r.AtEnd()) continue;  // a blank line
    if (r.Consume('#')) {
      r.SkipBlanks();
      const std::string_view keyword = r.Token();
      if (keyword == "EOF") {
        r.SkipBlanks();
        if (!r.AtEnd()) return r.Error("text after # EOF");
        eof = true;
        continue;
      }
      if ((keyword != "HELP" && keyword != "TYPE") || !r.SkipBlanks()) continue;  // a comment
      FRUGAL_ASSIGN_OR_RETURN(const std::string_view name, r.Name(true));
      const std::string key(name);
      if (keyword == "HELP") {
        if (!r.AtEnd() && !r.SkipBlanks()) return r.Error("expected a blank after the HELP name");
        const auto help = UnescapeHelp(r.Rest());
        if (!help) return r.Error("invalid escape in HELP text (only \\\\ and \\n)");
        if (!set.help_.emplace(key, *help).second) return r.Error("second HELP for " + key);
        continue;
      }
      if (!r.SkipBlanks()) return r.Error("expected a type after the TYPE name");
      const auto type = ParseType(r.Token());
      r.SkipBlanks();
      if (!type || !r.AtEnd()) {
        return r.Error("TYPE must be counter, gauge, histogram, summary, untyped or unknown");
      }
      for (const char* suffix : {"", "_bucket", "_sum", "_count", "_total"}) {
        if (set.by_name_.count(key + suffix))
          return r.Error("TYPE for " + key + " after its samples");
      }
      if (!set.types_.emplace(key, *type).second) return r.Error("second TYPE for " + key);
      continue;
    }

    if (set.samples_.size() >= limits.max_samples) {
      return r.Error("more than the limit of " + std::to_string(limits.max_samples) + " samples");
    }
    PromSample s;
    FRUGAL_ASSIGN_OR_RETURN(const std::string_view name, r.Name(true));
    s.name = std::string(name);
    r.SkipBlanks();
    if (r.Consume('{')) {
      for (;;) {
        r.SkipBlanks();
        if (r.Consume('}')) break;
        FRUGAL_ASSIGN_OR_RETURN(const std::string_view label, r.Name(false));
        r.SkipBlanks();
        if (!r.Consume('=')) return r.Error("expected = after label " + std::string(label));
        r.SkipBlanks();
        if (!r.Consume('"'))
          return r.Error("expected a quoted value for label " + std::string(label));
        FRUGAL_ASSIGN_OR_RETURN(std::string value, r.QuotedValue());
        if (s.Label(label)) return r.Error("label " + std::string(label) + " twice");
        if (s.labels.size() >= limits.max_labels) {
          return r.Error("more than the limit of " + std::to_string(limits.max_labels) + " labels");
        }
        s.labels.push_back({std::string(label), std::move(value)});
        r.SkipBlanks();
        if (r.Consume('}')) break;
        if (!r.Consume(',')) return r.Error("expected , or } after a label value");
      }
      if (!r.SkipBlanks()) return r.Error("expected a blank before the value");
    } else if (r.AtEnd()) {
      return r.Error("sample " + s.name + " has no value");
    }
    const auto value = ParseValue(r.Token());
    if (!value) return r.Error("the value of " + s.name + " is not a number");
    s.value = *value;
    if (r.SkipBlanks() && !r.AtEnd()) {
      const auto ts = ParseTimestamp(r.Token());
      if (!ts) return r.Error("the timestamp of " + s.name + " is not an integer");
      s.timestamp_ms = *ts;
      r.SkipBlanks();
    }
    if (!r.AtEnd()) return r.Error("unexpected text after the sample");
    if (!series.insert(SeriesKey(s)).second) return r.Error("series " + s.name + " twice");
    set.by_name_[s.name].push_back(set.samples_.size());
    set.samples_.push_back(std::move(s));
  }
  return set;
}

MetricType MetricSet::TypeOf(std::string_view family) const {
  const auto it = types_.find(std::string(family));
  return it == types_.end() ? MetricType::kUntyped : it->second;
}

std::optional<std::string_view> MetricSet::HelpOf(std::string_view family) const {
  const auto it = help_.find(std::string(family));
  if (it == help_.end()) return std::nullopt;
  return std::string_view(it->second);
}

template <typename F>
size_t MetricSet::ForEach(std::string_view name, const LabelMatch& match, F&& f) const {
  const auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return 0;
  size_t n = 0;
  for (const size_t i : it->second) {
    const PromSample& s = samples_[i];
    const bool matches = std::all_of(match.begin(), match.end(), [&](const auto& m) {
      const auto v = s.Label(m.first);
      return v && *v == m.second;
    });
    if (!matches) continue;
    f(s);
    ++n;
  }
  return n;
}

bool MetricSet::Has(std::string_view name, const LabelMatch& match) const {
  return ForEach(name, match, [](const PromSample&) {}) > 0;
}

std::optional<double> MetricSet::Value(std::string_view name, const LabelMatch& match) const {
  double v = 0;
  if (ForEach(name, match, [&](const PromSample& s) { v = s.value; }) != 1) return std::nullopt;
  return v;
}

std::optional<double> MetricSet::Sum(std::string_view name, const LabelMatch& match) const {
  double sum = 0;
  if (ForEach(name, match, [&](const PromSample& s) { sum += s.value; }) == 0) return std::nullopt;
  return sum;
}

std::optional<double> MetricSet::Mean(std::string_view name, const LabelMatch& match) const {
  double sum = 0;
  const size_t n = ForEach(name, match, [&](const PromSample& s) { sum += s.value; });
  if (n == 0) return std::nullopt;
  return sum / static_cast<double>(n);
}

std::optional<HistogramTotals> MetricSet::Histogram(std::string_view family,
                                                    const LabelMatch& match) const {
  const std::string f(family);
  const auto sum = Sum(f + "_sum", match), count = Sum(f + "_count", match);
  if (!sum || !count) return std::nullopt;
  return HistogramTotals{*sum, *count};
}

}  // namespace frugal::gateway
