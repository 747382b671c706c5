// frugal loadgen: the arrival schedule (Poisson rates per phase, repeat and long shares,
// determinism), the percentile helper, the summaries and renderers, and one short run against
// Frugal's own HTTP server that answers each kind of success and failure.
#include "loadgen/loadgen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "http/server.h"

namespace frugal::loadgen {
namespace {

std::vector<QuestionGroup> Groups(size_t n, size_t paraphrases = 2) {
  std::vector<QuestionGroup> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i].question = std::string("question ").append(std::to_string(i));
    for (size_t k = 0; k < paraphrases; ++k) {
      g[i].paraphrases.push_back(std::string("paraphrase ")
                                     .append(std::to_string(k))
                                     .append(" of ")
                                     .append(std::to_string(i)));
    }
  }
  return g;
}

TEST(LoadgenScheduleTest, PhasesFollowTheProfileAndOmitZeroLengthOnes) {
  Profile p;
  p.rate = 2;
  auto phases = Phases(p);
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].name, "steady");
  EXPECT_EQ(phases[1].name, "spike");
  EXPECT_EQ(phases[2].name, "recovery");
  EXPECT_DOUBLE_EQ(phases[1].rate, 12);
  EXPECT_DOUBLE_EQ(phases[1].start_s, 20);
  EXPECT_DOUBLE_EQ(phases[2].end_s, 60);

  p.spike_s = 0;
  phases = Phases(p);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[1].name, "recovery");
  EXPECT_DOUBLE_EQ(phases[1].start_s, 20);
  p.steady_s = p.recovery_s = 0;
  EXPECT_TRUE(Phases(p).empty());
}

TEST(LoadgenScheduleTest, ArrivalsArePoissonAtEachPhaseRate) {
  Profile p;
  p.rate = 20;
  p.spike_factor = 6;
  p.steady_s = 100;
  p.spike_s = 20;
  p.recovery_s = 100;
  const auto groups = Groups(10);
  const auto phases = Phases(p);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto s = BuildSchedule(p, Mix{}, groups, seed);
    std::vector<std::vector<double>> times(phases.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (i > 0) {
        ASSERT_GE(s[i].time_s, s[i - 1].time_s) << "not in time order at " << i;
      }
      const Phase& ph = phases[static_cast<size_t>(s[i].phase)];
      ASSERT_GE(s[i].time_s, ph.start_s);
      ASSERT_LT(s[i].time_s, ph.end_s);
      times[static_cast<size_t>(s[i].phase)].push_back(s[i].time_s);
    }
    for (size_t k = 0; k < phases.size(); ++k) {
      const double expected = phases[k].rate * phases[k].length_s();  // 2000, 2400, 2000
      const double n = static_cast<double>(times[k].size());
      EXPECT_LE(std::abs(n - expected), 4 * std::sqrt(expected))
          << phases[k].name << " seed " << seed;
      // Exponential gaps: mean 1/rate and standard deviation equal to the mean (a fixed-rate
      // or bursty schedule would have a coefficient of variation far from 1).
      double sum = 0, sum2 = 0;
      for (size_t i = 1; i < times[k].size(); ++i) {
        const double gap = times[k][i] - times[k][i - 1];
        sum += gap;
        sum2 += gap * gap;
      }
      const double m = sum / (n - 1), sd = std::sqrt(sum2 / (n - 1) - m * m);
      EXPECT_NEAR(m * phases[k].rate, 1.0, 0.1) << phases[k].name;
      EXPECT_NEAR(sd / m, 1.0, 0.1) << phases[k].name;
    }
  }
}

