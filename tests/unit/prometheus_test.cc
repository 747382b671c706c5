// The Prometheus text parser (balancer/prometheus.h): families, samples, label escapes, special
// values and timestamps read as written; lookups by label subset, sums, means and histogram
// totals; OpenMetrics' # EOF; every malformed line refused with its number; the size limits.
#include "balancer/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "testing/test_data.h"

namespace frugal::gateway {
namespace {

std::string ReadData(const std::string& name) {
  return frugal::testing::ReadTestData("metrics/" + name);
}

MetricSet Parse(std::string_view text) {
  auto set = ParsePrometheusText(text);
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return set.ok() ? std::move(set).value() : MetricSet{};
}

TEST(PrometheusTest, ReadsFamiliesSamplesLabelsAndValues) {
  const MetricSet m = Parse(
      "# HELP http_requests_total The total number of HTTP requests.\n"
      "# TYPE http_requests_total counter\n"
      "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
      "http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n"
      "\n"
      "# A comment that is neither HELP nor TYPE.\n"
      "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n"
      "\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
      "metric_without_timestamp_and_labels 12.47\n"
      "something_weird{problem=\"division by zero\"} +Inf -3982045\n"
      "neg_inf -Inf\n"
      "not_a_number NaN\n"
      "trailing_comma{a=\"1\",} 2\n"
      "empty_braces{} 3\n"
      "spaced { a = \"x\" , b=\"\" } -0.5e-3\n"
      "# HELP escaped A \\\\ backslash and a\\nnewline.\n");
  ASSERT_EQ(m.samples().size(), 10u);
  EXPECT_EQ(m.TypeOf("http_requests_total"), MetricType::kCounter);
  EXPECT_EQ(m.TypeOf("metric_without_timestamp_and_labels"), MetricType::kUntyped);
  EXPECT_EQ(m.HelpOf("http_requests_total"), "The total number of HTTP requests.");
  EXPECT_EQ(m.HelpOf("escaped"), "A \\ backslash and a\nnewline.");

  const PromSample& first = m.samples()[0];
  EXPECT_EQ(first.name, "http_requests_total");
  ASSERT_EQ(first.labels.size(), 2u);
  EXPECT_EQ(first.labels[0].name, "method");
  EXPECT_EQ(first.labels[1].value, "200");
  EXPECT_EQ(first.value, 1027);
  EXPECT_EQ(first.timestamp_ms, 1395066363000);

  const PromSample& file = m.samples()[2];
  EXPECT_EQ(file.Label("path"), "C:\\DIR\\FILE.TXT");
  EXPECT_EQ(file.Label("error"), "Cannot find file:\n\"FILE.TXT\"");
  EXPECT_EQ(file.value, 1.458255915e9);
  EXPECT_FALSE(file.timestamp_ms.has_value());

  EXPECT_EQ(m.samples()[4].value, INFINITY);
  EXPECT_EQ(m.samples()[4].timestamp_ms, -3982045);
  EXPECT_EQ(m.samples()[5].value, -INFINITY);
  EXPECT_TRUE(std::isnan(m.samples()[6].value));
  EXPECT_EQ(m.samples()[7].Label("a"), "1");
  EXPECT_TRUE(m.samples()[8].labels.empty());
  EXPECT_EQ(m.samples()[9].Label("a"), "x");
  EXPECT_EQ(m.samples()[9].Label("b"), "");
  EXPECT_EQ(m.samples()[9].value, -0.0005);
}

TEST(PrometheusTest, LooksUpByLabelSubsetSumsAndHistograms) {
  const MetricSet m = Parse(
      "# TYPE q gauge\n"
      "q{engine=\"0\",model=\"a\"} 2\n"
      "q{engine=\"1\",model=\"a\"} 5\n"
      "q{engine=\"0\",model=\"b\"} 11\n"
      "# TYPE lat histogram\n"
      "lat_bucket{engine=\"0\",le=\"1\"} 1\n"
      "lat_bucket{engine=\"0\",le=\"+Inf\"} 4\n"
      "lat_sum{engine=\"0\"} 6.5\n"
      "lat_count{engine=\"0\"} 4\n"
      "lat_bucket{engine=\"1\",le=\"+Inf\"} 6\n"
      "lat_sum{engine=\"1\"} 3.5\n"
      "lat_count{engine=\"1\"} 6\n"
      "# TYPE half histogram\n"
      "half_sum 1\n");
  EXPECT_EQ(m.Value("q", {{"engine", "1"}}), 5);
  EXPECT_EQ(m.Value("q", {{"engine", "0"}, {"model", "b"}}), 11);
  EXPECT_FALSE(m.Value("q", {{"engine", "0"}}).has_value());  // two series match
  EXPECT_FALSE(m.Value("q", {{"engine", "7"}}).has_value());
  EXPECT_EQ(m.Sum("q"), 2 + 5 + 11);
  EXPECT_EQ(m.Sum("q", {{"model", "a"}}), 2 + 5);
  EXPECT_EQ(m.Mean("q"), (2 + 5 + 11) / 3.0);
  EXPECT_FALSE(m.Sum("absent").has_value());
  EXPECT_TRUE(m.Has("q", {{"model", "b"}}));
  EXPECT_FALSE(m.Has("q", {{"model", "c"}}));
  EXPECT_EQ(m.TypeOf("lat"), MetricType::kHistogram);

  const auto all = m.Histogram("lat");
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->sum, 6.5 + 3.5);
  EXPECT_EQ(all->count, 4 + 6);
  const auto one = m.Histogram("lat", {{"engine", "1"}});
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->sum, 3.5);
  EXPECT_EQ(one->count, 6);
  EXPECT_FALSE(m.Histogram("half").has_value());  // a _sum without its _count
}

