// The /metrics load adapters (balancer/load_adapters.h) on texts from each engine's own source or
// documentation (tests/data/metrics, each citing where it came from): kinds by name and detected
// from a text; every field an engine gives, with its known bit, computed by hand from the data
// (the arithmetic is written out); vLLM's old and new metric names giving the same report; rates
// taken between two scrapes, counter resets and idle windows; what a scrape lacks listed in
// `missing` and never read as zero; malformed texts and time going backwards refused.
#include "balancer/load_adapters.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/test_data.h"

namespace frugal::gateway {
namespace {

std::string ReadData(const std::string& name) {
  return frugal::testing::ReadTestData("metrics/" + name);
}

WorkerLoad Update(MetricsLoadAdapter& a, const std::string& text, double now) {
  auto l = a.Update(text, now);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  return l.ok() ? std::move(l).value() : WorkerLoad{};
}

constexpr uint32_t kAllSignals = kFrugalSignals | kSignalKvUsage;
using Names = std::vector<std::string>;

TEST(WorkerKindTest, NamesRoundTripAndUnknownOnesAreRefused) {
  for (const auto k :
       {WorkerKind::kAuto, WorkerKind::kFrugal, WorkerKind::kVllm, WorkerKind::kSglang,
        WorkerKind::kLlamaCpp, WorkerKind::kTgi, WorkerKind::kOpenAi}) {
    const auto parsed = ParseWorkerKind(WorkerKindName(k));
    ASSERT_TRUE(parsed.ok()) << WorkerKindName(k);
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_EQ(WorkerKindName(WorkerKind::kLlamaCpp), "llamacpp");
  const auto bad = ParseWorkerKind("VLLM");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("auto, frugal, vllm, sglang, llamacpp, tgi, openai"),
            std::string::npos)
      << bad.status().message();
}

TEST(WorkerKindTest, DetectsTheEngineFromItsMetricNames) {
  EXPECT_EQ(DetectKind(ReadData("vllm_v0.prom")), WorkerKind::kVllm);
  EXPECT_EQ(DetectKind(ReadData("vllm_v1_a.prom")), WorkerKind::kVllm);
  EXPECT_EQ(DetectKind(ReadData("sglang.prom")), WorkerKind::kSglang);
  EXPECT_EQ(DetectKind(ReadData("llamacpp.prom")), WorkerKind::kLlamaCpp);
  EXPECT_EQ(DetectKind(ReadData("tgi.prom")), WorkerKind::kTgi);
  EXPECT_EQ(DetectKind(""), WorkerKind::kAuto);
  EXPECT_EQ(DetectKind("process_cpu_seconds_total 1\n"), WorkerKind::kAuto);
  EXPECT_EQ(DetectKind("vllm:num_requests_waiting{ 1\n"), WorkerKind::kAuto);  // unparsable
  EXPECT_EQ(DetectKind("vllm:num_requests_waiting 1\ntgi_queue_size 2\n"), WorkerKind::kAuto);
  EXPECT_EQ(DetectKind("process_cpu_seconds_total 1\ntgi_queue_size 2\n"), WorkerKind::kTgi);
}

TEST(MetricsLoadAdapterTest, OldVllmNamesGiveEveryField) {
  MetricsLoadAdapter a(WorkerKind::kVllm);
  const WorkerLoad l = Update(a, ReadData("vllm_v0.prom"), 100);
  EXPECT_EQ(l.source, "vllm /metrics");
  EXPECT_EQ(l.known, kAllSignals);
  EXPECT_EQ(l.missing, Names{});
  EXPECT_EQ(l.waiting, 6);
  EXPECT_EQ(l.running, 4);
  EXPECT_DOUBLE_EQ(l.kv_usage, 0.375);                                   // gpu_cache_usage_perc
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 1247.5 / 49900 * 1e3);         // time_per_output_token
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 30.0 / 20000 * 1e3);          // ttft over prompt tokens
  EXPECT_DOUBLE_EQ(l.backlog_ms, (6 + 4) / 4.0 * (1300.0 / 100 * 1e3));  // e2e
}