TEST(LoadgenScheduleTest, RepeatAndLongSharesAndWhatRepeatsAsk) {
  Profile p;
  p.rate = 50;
  p.spike_factor = 1;
  p.steady_s = 100;
  p.spike_s = 0;
  p.recovery_s = 100;  // about 10000 arrivals
  const auto groups = Groups(20000);
  const auto s = BuildSchedule(p, Mix{}, groups, 7);
  ASSERT_GT(s.size(), 9000u);
  std::set<size_t> asked;
  size_t repeats = 0, longs = 0, exact_repeats = 0;
  for (const auto& a : s) {
    if (a.repeat) {
      ++repeats;
      EXPECT_TRUE(asked.count(a.group)) << "a repeat of a group never asked";
      exact_repeats += a.variant == 0;
      EXPECT_LE(a.variant, 2);
    } else {
      EXPECT_FALSE(asked.count(a.group))
          << "a new request re-asked a group while unused ones remained";
      EXPECT_EQ(a.variant, 0);
      asked.insert(a.group);
    }
    longs += a.long_prompt;
  }
  const double n = static_cast<double>(s.size());
  EXPECT_NEAR(repeats / n, 0.35, 0.02);
  EXPECT_NEAR(longs / n, 0.3, 0.02);
  EXPECT_NEAR(static_cast<double>(exact_repeats) / static_cast<double>(repeats), 0.5, 0.04);

  Mix none;
  none.repeat_share = 0;
  none.long_share = 0;
  for (const auto& a : BuildSchedule(p, none, groups, 7)) {
    EXPECT_FALSE(a.repeat);
    EXPECT_FALSE(a.long_prompt);
  }
}

TEST(LoadgenScheduleTest, NewQuestionsCycleThroughAllGroupsBeforeReusingOne) {
  Profile p;
  p.rate = 10;
  p.spike_s = p.recovery_s = 0;
  Mix mix;
  mix.repeat_share = 0;
  const auto groups = Groups(5);
  const auto s = BuildSchedule(p, mix, groups, 3);
  ASSERT_GT(s.size(), 100u);
  for (size_t i = 0; i + 5 <= s.size(); i += 5) {
    std::set<size_t> round;
    for (size_t k = i; k < i + 5; ++k) round.insert(s[k].group);
    EXPECT_EQ(round.size(), 5u) << "round starting at " << i;
    EXPECT_EQ(s[i].group, s[0].group) << "each round follows the same order";
  }
}

TEST(LoadgenScheduleTest, DeterministicBySeedAndRateDoesNotChangeTheQuestions) {
  Profile p;
  const auto groups = Groups(300);
  const auto a = BuildSchedule(p, Mix{}, groups, 42);
  const auto b = BuildSchedule(p, Mix{}, groups, 42);
  const auto c = BuildSchedule(p, Mix{}, groups, 43);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_s, b[i].time_s);
    EXPECT_EQ(a[i].group, b[i].group);
    EXPECT_EQ(a[i].variant, b[i].variant);
    EXPECT_EQ(a[i].long_prompt, b[i].long_prompt);
  }
  size_t differ = a.size() != c.size();
  for (size_t i = 0; i < std::min(a.size(), c.size()); ++i)
    differ += a[i].time_s != c[i].time_s || a[i].group != c[i].group;
  EXPECT_GT(differ, 0u);

  Profile faster = p;
  faster.rate = 3;
  const auto f = BuildSchedule(faster, Mix{}, groups, 42);
  ASSERT_GT(f.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(f[i].group, a[i].group) << i;
    EXPECT_EQ(f[i].variant, a[i].variant) << i;
    EXPECT_EQ(f[i].long_prompt, a[i].long_prompt) << i;
  }
}

TEST(LoadgenScheduleTest, LongPromptsAreAboutThreeTimesTheQuestionAndEndWithIt) {
  std::vector<QuestionGroup> groups = {
      {"Where is my order 12345?", {"Has order 12345 shipped yet?"}},
      {"我的订单12345到哪里了？", {"订单12345发货了吗？"}}};
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int v = 0; v <= 1; ++v) {
      Arrival a;
      a.group = g;
      a.variant = v;
      const std::string& q = v == 0 ? groups[g].question : groups[g].paraphrases[0];
      EXPECT_EQ(PromptText(a, groups), q);
      a.long_prompt = true;
      const std::string text = PromptText(a, groups);
      ASSERT_GT(text.size(), q.size());
      EXPECT_EQ(text.substr(text.size() - q.size()), q);
      const double ratio = static_cast<double>(text.size()) / static_cast<double>(q.size());
      EXPECT_GE(ratio, 3.0) << text;
      EXPECT_LE(ratio, 6.0) << text;
      EXPECT_EQ(text, PromptText(a, groups)) << "a repeated long question repeats its context";
      const std::string passage = text.substr(0, text.size() - q.size());
      const bool ascii_passage = std::all_of(passage.begin(), passage.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x80;
      });
      EXPECT_EQ(ascii_passage, g == 0) << "the passage is in the question's language";
    }
  }
}