TEST(PrometheusTest, AcceptsOpenMetricsEofAndNothingAfterIt) {
  const MetricSet m = Parse("# TYPE a gauge\na 1\n# EOF\n");
  EXPECT_EQ(m.Value("a"), 1);
  const auto after = ParsePrometheusText("a 1\n# EOF\na 2\n");
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.status().message().find("line 3"), std::string::npos) << after.status().message();
}

TEST(PrometheusTest, RefusesMalformedLinesNamingTheLine) {
  struct Case {
    const char* text;
    int line;
  };
  const Case cases[] = {
      {"ok 1\n1bad 2\n", 2},                                // name starts with a digit
      {"ok 1\n\nnovalue\n", 3},                             // no value
      {"a{b=\"c\" 1\n", 1},                                 // unclosed label set
      {"a{b=\"c} 1\n", 1},                                  // unterminated label value
      {"a{b=c} 1\n", 1},                                    // unquoted label value
      {"a{b:c=\"x\"} 1\n", 1},                              // colon in a label name
      {"a{b=\"\\t\"} 1\n", 1},                              // unknown escape
      {"a{b=\"1\",b=\"2\"} 1\n", 1},                        // label twice
      {"a 1\nb 2\na 3\n", 3},                               // one series twice
      {"a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 1\n", 2},  // the same series reordered
      {"a one\n", 1},                                       // value not a number
      {"a 0x10\n", 1},                                      // hex is not Go's float syntax
      {"a infinity\n", 1},
      {"a 1 2.5\n", 1},                                // timestamp not an integer
      {"a 1 2 3\n", 1},                                // text after the timestamp
      {"a 1e999\n", 1},                                // out of double's range
      {"# TYPE a gauge\n# TYPE a counter\na 1\n", 2},  // second TYPE
      {"# TYPE a summer\n", 1},                        // unknown type
      {"a 1\n# TYPE a gauge\n", 2},                    // TYPE after the samples
      {"h_sum 1\n# TYPE h histogram\n", 2},
      {"# HELP a one\n# HELP a two\n", 2},  // second HELP
      {"# HELP a bad \\x escape\n", 1},
      {"# HELP 9a text\n", 1},
      {"a 1\n# EOF trailing\n", 2},
      {"a{} 1\r\n", 1},  // CR is not a blank
  };
  for (const auto& c : cases) {
    const auto r = ParsePrometheusText(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    const std::string want = "line " + std::to_string(c.line) + ":";
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << c.text << " -> " << r.status().message();
  }
}

TEST(PrometheusTest, EnforcesItsLimits) {
  PromLimits limits;
  limits.max_bytes = 64;
  limits.max_line_bytes = 20;
  limits.max_samples = 3;
  limits.max_labels = 2;
  EXPECT_TRUE(ParsePrometheusText("a 1\nb 2\nc 3\n", limits).ok());
  EXPECT_TRUE(ParsePrometheusText("a{x=\"1\",y=\"2\"} 1\n", limits).ok());

  const auto big = ParsePrometheusText(std::string(65, '\n'), limits);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("65 bytes"), std::string::npos);

  const auto samples = ParsePrometheusText("a 1\nb 2\nc 3\nd 4\n", limits);
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find("line 4:"), std::string::npos);

  const auto line = ParsePrometheusText("a 1\n# " + std::string(19, 'x') + "\n", limits);
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.status().message().find("line 2:"), std::string::npos);

  const auto labels = ParsePrometheusText("a{x=\"\",y=\"\",z=\"\"} 1\n", limits);
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.status().message().find("labels"), std::string::npos);
}

TEST(PrometheusTest, ParsesTheEnginesTexts) {
  // sglang.prom is SGLang's documented example: its values as printed there.
  const MetricSet sg = Parse(ReadData("sglang.prom"));
  EXPECT_EQ(sg.Value("sglang:num_queue_reqs"), 2826);
  EXPECT_EQ(sg.TypeOf("sglang:time_per_output_token_seconds"), MetricType::kHistogram);
  EXPECT_EQ(sg.Value("sglang:time_per_output_token_seconds_bucket", {{"le", "+Inf"}}),
            7.400757e+06);
  EXPECT_EQ(sg.HelpOf("sglang:token_usage"), "The token usage");
  // vLLM V1 labels each series by engine and model.
  const MetricSet v1 = Parse(ReadData("vllm_v1_a.prom"));
  EXPECT_EQ(v1.Value("vllm:num_requests_waiting", {{"engine", "1"}}), 4);
  EXPECT_EQ(v1.Sum("vllm:num_requests_waiting", {{"model_name", "Qwen/Qwen3-8B"}}), 2 + 4);
  for (const char* f : {"vllm_v0.prom", "vllm_v1_b.prom", "llamacpp.prom", "tgi.prom"}) {
    EXPECT_TRUE(ParsePrometheusText(ReadData(f)).ok()) << f;
  }
}

}  // namespace
}  // namespace frugal::gateway