TEST(MetricsLoadAdapterTest, NewVllmNamesGiveTheSameReportAndRatesAcrossScrapes) {
  MetricsLoadAdapter a(WorkerKind::kVllm);
  const WorkerLoad first = Update(a, ReadData("vllm_v1_a.prom"), 100);
  EXPECT_EQ(first.known, kAllSignals);  // the same signals as from the old names
  EXPECT_EQ(first.missing, Names{});
  EXPECT_EQ(first.waiting, 2 + 4);  // summed over engine="0" and engine="1"
  EXPECT_EQ(first.running, 3 + 1);
  EXPECT_DOUBLE_EQ(first.kv_usage, (0.5 + 0.25) / 2);  // kv_cache_usage_perc, one per engine
  // The first scrape: cumulative means.
  EXPECT_DOUBLE_EQ(first.decode_ms_per_token, (600.0 + 400) / (30000 + 20000) * 1e3);
  EXPECT_DOUBLE_EQ(first.prefill_ms_per_token, (5.0 + 3) / (12000 + 8000) * 1e3);
  EXPECT_DOUBLE_EQ(first.backlog_ms, (6 + 4) / 4.0 * ((540.0 + 360) / (60 + 40) * 1e3));

  // Ten seconds later: the window's deltas, not the cumulative means (which would be 20.69 ms,
  // 0.392 ms and 9.17 s).
  const WorkerLoad second = Update(a, ReadData("vllm_v1_b.prom"), 110);
  EXPECT_EQ(second.known, kAllSignals);
  EXPECT_EQ(second.waiting, 0 + 1);
  EXPECT_EQ(second.running, 4 + 4);
  EXPECT_DOUBLE_EQ(second.kv_usage, (0.75 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(second.decode_ms_per_token, (1200.0 - 1000) / (58000 - 50000) * 1e3);
  EXPECT_NEAR(second.prefill_ms_per_token, (9.4 - 8.0) / (24000 - 20000) * 1e3, 1e-9);
  EXPECT_DOUBLE_EQ(second.backlog_ms, (1 + 8) / 8.0 * ((1100.0 - 900) / (120 - 100) * 1e3));
}

TEST(MetricsLoadAdapterTest, SglangFromItsDocumentedExample) {
  MetricsLoadAdapter a(WorkerKind::kSglang);
  const WorkerLoad l = Update(a, ReadData("sglang.prom"), 0);
  EXPECT_EQ(l.source, "sglang /metrics");
  EXPECT_EQ(l.known, kAllSignals);
  EXPECT_EQ(l.missing, Names{});
  EXPECT_EQ(l.waiting, 2826);
  EXPECT_EQ(l.running, 162);
  EXPECT_DOUBLE_EQ(l.kv_usage, 0.28);
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 866964.5791549598 / 7.400757e+06 * 1e3);
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 2.3518979474117756e+06 / 8.128902e+06 * 1e3);
  EXPECT_DOUBLE_EQ(l.backlog_ms, (2826 + 162) / 162.0 * (3.116093850019932e+06 / 11228 * 1e3));
}

TEST(MetricsLoadAdapterTest, LlamaCppCountersAndTheKvRatioItLacks) {
  MetricsLoadAdapter a(WorkerKind::kLlamaCpp);
  const std::string text = ReadData("llamacpp.prom");
  const WorkerLoad l = Update(a, text, 0);
  EXPECT_EQ(l.source, "llamacpp /metrics");
  EXPECT_EQ(l.known, kSignalWaiting | kSignalRunning | kSignalDecode | kSignalPrefill);
  EXPECT_EQ(l.missing, Names{"llamacpp:kv_cache_usage_ratio"});
  EXPECT_EQ(l.waiting, 1);
  EXPECT_EQ(l.running, 2);
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 80.0 / 4000 * 1e3);
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 1.5 / 3000 * 1e3);
  EXPECT_FALSE(l.Has(kSignalBacklog));  // busy, and no per-request time to estimate it with
  EXPECT_FALSE(l.Has(kSignalKvUsage));
  EXPECT_EQ(l.kv_usage, 0);

  // Older servers had the ratio; then it is read.
  MetricsLoadAdapter b(WorkerKind::kLlamaCpp);
  const WorkerLoad with_kv = Update(
      b, text + "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio 0.625\n",
      0);
  EXPECT_TRUE(with_kv.Has(kSignalKvUsage));
  EXPECT_DOUBLE_EQ(with_kv.kv_usage, 0.625);
  EXPECT_EQ(with_kv.missing, Names{});
}