TEST(LoadgenPercentileTest, InterpolatesBetweenRanks) {
  EXPECT_FALSE(Percentile({}, 50).has_value());
  EXPECT_DOUBLE_EQ(*Percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(*Percentile({4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(*Percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(*Percentile({4, 1, 3, 2}, 100), 4);
  EXPECT_NEAR(*Percentile({4, 1, 3, 2}, 95), 3.85, 1e-12);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_NEAR(*Percentile(v, 99), 99.01, 1e-9);
}

RunResult SyntheticResult() {
  RunResult r;
  r.target = "http://127.0.0.1:1";
  r.model = "m";
  Profile p;
  p.steady_s = 10;
  p.spike_s = 5;
  p.recovery_s = 10;
  r.phases = Phases(p);
  // steady: 4 requests (1 error, 1 hit); spike: 2 (2 errors); recovery: 1 ok.
  auto rec = [](int phase, double send, double lat, double ttft, bool hit, std::string err) {
    RequestRecord x;
    x.phase = phase;
    x.send_s = send;
    x.latency_ms = lat;
    x.ttft_ms = ttft;
    x.cache_hit = hit;
    x.status = err.empty() ? 200 : 500;
    x.error = std::move(err);
    return x;
  };
  r.records = {rec(0, 1, 100, 10, false, ""), rec(0, 2, 200, 20, true, ""),
               rec(0, 3, 300, -1, false, ""), rec(0, 4, 5, -1, false, "HTTP 500: a, \"quoted\""),
               rec(1, 11, 1, -1, false, "x"), rec(1, 12, 2, -1, false, "y"),
               rec(2, 16, 50, 5, true, "")};
  return r;
}

TEST(LoadgenReportTest, SummarizeCountsPerPhaseAndOverSuccessesOnly) {
  const auto stats = Summarize(SyntheticResult());
  ASSERT_EQ(stats.size(), 4u);
  const auto& steady = stats[0];
  EXPECT_EQ(steady.requests, 4);
  EXPECT_EQ(steady.errors, 1);
  EXPECT_DOUBLE_EQ(steady.throughput_rps, 0.3);
  EXPECT_DOUBLE_EQ(*steady.latency_p50_ms, 200);  // the 5 ms error is not a latency
  EXPECT_DOUBLE_EQ(*steady.ttft_p50_ms, 15);
  EXPECT_DOUBLE_EQ(*steady.cache_hit_rate, 1.0 / 3);
  const auto& spike = stats[1];
  EXPECT_EQ(spike.errors, 2);
  EXPECT_FALSE(spike.latency_p50_ms.has_value());
  EXPECT_FALSE(spike.cache_hit_rate.has_value());
  const auto& total = stats[3];
  EXPECT_EQ(total.name, "total");
  EXPECT_EQ(total.requests, 7);
  EXPECT_EQ(total.errors, 3);
  EXPECT_DOUBLE_EQ(total.throughput_rps, 4.0 / 25);
  EXPECT_DOUBLE_EQ(*total.cache_hit_rate, 0.5);
}

TEST(LoadgenReportTest, AHitServingAnotherGroupsAnswerIsWrong) {
  auto rec = [](size_t group, bool hit, std::string answer, std::string err = "") {
    RequestRecord x;
    x.group = group;
    x.cache_hit = hit;
    x.answer = std::move(answer);
    x.status = err.empty() ? 200 : 500;
    x.error = std::move(err);
    return x;
  };
  RunResult r;
  Profile p;
  p.steady_s = 10;
  p.spike_s = 0;
  p.recovery_s = 0;
  r.phases = Phases(p);
  r.records = {rec(0, false, "Returns: 30 days."),  // misses: what each group's answer is
               rec(1, false, "Shipping: 3-5 days."),
               rec(1, false, "Standard shipping takes 3-5 days."),  // group 1 in another context
               rec(0, true, "Returns: 30 days."),                   // right
               rec(1, true, "Standard shipping takes 3-5 days."),   // right (its other context)
               rec(1, true, "Returns: 30 days."),                   // wrong: group 0's answer
               rec(2, true, "Shipping: 3-5 days."),    // wrong: group 2 never got it from a worker
               rec(0, true, "", "HTTP 500: failed")};  // failed: not a hit that served anything
  MarkWrongHits(r.records);
  std::vector<bool> wrong;
  for (const auto& x : r.records) wrong.push_back(x.wrong_hit);
  EXPECT_EQ(wrong, (std::vector<bool>{false, false, false, false, false, true, true, false}));
  const auto total = Summarize(r).back();
  EXPECT_EQ(total.hits, 4);
  EXPECT_EQ(total.wrong_hits, 2);
  EXPECT_DOUBLE_EQ(*total.wrong_hit_rate, 0.5);
  const auto j = nlohmann::json::parse(ReportJson(r, RunOptions{}));
  EXPECT_EQ(j["total"]["wrong_hits"], 2);
  EXPECT_EQ(j["total"]["hits"], 4);
}

TEST(LoadgenReportTest, NewQuestionsPastTheFileAreMarkedWrapped) {
  const std::vector<QuestionGroup> groups = {{"q0", {}}, {"q1", {}}, {"q2", {}}};
  Profile p;
  p.rate = 5;
  p.steady_s = 10;
  p.spike_s = 0;
  p.recovery_s = 0;
  Mix mix;
  mix.repeat_share = 0;
  const auto schedule = BuildSchedule(p, mix, groups, 7);
  ASSERT_GT(schedule.size(), 3u);
  for (size_t i = 0; i < schedule.size(); ++i) {
    EXPECT_EQ(schedule[i].wrapped, i >= 3) << i;  // the first three are new, the rest wrap
  }
}

TEST(LoadgenReportTest, JsonHasExactlyTheDocumentedFields) {
  RunOptions o;
  const auto j = nlohmann::json::parse(ReportJson(SyntheticResult(), o));
  const std::set<std::string> fields = {
      "name",           "requests",       "errors",      "throughput_rps", "latency_p50_ms",
      "latency_p95_ms", "latency_p99_ms", "ttft_p50_ms", "ttft_p95_ms",    "ttft_p99_ms",
      "cache_hit_rate", "hits",           "wrong_hits",  "wrong_hit_rate", "wrapped"};
  ASSERT_EQ(j["phases"].size(), 3u);
  for (const auto& ph : j["phases"]) {
    std::set<std::string> got;
    for (const auto& [k, v] : ph.items()) got.insert(k);
    EXPECT_EQ(got, fields);
  }
  EXPECT_EQ(j["phases"][1]["latency_p50_ms"], nullptr);
  EXPECT_EQ(j["total"]["requests"], 7);
  EXPECT_EQ(j["target"], "http://127.0.0.1:1");
  EXPECT_EQ(j["profile"]["rate"], 2.0);
  EXPECT_EQ(j["profile"]["long_max_tokens"], 96);
  EXPECT_EQ(j["profile"]["conversations"], false);
  EXPECT_FALSE(j["total"].contains("turns"));  // only with conversations
}

TEST(LoadgenReportTest, PlotHasOneDotPerRequestAndCsvOneRowPerRequest) {
  const auto r = SyntheticResult();
  const std::string html = PlotHtml(r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos) << "the page must be self-contained";
  size_t dots = 0;
  for (size_t at = html.find("<circle"); at != std::string::npos; at = html.find("<circle", at + 1))
    ++dots;
  EXPECT_EQ(dots, r.records.size());
  EXPECT_NE(html.find("&quot;quoted&quot;"), std::string::npos) << "error texts are escaped";
  for (const char* label : {"steady", "spike", "recovery", "rolling P95"})
    EXPECT_NE(html.find(label), std::string::npos) << label;

  const std::string csv = RecordsCsv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(r.records.size() + 1));
  EXPECT_NE(csv.find(",\"HTTP 500: a, \"\"quoted\"\"\","), std::string::npos) << csv;
}

TEST(LoadgenQuestionsTest, LoadsGroupsAndRejectsBadLinesWithTheLineNumber) {
  const std::string path = ::testing::TempDir() + "loadgen_questions_test.jsonl";
  {
    std::ofstream f(path);
    f << "{\"question\": \"a?\", \"paraphrases\": [\"b?\", \"c?\"]}\n\n{\"question\": \"d?\"}\n";
  }
  auto g = LoadQuestions(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].paraphrases, (std::vector<std::string>{"b?", "c?"}));
  EXPECT_TRUE((*g)[1].paraphrases.empty());
  {
    std::ofstream f(path);
    f << "{\"question\": \"a?\"}\n{\"question\": \"b?\", \"paraphrases\": [1]}\n";
  }
  g = LoadQuestions(path);
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find(":2:"), std::string::npos) << g.status().message();
  std::remove(path.c_str());
  EXPECT_EQ(LoadQuestions(path).status().code(), StatusCode::kNotFound);
}

// Kind of answer the test server gives, by the number in the question: see RunAgainstServer.
enum Kind { k500, kErrorEvent, kNoDone, kHit, kOk, kNever, kKinds };

TEST(LoadgenRunTest, EveryRequestIsAccountedOnceAndClassified) {
  std::mutex mu;
  std::vector<std::string> problems;                   // guarded by mu
  std::vector<std::shared_ptr<http::Responder>> held;  // guarded by mu
  http::ServerOptions so;
  so.port = 0;
  auto server = http::Server::Start(so, [&](const http::Request& req,
                                            std::shared_ptr<http::Responder> res) {
    if (req.path == "/api/v1/models") {
      res->Send(200, "application/json", R"({"object":"list","data":[{"id":"m1"}]})");
      return;
    }
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    using Ptr = nlohmann::json::json_pointer;
    const std::string content = body.is_object() ? body.value(Ptr("/messages/0/content"), "") : "";
    const bool is_long = content.find("\n\n") != std::string::npos;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (req.path != "/api/v1/chat/completions") problems.push_back("path " + req.path);
      if (req.Header("authorization") != "Bearer k")
        problems.push_back("authorization " + req.Header("authorization"));
      if (body.value("model", "") != "m1" || body.value("stream", false) != true ||
          body.value(Ptr("/stream_options/include_usage"), false) != true ||
          body.value("temperature", -1.0) != 0.0 ||
          body.value("max_tokens", 0) != (is_long ? 21 : 7)) {
        problems.push_back("body " + req.body);
      }
    }
    const int kind = std::stoi(content.substr(content.rfind(' ') + 1)) % kKinds;
    const std::string chunk = R"(data: {"choices":[{"index":0,"delta":{"content":"hi"}}]})";
    const std::string usage = R"(data: {"choices":[],"usage":{"completion_tokens":2}})";
    switch (kind) {
      case k500:
        res->Send(500, "application/json", R"({"error":{"message":"boom"}})");
        break;
      case kErrorEvent:
        res->StartStream(200, "text/event-stream");
        res->Write(chunk + "\n\n");
        res->Write("data: {\"error\": {\"message\": \"late\"}}\n\ndata: [DONE]\n\n");
        res->End();
        break;
      case kNoDone:
        res->StartStream(200, "text/event-stream");
        res->Write(chunk + "\n\n");
        res->End();
        break;
      case kHit:
      case kOk:
        res->StartStream(200, "text/event-stream",
                         kind == kHit ? http::Headers{{"X-Frugal-Cache", "hit"}} : http::Headers{});
        res->Write(R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})"
                   "\n\n");
        res->Write(chunk + "\n\n" + usage + "\n\ndata: [DONE]\n\n");
        res->End();
        break;
      default: {
        std::lock_guard<std::mutex> lock(mu);
        held.push_back(res);  // never answered: the timeout must end it
      }
    }
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  std::vector<QuestionGroup> groups(120);
  for (size_t i = 0; i < groups.size(); ++i)
    groups[i].question = std::string("question number ").append(std::to_string(i));
  RunOptions o;
  o.target =
      std::string("http://127.0.0.1:").append(std::to_string((*server)->port())).append("/api/v1/");
  o.api_key = "k";
  o.profile.rate = 15;
  o.profile.steady_s = 1;
  o.profile.spike_s = 0;
  o.profile.recovery_s = 0.5;
  o.mix.repeat_share = 0;  // every question once, so each record's kind is known
  o.mix.long_share = 0.5;
  o.max_tokens = 7;
  o.timeout_s = 1;
  int progress_calls = 0;
  auto r = loadgen::Run(o, groups, [&](const Progress&) { ++progress_calls; });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "m1");
  EXPECT_GE(progress_calls, 1);
  const auto schedule = BuildSchedule(o.profile, o.mix, groups, o.seed);
  ASSERT_EQ(r->records.size(), schedule.size());
  ASSERT_GT(r->records.size(), 10u);
  std::map<int, int> per_kind;
  for (const auto& rec : r->records) {
    const int kind = static_cast<int>(rec.group % kKinds);
    ++per_kind[kind];
    SCOPED_TRACE(std::string("kind ")
                     .append(std::to_string(kind))
                     .append(", error '")
                     .append(rec.error)
                     .append("'"));
    EXPECT_EQ(rec.cache_hit, kind == kHit);
    EXPECT_GT(rec.latency_ms, 0);
    switch (kind) {
      case k500:
        EXPECT_EQ(rec.error, "HTTP 500: boom");
        break;
      case kErrorEvent:
        EXPECT_EQ(rec.error, "error event: late");
        break;
      case kNoDone:
        EXPECT_EQ(rec.error, "the stream ended without [DONE]");
        break;
      case kHit:
      case kOk:
        EXPECT_TRUE(rec.ok());
        EXPECT_EQ(rec.completion_tokens, 2);
        EXPECT_GE(rec.ttft_ms, 0);
        EXPECT_LE(rec.ttft_ms, rec.latency_ms);
        break;
      default:
        EXPECT_TRUE(rec.error.find("timeout") != std::string::npos ||
                    rec.error.find("in flight") != std::string::npos);
        EXPECT_GE(rec.latency_ms, 900);
    }
  }
  EXPECT_GE(per_kind.size(), 4u) << "too few requests to see most kinds";
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(problems.empty()) << problems.front();
  held.clear();
}

