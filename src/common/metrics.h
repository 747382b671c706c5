// Prometheus metrics in the text exposition format (version 0.0.4): counters (optionally with
// one label), histograms with fixed buckets, and gauges read at scrape time.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace frugal {

class MetricsRegistry {
 public:
  class Counter {
   public:
    void Add(double v = 1, const std::string& label_value = "");
    // The count for one label value (0 before any).
    double Value(const std::string& label_value = "") const;

   private:
    friend class MetricsRegistry;
    std::string name_, help_, label_;
    mutable Mutex mu_;
    std::map<std::string, double> values_ FRUGAL_GUARDED_BY(mu_);  // by label value
  };

  class Histogram {
   public:
    void Observe(double v);

   private:
    friend class MetricsRegistry;
    std::string name_, help_;
    std::vector<double> bounds_;  // upper bounds, ascending; +Inf implied
    mutable Mutex mu_;
    std::vector<uint64_t> counts_ FRUGAL_GUARDED_BY(mu_);  // per bucket (not cumulative)
    double sum_ FRUGAL_GUARDED_BY(mu_) = 0;
    uint64_t count_ FRUGAL_GUARDED_BY(mu_) = 0;
  };

  // name without the _total suffix (added in the output); label: one label name or "".
  Counter& AddCounter(const std::string& name, const std::string& help,
                      const std::string& label = "");
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds);
  // A gauge whose value is read when scraped.
  void AddGauge(const std::string& name, const std::string& help, std::function<double()> read);

  // The exposition text of every metric, in registration order.
  std::string Render() const;

  // Bucket bounds for latencies in seconds, 1 ms to 60 s.
  static std::vector<double> LatencyBuckets();

 private:
  struct Gauge {
    std::string name, help;
    std::function<double()> read;
  };
  struct Entry {
    Counter* counter = nullptr;
    Histogram* histogram = nullptr;
    Gauge* gauge = nullptr;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Counter>> counters_;
  std::vector<std::unique_ptr<Histogram>> histograms_;
  std::vector<std::unique_ptr<Gauge>> gauges_;
  std::vector<Entry> order_;
};

}  // namespace frugal