TEST(MetricsLoadAdapterTest, LlamaCppThroughputGaugesWhenTheCountersAreAbsent) {
  MetricsLoadAdapter a(WorkerKind::kLlamaCpp);
  const WorkerLoad l = Update(a,
                              "llamacpp:prompt_tokens_seconds 2500\n"
                              "llamacpp:predicted_tokens_seconds 40\n"
                              "llamacpp:requests_processing 0\n"
                              "llamacpp:requests_deferred 0\n",
                              0);
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 1e3 / 40);
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 1e3 / 2500);
  EXPECT_TRUE(l.Has(kSignalBacklog));  // idle: nothing to finish
  EXPECT_EQ(l.backlog_ms, 0);
  // A throughput of 0 (nothing measured yet) is unknown, not an infinite latency.
  MetricsLoadAdapter b(WorkerKind::kLlamaCpp);
  const WorkerLoad idle = Update(b, "llamacpp:predicted_tokens_seconds 0\n", 0);
  EXPECT_FALSE(idle.Has(kSignalDecode));
}

// A busy llama-server's backlog from its /slots (a real capture: both slots answering, one request
// deferred), with the per-token latencies its /metrics gave.
WorkerLoad BusyLlamaCpp(int64_t waiting) {
  WorkerLoad l;
  l.waiting = waiting;
  l.running = 2;
  l.prefill_ms_per_token = 1;
  l.decode_ms_per_token = 10;
  l.known = kSignalWaiting | kSignalRunning | kSignalPrefill | kSignalDecode;
  l.source = "llamacpp /metrics";
  return l;
}

TEST(LlamaCppSlotsTest, BusySlotsGiveTheBacklogMetricsLack) {
  const std::string slots = ReadData("llamacpp_slots.json");
  WorkerLoad l = BusyLlamaCpp(1);
  ASSERT_TRUE(ApplyLlamaCppSlots(slots, l).ok());
  ASSERT_TRUE(l.Has(kSignalBacklog));
  EXPECT_EQ(l.source, "llamacpp /metrics + /slots");
  // Slot 0: 49 prompt tokens, 6 decoded, 58 left; slot 1: 51, 7 decoded, 93 left. Both answers
  // have begun, so their prompts are done. Left: 58 x 10 + 93 x 10 ms. A full request: 49 x 1 +
  // (6 + 58) x 10 = 689 and 51 x 1 + (7 + 93) x 10 = 1051 ms; the deferred one counts as their
  // mean. All of it over the 2 processing slots.
  EXPECT_DOUBLE_EQ(l.backlog_ms, (580.0 + 930.0 + 1 * (689.0 + 1051.0) / 2) / 2);
  WorkerLoad none_deferred = BusyLlamaCpp(0);
  ASSERT_TRUE(ApplyLlamaCppSlots(slots, none_deferred).ok());
  EXPECT_DOUBLE_EQ(none_deferred.backlog_ms, (580.0 + 930.0) / 2);  // every slot busy
}