TEST(LoadgenRunTest, BadTargetsFailBeforeSending) {
  uint16_t port;
  {
    http::ServerOptions so;
    so.port = 0;
    auto s =
        http::Server::Start(so, [](const http::Request&, std::shared_ptr<http::Responder> res) {
          res->Send(200, "text/plain", "");
        });
    ASSERT_TRUE(s.ok());
    port = (*s)->port();
  }  // nothing listens there now
  const auto groups = Groups(3);
  RunOptions o;
  o.profile.steady_s = 1;
  for (const std::string& url : {std::string("https://127.0.0.1:1"), std::string("http://:80"),
                                 std::string("http://127.0.0.1:99999"),
                                 std::string("http://127.0.0.1:").append(std::to_string(port))}) {
    o.target = url;
    auto r = loadgen::Run(o, groups);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
  }
  EXPECT_NE(loadgen::Run(o, groups).status().message().find("/v1/models"), std::string::npos);
}

// --- Conversations (--conversations): later turns carry the earlier ones. ---

TEST(LoadgenConversationTest, ATurnCarriesTheSystemPromptAndTheConversationSoFar) {
  ConversationMix mix;
  mix.enabled = true;
  mix.max_turns = 2;
  mix.new_share = 0.3;
  mix.system = "be brief";
  ConversationBook book(mix);
  auto first = book.Next(0.9, "q1");
  EXPECT_EQ(first.conversation, 0);
  EXPECT_EQ(first.turn, 1);
  ASSERT_EQ(first.messages.size(), 2u);
  EXPECT_EQ(first.messages[0].role, "system");
  EXPECT_EQ(first.messages[0].content, "be brief");
  EXPECT_EQ(first.messages[1].content, "q1");
  // Nothing answered yet: the next arrival starts another conversation whatever it draws.
  auto second = book.Next(0.9, "q2");
  EXPECT_EQ(second.conversation, 1);
  book.Answered(1, true, "a2");
  book.Answered(0, true, "a1");
  // Both ready; a draw under the new share starts a third, one over it goes on with the one
  // that has waited longest (1, answered first).
  EXPECT_EQ(book.Next(0.1, "q3").conversation, 2);
  auto next = book.Next(0.5, "q4");
  EXPECT_EQ(next.conversation, 1);
  EXPECT_EQ(next.turn, 2);
  ASSERT_EQ(next.messages.size(), 4u);
  EXPECT_EQ(next.messages[1].content, "q2");
  EXPECT_EQ(next.messages[2].role, "assistant");
  EXPECT_EQ(next.messages[2].content, "a2");
  EXPECT_EQ(next.messages[3].content, "q4");
  // Its last turn answered, 1 is over; 0 goes on; a failed turn ends a conversation.
  book.Answered(1, true, "a4");
  EXPECT_EQ(book.Next(0.5, "q5").conversation, 0);
  book.Answered(2, false, "");
  EXPECT_EQ(book.Next(0.99, "q6").conversation, 3);  // none ready: a new one
  EXPECT_EQ(book.started(), 4);
}

