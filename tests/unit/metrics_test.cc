// Prometheus text output of the metrics registry.
#include "common/metrics.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

TEST(MetricsTest, RendersCountersHistogramsAndGaugesInTheTextFormat) {
  MetricsRegistry m;
  auto& c = m.AddCounter("frugal_requests", "Requests", "status");
  auto& h = m.AddHistogram("frugal_latency_seconds", "Latency", {0.1, 1});
  double g = 2.5;
  m.AddGauge("frugal_queue", "Queue", [&] { return g; });
  c.Add(1, "200");
  c.Add(2, "200");
  c.Add(1, "a\"b");
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.1);  // on a bound: counts in that bucket (le)
  h.Observe(7);
  g = 3;
  const std::string out = m.Render();
  EXPECT_NE(out.find("# TYPE frugal_requests_total counter\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_requests_total{status=\"200\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_requests_total{status=\"a\\\"b\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE frugal_latency_seconds histogram\n"), std::string::npos);
  EXPECT_NE(out.find("frugal_latency_seconds_bucket{le=\"0.1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_latency_seconds_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_latency_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_latency_seconds_sum 7.65\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_latency_seconds_count 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("frugal_queue 3\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace frugal