TEST(LlamaCppSlotsTest, AFreeSlotMeansNoWaitAndAnUnboundedAnswerIsUnknown) {
  // Slot 1 free, nothing deferred: a new request starts at once, whatever slot 0 has left.
  const std::string one_busy =
      R"([{"id":0,"is_processing":true,"n_prompt_tokens":100,"n_prompt_tokens_processed":40,)"
      R"("n_prompt_tokens_cache":20,"next_token":[{"n_remain":50,"n_decoded":0}]},)"
      R"({"id":1,"is_processing":false}])";
  WorkerLoad l = BusyLlamaCpp(0);
  l.running = 1;
  ASSERT_TRUE(ApplyLlamaCppSlots(one_busy, l).ok());
  EXPECT_TRUE(l.Has(kSignalBacklog));
  EXPECT_EQ(l.backlog_ms, 0);
  // With one deferred, slot 0 (prompt 100 - 40 evaluated - 20 reused = 40 left, then 50 tokens)
  // and the deferred one as a full request (100 x 1 + 50 x 10) go through the one busy slot.
  WorkerLoad deferred = BusyLlamaCpp(1);
  deferred.running = 1;
  ASSERT_TRUE(ApplyLlamaCppSlots(one_busy, deferred).ok());
  EXPECT_DOUBLE_EQ(deferred.backlog_ms, (40.0 * 1 + 50 * 10) + (100.0 * 1 + 50 * 10));
  // n_predict -1: the answer has no bound, so no estimate.
  const std::string unbounded =
      R"([{"id":0,"is_processing":true,"n_prompt_tokens":10,"next_token":[{"n_remain":-1,"n_decoded":3}]}])";
  WorkerLoad u = BusyLlamaCpp(2);
  ASSERT_TRUE(ApplyLlamaCppSlots(unbounded, u).ok());
  EXPECT_FALSE(u.Has(kSignalBacklog));
  EXPECT_EQ(u.source, "llamacpp /metrics");
  // Latencies unknown (nothing decoded yet): no estimate either.
  WorkerLoad untimed = BusyLlamaCpp(1);
  untimed.known &= ~kSignalDecode;
  ASSERT_TRUE(ApplyLlamaCppSlots(ReadData("llamacpp_slots.json"), untimed).ok());
  EXPECT_FALSE(untimed.Has(kSignalBacklog));
}

TEST(LlamaCppSlotsTest, MalformedBodiesAreRefusedAndChangeNothing) {
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  for (const std::string& bad :
       {std::string(), std::string("{}"), std::string("[]"), std::string("[1]"),
        std::string(R"([{"id":0}])"), std::string(R"([{"is_processing":"yes"}])"), deep}) {
    WorkerLoad l = BusyLlamaCpp(1);
    const Status st = ApplyLlamaCppSlots(bad, l);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_FALSE(l.Has(kSignalBacklog)) << bad;
    EXPECT_EQ(l.source, "llamacpp /metrics") << bad;
  }
}

TEST(MetricsLoadAdapterTest, TgiQueueBatchAndDurations) {
  MetricsLoadAdapter a(WorkerKind::kTgi);
  const std::string text = ReadData("tgi.prom");
  const WorkerLoad l = Update(a, text, 0);
  EXPECT_EQ(l.source, "tgi /metrics");
  EXPECT_EQ(l.known, kFrugalSignals);  // TGI has no KV usage metric
  EXPECT_EQ(l.missing, Names{});
  EXPECT_EQ(l.waiting, 3);
  EXPECT_EQ(l.running, 5);
  EXPECT_DOUBLE_EQ(l.decode_ms_per_token, 3.0 / 100 * 1e3);  // mean_time_per_token
  EXPECT_DOUBLE_EQ(l.prefill_ms_per_token, 6.0 / 30000 * 1e3);
  EXPECT_DOUBLE_EQ(l.backlog_ms, (3 + 5) / 5.0 * (500.0 / 100 * 1e3));

  // Without the per-request token time, the decode forward pass (method="decode") is read.
  std::string no_tpt;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("tgi_request_mean_time_per_token_duration") == std::string::npos)
      no_tpt += line + "\n";
  }
  MetricsLoadAdapter b(WorkerKind::kTgi);
  EXPECT_DOUBLE_EQ(Update(b, no_tpt, 0).decode_ms_per_token, 40.0 / 2000 * 1e3);
}