TEST(LoadgenConversationTest, TurnStatsGroupTurnThreeAndLater) {
  std::vector<RequestRecord> rs(6);
  const int turns[] = {1, 1, 2, 3, 5, 0};
  const double ttft[] = {100, 300, 40, 30, 50, 999};
  for (size_t i = 0; i < rs.size(); ++i) {
    rs[i].turn = turns[i];
    rs[i].conversation = turns[i] > 0 ? 0 : -1;
    rs[i].ttft_ms = ttft[i];
    rs[i].latency_ms = 2 * ttft[i];
  }
  rs[2].error = "HTTP 500";
  std::vector<const RequestRecord*> ptrs;
  for (const auto& r : rs) ptrs.push_back(&r);
  const auto t = TurnStats(ptrs);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].turn, 1);
  EXPECT_EQ(t[0].requests, 2);
  EXPECT_DOUBLE_EQ(*t[0].ttft_p50_ms, 200);
  EXPECT_EQ(t[1].requests, 1);
  EXPECT_EQ(t[1].errors, 1);
  EXPECT_FALSE(t[1].ttft_p50_ms.has_value());
  EXPECT_EQ(t[2].turn, 3);
  EXPECT_EQ(t[2].requests, 2);
  EXPECT_DOUBLE_EQ(*t[2].ttft_p50_ms, 40);
  EXPECT_DOUBLE_EQ(*t[2].latency_p50_ms, 80);
}

