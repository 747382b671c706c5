#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace frugal {
namespace {

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
  return std::string(buf, r.ptr);
}

// Label values escape backslash, double quote and newline.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Header(std::string& out, const std::string& name, const std::string& help, const char* type) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

void MetricsRegistry::Counter::Add(double v, const std::string& label_value) {
  MutexLock lock(mu_);
  values_[label_value] += v;
}

double MetricsRegistry::Counter::Value(const std::string& label_value) const {
  MutexLock lock(mu_);
  const auto it = values_.find(label_value);
  return it == values_.end() ? 0 : it->second;
}

void MetricsRegistry::Histogram::Observe(double v) {
  const size_t b =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  MutexLock lock(mu_);
  ++counts_[b];
  sum_ += v;
  ++count_;
}

MetricsRegistry::Counter& MetricsRegistry::AddCounter(const std::string& name,
                                                      const std::string& help,
                                                      const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  auto c = std::make_unique<Counter>();
  c->name_ = name;
  c->help_ = help;
  c->label_ = label;
  if (label.empty()) {
    MutexLock values(c->mu_);
    c->values_[""] = 0;
  }
  order_.push_back({c.get(), nullptr, nullptr});
  counters_.push_back(std::move(c));
  return *counters_.back();
}

MetricsRegistry::Histogram& MetricsRegistry::AddHistogram(const std::string& name,
                                                          const std::string& help,
                                                          std::vector<double> bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto h = std::make_unique<Histogram>();
  h->name_ = name;
  h->help_ = help;
  std::sort(bounds.begin(), bounds.end());
  h->bounds_ = std::move(bounds);
  {
    MutexLock counts(h->mu_);
    h->counts_.assign(h->bounds_.size() + 1, 0);
  }
  order_.push_back({nullptr, h.get(), nullptr});
  histograms_.push_back(std::move(h));
  return *histograms_.back();
}

void MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                               std::function<double()> read) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_.push_back(std::make_unique<Gauge>(Gauge{name, help, std::move(read)}));
  order_.push_back({nullptr, nullptr, gauges_.back().get()});
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const Entry& e : order_) {
    if (e.counter) {
      const Counter& c = *e.counter;
      Header(out, c.name_ + "_total", c.help_, "counter");
      MutexLock l2(c.mu_);
      for (const auto& [lv, v] : c.values_) {
        out.append(c.name_).append("_total");
        if (!c.label_.empty())
          out.append("{").append(c.label_).append("=\"").append(Escape(lv)).append("\"}");
        out.append(" ").append(Num(v)).append("\n");
      }
    } else if (e.histogram) {
      const Histogram& h = *e.histogram;
      Header(out, h.name_, h.help_, "histogram");
      MutexLock l2(h.mu_);
      uint64_t cum = 0;
      for (size_t b = 0; b < h.bounds_.size(); ++b) {
        cum += h.counts_[b];
        out.append(h.name_)
            .append("_bucket{le=\"")
            .append(Num(h.bounds_[b]))
            .append("\"} ")
            .append(std::to_string(cum))
            .append("\n");
      }
      out.append(h.name_)
          .append("_bucket{le=\"+Inf\"} ")
          .append(std::to_string(h.count_))
          .append("\n");
      out.append(h.name_).append("_sum ").append(Num(h.sum_)).append("\n");
      out.append(h.name_).append("_count ").append(std::to_string(h.count_)).append("\n");
    } else {
      const Gauge& g = *e.gauge;
      Header(out, g.name, g.help, "gauge");
      out.append(g.name).append(" ").append(Num(g.read())).append("\n");
    }
  }
  return out;
}

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5,
          0.75,  1,      1.5,   2,    3,     5,    7.5,   10,  15,   20,  30,  60};
}

}  // namespace frugal