TEST(MetricsLoadAdapterTest, MissingMetricsAreListedAndNeverReadAsZero) {
  MetricsLoadAdapter a(WorkerKind::kVllm);
  const WorkerLoad l = Update(a, "vllm:num_requests_waiting{model_name=\"m\"} 3\n", 0);
  EXPECT_EQ(l.known, kSignalWaiting);
  EXPECT_EQ(l.waiting, 3);
  EXPECT_EQ(
      l.missing,
      (Names{"vllm:num_requests_running", "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc",
             "vllm:inter_token_latency_seconds or vllm:time_per_output_token_seconds or "
             "vllm:request_time_per_output_token_seconds",
             "vllm:request_prefill_time_seconds or vllm:time_to_first_token_seconds",
             "vllm:prompt_tokens_total",
             "vllm:request_inference_time_seconds or vllm:e2e_request_latency_seconds"}));

  // Present but with nothing observed yet (count 0): unknown, and not missing.
  MetricsLoadAdapter b(WorkerKind::kSglang);
  const WorkerLoad fresh = Update(b,
                                  "sglang:num_queue_reqs 0\n"
                                  "sglang:num_running_reqs 0\n"
                                  "sglang:token_usage 0\n"
                                  "sglang:prompt_tokens_total 0\n"
                                  "sglang:time_to_first_token_seconds_sum 0\n"
                                  "sglang:time_to_first_token_seconds_count 0\n"
                                  "sglang:time_per_output_token_seconds_sum 0\n"
                                  "sglang:time_per_output_token_seconds_count 0\n"
                                  "sglang:e2e_request_latency_seconds_sum 0\n"
                                  "sglang:e2e_request_latency_seconds_count 0\n",
                                  0);
  EXPECT_EQ(fresh.missing, Names{});
  EXPECT_EQ(fresh.known, kSignalWaiting | kSignalRunning | kSignalKvUsage | kSignalBacklog);
  EXPECT_EQ(fresh.backlog_ms, 0);  // holds nothing

  // Values no engine could mean are unknown too.
  MetricsLoadAdapter c(WorkerKind::kSglang);
  const WorkerLoad odd = Update(c,
                                "sglang:num_queue_reqs -1\n"
                                "sglang:num_running_reqs NaN\n"
                                "sglang:token_usage 1.5\n",
                                0);
  EXPECT_EQ(odd.known & (kSignalWaiting | kSignalRunning | kSignalKvUsage), 0u);
}

// A one-engine vLLM text with the given cumulative values.
std::string Vllm(double itl_sum, double itl_count, double running) {
  return "vllm:num_requests_waiting 0\nvllm:num_requests_running " + std::to_string(running) +
         "\nvllm:inter_token_latency_seconds_sum " + std::to_string(itl_sum) +
         "\nvllm:inter_token_latency_seconds_count " + std::to_string(itl_count) + "\n";
}

TEST(MetricsLoadAdapterTest, IdleWindowsAndCounterResets) {
  MetricsLoadAdapter a(WorkerKind::kVllm);
  EXPECT_DOUBLE_EQ(Update(a, Vllm(10, 1000, 1), 0).decode_ms_per_token, 10.0 / 1000 * 1e3);
  EXPECT_DOUBLE_EQ(Update(a, Vllm(13, 1100, 1), 5).decode_ms_per_token, 3.0 / 100 * 1e3);
  // No token in the window: the cumulative mean, not a zero and not a division by zero.
  EXPECT_DOUBLE_EQ(Update(a, Vllm(13, 1100, 0), 10).decode_ms_per_token, 13.0 / 1100 * 1e3);
  // The engine restarted (the count went down): its new cumulative mean is the baseline...
  EXPECT_DOUBLE_EQ(Update(a, Vllm(0.8, 40, 1), 15).decode_ms_per_token, 0.8 / 40 * 1e3);
  // ...and the next window is taken from it.
  EXPECT_DOUBLE_EQ(Update(a, Vllm(2.0, 100, 1), 20).decode_ms_per_token, 1.2 / 60 * 1e3);
}

TEST(MetricsLoadAdapterTest, RefusesBadScrapesAndKeepsItsState) {
  MetricsLoadAdapter a(WorkerKind::kVllm);
  Update(a, Vllm(10, 1000, 1), 0);
  const auto bad = a.Update("vllm:num_requests_waiting 0\nvllm:num_requests_running{ 1\n", 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("vllm /metrics: metrics line 2:"), std::string::npos)
      << bad.status().message();
  // The window still starts at the last good scrape.
  EXPECT_DOUBLE_EQ(Update(a, Vllm(16, 1200, 1), 10).decode_ms_per_token, 6.0 / 200 * 1e3);

  const auto backwards = a.Update(Vllm(16, 1200, 1), 9);
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(a.Update(Vllm(16, 1200, 1), NAN).ok());

  for (const auto k : {WorkerKind::kAuto, WorkerKind::kFrugal, WorkerKind::kOpenAi}) {
    MetricsLoadAdapter none(k);
    const auto r = none.Update(Vllm(1, 1, 1), 0);
    ASSERT_FALSE(r.ok()) << WorkerKindName(k);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace frugal::gateway