TEST(LoadgenRunTest, ConversationsSendTheEarlierAnswersBack) {
  std::mutex mu;
  std::vector<nlohmann::json> seen;  // guarded by mu: each request's messages
  http::ServerOptions so;
  so.port = 0;
  auto server = http::Server::Start(so, [&](const http::Request& req,
                                            std::shared_ptr<http::Responder> res) {
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    const auto& messages = body["messages"];
    {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(messages);
    }
    // The answer names the question it answers, in two deltas.
    const std::string q = messages.back().value("content", "");
    res->StartStream(200, "text/event-stream");
    res->Write(
        "data: " +
        nlohmann::json({{"choices", {{{"index", 0}, {"delta", {{"content", "re: "}}}}}}}).dump() +
        "\n\ndata: " +
        nlohmann::json({{"choices", {{{"index", 0}, {"delta", {{"content", q}}}}}}}).dump() +
        "\n\ndata: [DONE]\n\n");
    res->End();
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  RunOptions o;
  o.target = "http://127.0.0.1:" + std::to_string((*server)->port());
  o.model = "m";
  o.profile.rate = 40;
  o.profile.steady_s = 1.5;
  o.profile.spike_s = 0;
  o.profile.recovery_s = 0;
  o.mix.repeat_share = 0;
  o.mix.long_share = 0;
  o.conversation.enabled = true;
  o.conversation.max_turns = 3;
  o.conversation.system = "policy";
  auto r = loadgen::Run(o, Groups(200, 0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GT(r->records.size(), 20u);
  std::map<int, int> per_turn;
  for (const auto& rec : r->records) {
    ASSERT_TRUE(rec.ok()) << rec.error;
    ASSERT_GE(rec.turn, 1);
    ASSERT_LE(rec.turn, 3);
    ++per_turn[rec.turn];
  }
  EXPECT_GT(per_turn[2], 0) << "no conversation went on";
  // Every request: the system prompt, then user/assistant pairs where each answer is the one
  // the server gave to the question before it, then the new question.
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), r->records.size());
  for (const auto& m : seen) {
    ASSERT_EQ(m.size() % 2, 0u) << m.dump();
    EXPECT_EQ(m[0]["role"], "system");
    EXPECT_EQ(m[0]["content"], "policy");
    for (size_t i = 1; i + 1 < m.size(); i += 2) {
      EXPECT_EQ(m[i]["role"], "user");
      EXPECT_EQ(m[i + 1]["role"], "assistant");
      EXPECT_EQ(m[i + 1]["content"], "re: " + m[i]["content"].get<std::string>());
    }
    EXPECT_EQ(m.back()["role"], "user");
  }
  const auto stats = Summarize(*r);
  EXPECT_GE(stats.back().turns.size(), 2u);
  const auto j = nlohmann::json::parse(ReportJson(*r, o));
  EXPECT_EQ(j["total"]["turns"][0]["turn"], 1);
  EXPECT_EQ(j["profile"]["conversations"], true);
  EXPECT_NE(ReportTable(*r, o).find("turn 2"), std::string::npos);
  EXPECT_NE(PlotHtml(*r).find("TTFT turn 2"), std::string::npos);
}

}  // namespace
}  // namespace frugal::loadgen
