// The gateway's model-free pieces: worker URLs and /queue_depth loads, the worker pool's health
// state machine and its load estimate between polls, the routing policies, the config file,
// the per-key token buckets, the traffic statistics, and what the gateway reads from a
// completion request (routing cost, cacheability, cache scope).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "balancer/prefix_index.h"
#include "balancer/worker_pool.h"
#include "cache/vector_index.h"
#include "gateway/config.h"
#include "gateway/rate_limit.h"
#include "gateway/request.h"
#include "gateway/stats.h"
#include "testing/temp_files.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;

HealthOptions TestHealth() {
  HealthOptions h;
  h.eject_after = 3;
  h.restore_after = 2;
  h.max_queue = 500;
  return h;
}

WorkerLoad Load(int64_t waiting, int64_t running = 0, double backlog_ms = 0, double prefill_ms = 0,
                double decode_ms = 0) {
  WorkerLoad l;
  l.waiting = waiting;
  l.running = running;
  l.backlog_ms = backlog_ms;
  l.prefill_ms_per_token = prefill_ms;
  l.decode_ms_per_token = decode_ms;
  l.known = kFrugalSignals;
  return l;
}

StatusOr<WorkerLoad> CheckFailed() { return StatusOr<WorkerLoad>(IoError("connection refused")); }

WorkerInfo InfoOf(const WorkerPool& pool, const std::string& name) {
  for (const auto& w : pool.List()) {
    if (w.name == name) return w;
  }
  ADD_FAILURE() << "no worker " << name;
  return {};
}

WorkerState StateOf(const WorkerPool& pool, const std::string& name) {
  return InfoOf(pool, name).state;
}

std::unique_ptr<Policy> Make(const std::string& name) {
  auto p = MakePolicy(name);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return std::move(p).value();
}

std::string Url(int port) { return std::string("http://127.0.0.1:").append(std::to_string(port)); }

// ---- ParseWorkerUrl / ParseWorkerLoad ----

TEST(GatewayWorkerUrl, AcceptsHttpHostPort) {
  auto a = ParseWorkerUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 8080);
  auto b = ParseWorkerUrl("http://worker-1.internal:65535/");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->first, "worker-1.internal");
  EXPECT_EQ(b->second, 65535);
  auto c = ParseWorkerUrl("http://localhost:1//");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->first, "localhost");
  EXPECT_EQ(c->second, 1);
}

TEST(GatewayWorkerUrl, RefusesAnythingElse) {
  for (const char* url :
       {"", "127.0.0.1:8080", "https://a:8080", "HTTP://a:80", "http://", "http://a",
        "http://:8080", "http://a:", "http://a:0", "http://a:65536", "http://a:99999999999",
        "http://a:-1", "http://a:8x", "http://a:80/v1", "http://a/b:80", "http://a: 80"}) {
    auto r = ParseWorkerUrl(url);
    EXPECT_FALSE(r.ok()) << "accepted '" << url << "'";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
    }
  }
}

TEST(GatewayWorkerLoad, ParsesQueueDepth) {
  auto l = ParseWorkerLoad(
      R"({"waiting": 3, "running": 2, "backlog_ms": 1234.5, "prefill_ms_per_token": 0.25,
          "decode_ms_per_token": 12.5, "simulated": true, "extra": "ignored"})");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->waiting, 3);
  EXPECT_EQ(l->running, 2);
  EXPECT_DOUBLE_EQ(l->backlog_ms, 1234.5);
  EXPECT_DOUBLE_EQ(l->prefill_ms_per_token, 0.25);
  EXPECT_DOUBLE_EQ(l->decode_ms_per_token, 12.5);
  EXPECT_TRUE(l->simulated);
  EXPECT_EQ(l->known, kFrugalSignals);

  auto empty = ParseWorkerLoad("{}");  // every field optional, and then unknown
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->known, 0u);
  EXPECT_FALSE(empty->Has(kSignalWaiting));
  EXPECT_FALSE(empty->simulated);
}

TEST(GatewayWorkerLoad, OnlyReportedSignalsCount) {
  // A report's fields count only where `known` says the worker gave them: values left in a field
  // it did not report neither eject the worker nor weigh on routing; its own books decide.
  WorkerPool pool(HealthOptions{});
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:1").ok());
  ASSERT_TRUE(pool.Add("b", "http://127.0.0.1:2").ok());
  WorkerLoad stale = Load(900, 900, 1e6);
  stale.known = kSignalKvUsage;  // only the KV usage was reported
  pool.ReportCheck("a", stale);
  pool.ReportCheck("b", Load(0));
  auto policy = MakePolicy("least_cost");
  ASSERT_TRUE(policy.ok());
  Lease first = pool.Pick(**policy, RequestCost{10, 10}, {});
  Lease second = pool.Pick(**policy, RequestCost{10, 10}, {});
  ASSERT_TRUE(first && second);
  EXPECT_NE(first.name(), second.name());  // 900 waiting on "a" was not read
  for (const auto& w : pool.List()) {
    EXPECT_EQ(w.state, WorkerState::kHealthy) << w.name;  // nor ejected it (max_queue 500)
    EXPECT_EQ(w.est_queue, 1.0) << w.name;
  }
  // The same numbers, reported, eject.
  pool.ReportCheck("a", Load(900, 900, 1e6));
  EXPECT_EQ(pool.List()[0].state, WorkerState::kEjected);
}

TEST(GatewayWorkerLoad, RefusesMalformedOrNegative) {
  for (const char* body :
       {"", "not json", "[]", "3", "null", "{\"waiting\": 1", R"({"waiting": -1})",
        R"({"running": -2})", R"({"backlog_ms": -0.5})", R"({"waiting": "3"})",
        R"({"backlog_ms": "x"})", R"({"simulated": 1})", R"({"running": [1]})"}) {
    auto l = ParseWorkerLoad(body);
    EXPECT_FALSE(l.ok()) << "accepted " << body;
    if (!l.ok()) {
      EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument) << body;
    }
  }
}

// A worker reporting absurd counts (buggy or hostile) must not wrap the pool's arithmetic: it is
// either refused at parse time or ejected for its queue.
TEST(GatewayWorkerLoad, HugeCountsAreRefusedOrEject) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto l = ParseWorkerLoad(R"({"waiting": 9223372036854775807, "running": 1})");
  if (l.ok()) {
    pool.ReportCheck("a", l);  // waiting + running must not overflow into a small queue
    EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected) << "a queue of 2^63 did not eject";
  }
  // A count given as a float out of int64's range must be refused, not converted (UB).
  auto f = ParseWorkerLoad(R"({"waiting": 1e300})");
  EXPECT_FALSE(f.ok());
}

// ---- WorkerPool: health state machine ----

TEST(WorkerPoolTest, AddValidatesNamesUrlsAndWeights) {
  WorkerPool pool(TestHealth());
  EXPECT_TRUE(pool.Add("w-1.a_b", Url(9001), 2).ok());
  EXPECT_FALSE(pool.Add("w-1.a_b", Url(9002)).ok());  // duplicate
  EXPECT_FALSE(pool.Add("", Url(9003)).ok());
  EXPECT_FALSE(pool.Add("a b", Url(9003)).ok());
  EXPECT_FALSE(pool.Add("a\"b", Url(9003)).ok());
  EXPECT_FALSE(pool.Add(std::string(65, 'x'), Url(9003)).ok());
  EXPECT_FALSE(pool.Add("w2", "http://a", 1).ok());
  EXPECT_FALSE(pool.Add("w2", Url(9003), 0).ok());
  EXPECT_FALSE(pool.Add("w2", Url(9003), -1).ok());
  EXPECT_FALSE(pool.Add("w2", Url(9003), std::nan("")).ok());
  EXPECT_EQ(pool.size(), 1u);
  const auto info = InfoOf(pool, "w-1.a_b");
  EXPECT_EQ(info.host, "127.0.0.1");
  EXPECT_EQ(info.port, 9001);
  EXPECT_DOUBLE_EQ(info.weight, 2);
  EXPECT_EQ(info.state, WorkerState::kHealthy);
  EXPECT_EQ(pool.Remove("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(pool.SetDraining("nope", true).code(), StatusCode::kNotFound);
  ASSERT_EQ(pool.Targets().size(), 1u);
  EXPECT_EQ(pool.Targets()[0].name, "w-1.a_b");
  EXPECT_EQ(pool.Targets()[0].port, 9001);
}

TEST(WorkerPoolTest, ThirdConsecutiveFailedCheckEjects) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto rr = Make("round_robin");
  pool.ReportCheck("a", CheckFailed());
  pool.ReportCheck("a", CheckFailed());
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  EXPECT_TRUE(pool.Pick(*rr, {}, {}));
  EXPECT_EQ(pool.ejections(), 0);
  pool.ReportCheck("a", CheckFailed());
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 1);
  EXPECT_EQ(InfoOf(pool, "a").ejections, 1);
  EXPECT_NE(InfoOf(pool, "a").last_error.find("connection refused"), std::string::npos);
  EXPECT_FALSE(pool.Pick(*rr, {}, {}));
  // Still polled while ejected; more failures do not count more ejections.
  EXPECT_EQ(pool.Targets().size(), 1u);
  pool.ReportCheck("a", CheckFailed());
  EXPECT_EQ(pool.ejections(), 1);
}

TEST(WorkerPoolTest, SuccessfulCheckResetsTheFailureCount) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  for (int round = 0; round < 5; ++round) {
    pool.ReportCheck("a", CheckFailed());
    pool.ReportCheck("a", CheckFailed());
    pool.ReportCheck("a", Load(0));
  }
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  EXPECT_EQ(pool.ejections(), 0);
}

TEST(WorkerPoolTest, OverloadedNeverEjectsAndSuccessResetsTheCount) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto rr = Make("round_robin");
  Lease l = pool.Pick(*rr, {}, {});
  ASSERT_TRUE(l);
  for (int i = 0; i < 20; ++i) pool.ReportRequest(l, Outcome::kOverloaded, "HTTP 503");
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  pool.ReportRequest(l, Outcome::kFailure, "HTTP 500");
  pool.ReportRequest(l, Outcome::kFailure, "HTTP 500");
  pool.ReportRequest(l, Outcome::kOverloaded, "HTTP 503");  // neither a failure nor a success
  pool.ReportRequest(l, Outcome::kSuccess);
  pool.ReportRequest(l, Outcome::kFailure, "HTTP 500");
  pool.ReportRequest(l, Outcome::kFailure, "HTTP 500");
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  EXPECT_EQ(pool.ejections(), 0);
  pool.ReportRequest(Lease(), Outcome::kFailure, "ignored");  // an empty lease is a no-op
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
}

TEST(WorkerPoolTest, ThreeFailedRequestsEject) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  auto lc = Make("least_cost");
  Lease l = pool.Pick(*lc, {}, {"b"});
  ASSERT_TRUE(l);
  ASSERT_EQ(l.name(), "a");
  pool.ReportRequest(l, Outcome::kFailure, "connection reset");
  pool.ReportRequest(l, Outcome::kFailure, "connection reset");
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  pool.ReportRequest(l, Outcome::kFailure, "connection reset");
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(StateOf(pool, "b"), WorkerState::kHealthy);
  EXPECT_EQ(pool.ejections(), 1);
  EXPECT_NE(InfoOf(pool, "a").last_error.find("connection reset"), std::string::npos);
  for (int i = 0; i < 10; ++i) {
    Lease other = pool.Pick(*lc, {}, {});
    ASSERT_TRUE(other);
    EXPECT_EQ(other.name(), "b");
  }
}

TEST(WorkerPoolTest, EjectedRecoversThroughHalfOpenWithOneTrialAtATime) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto lc = Make("least_cost");
  for (int i = 0; i < 3; ++i) pool.ReportCheck("a", CheckFailed());
  ASSERT_EQ(StateOf(pool, "a"), WorkerState::kEjected);

  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  {
    Lease trial = pool.Pick(*lc, {}, {});
    ASSERT_TRUE(trial);
    EXPECT_EQ(InfoOf(pool, "a").in_flight, 1);
    for (int i = 0; i < 5; ++i)
      EXPECT_FALSE(pool.Pick(*lc, {}, {})) << "a second trial while half-open";
    pool.ReportRequest(trial, Outcome::kSuccess);
    EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);  // only checks restore it
  }
  {
    Lease next = pool.Pick(*lc, {}, {});  // the trial finished: another may go
    EXPECT_TRUE(next);
  }
  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  EXPECT_TRUE(InfoOf(pool, "a").last_error.empty());
  Lease x = pool.Pick(*lc, {}, {});
  Lease y = pool.Pick(*lc, {}, {});
  EXPECT_TRUE(x);
  EXPECT_TRUE(y);
  EXPECT_EQ(pool.ejections(), 1);
}

TEST(WorkerPoolTest, FailureWhileHalfOpenEjectsAgain) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto lc = Make("least_cost");
  for (int i = 0; i < 3; ++i) pool.ReportCheck("a", CheckFailed());
  pool.ReportCheck("a", Load(0));
  ASSERT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  pool.ReportCheck("a", CheckFailed());  // one failed check is enough while half-open
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 2);

  pool.ReportCheck("a", Load(0));
  ASSERT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  {
    Lease trial = pool.Pick(*lc, {}, {});
    ASSERT_TRUE(trial);
    pool.ReportRequest(trial, Outcome::kFailure, "HTTP 502");  // so is one failed trial request
  }
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 3);
  EXPECT_EQ(InfoOf(pool, "a").ejections, 3);
  EXPECT_FALSE(pool.Pick(*lc, {}, {}));

  // Half-open progress is lost on ejection: it takes restore_after fresh successes.
  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
}

TEST(WorkerPoolTest, QueueOverMaxEjects) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  pool.ReportCheck("a", Load(400, 100));  // 500: at the limit, not over
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  pool.ReportCheck("a", Load(400, 101));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 1);
  EXPECT_NE(InfoOf(pool, "a").last_error.find("501"), std::string::npos)
      << InfoOf(pool, "a").last_error;
  pool.ReportCheck("a", Load(600));  // still over: stays ejected, not counted again
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 1);
  pool.ReportCheck("a", Load(10));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  pool.ReportCheck("a", Load(501));  // over again while half-open
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  EXPECT_EQ(pool.ejections(), 2);
}

TEST(WorkerPoolTest, DrainingGetsNoPicksAndUndrainGoesThroughHalfOpen) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  auto rr = Make("round_robin");
  ASSERT_TRUE(pool.SetDraining("a", true).ok());
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kDraining);
  for (int i = 0; i < 20; ++i) {
    Lease l = pool.Pick(*rr, {}, {});
    ASSERT_TRUE(l);
    EXPECT_EQ(l.name(), "b");
  }
  EXPECT_FALSE(pool.Pick(*rr, {}, {"b"}));
  // Failures while draining neither eject nor count as an ejection.
  for (int i = 0; i < 5; ++i) pool.ReportCheck("a", CheckFailed());
  pool.ReportCheck("a", Load(1000));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kDraining);
  EXPECT_EQ(pool.ejections(), 0);

  ASSERT_TRUE(pool.SetDraining("a", false).ok());
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  {
    Lease trial = pool.Pick(*rr, {}, {"b"});
    ASSERT_TRUE(trial);
    EXPECT_EQ(trial.name(), "a");
    EXPECT_FALSE(pool.Pick(*rr, {}, {"b"}));
  }
  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  pool.ReportCheck("a", Load(0));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
  // Undraining a worker that is not draining changes nothing.
  ASSERT_TRUE(pool.SetDraining("b", false).ok());
  EXPECT_EQ(StateOf(pool, "b"), WorkerState::kHealthy);
}

TEST(WorkerPoolTest, LeaseReleaseRestoresInFlight) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto lc = Make("least_cost");
  const RequestCost cost{100, 10};  // unpolled defaults: 100 * 0.5 + 10 * 20 = 250 ms
  {
    Lease l1 = pool.Pick(*lc, cost, {});
    Lease l2 = pool.Pick(*lc, cost, {});
    ASSERT_TRUE(l1);
    ASSERT_TRUE(l2);
    EXPECT_EQ(l1.host(), "127.0.0.1");
    EXPECT_EQ(l1.port(), 9001);
    auto info = InfoOf(pool, "a");
    EXPECT_EQ(info.in_flight, 2);
    EXPECT_DOUBLE_EQ(info.in_flight_ms, 500);
    EXPECT_DOUBLE_EQ(info.est_queue, 2);
    EXPECT_DOUBLE_EQ(info.est_backlog_ms, 500);
    EXPECT_EQ(info.chosen, 2);

    Lease moved = std::move(l1);  // a move transfers the hold, it does not release it
    EXPECT_FALSE(l1);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(InfoOf(pool, "a").in_flight, 2);
    l2 = std::move(moved);  // assigning releases what l2 held
    EXPECT_EQ(InfoOf(pool, "a").in_flight, 1);
    EXPECT_DOUBLE_EQ(InfoOf(pool, "a").in_flight_ms, 250);
  }
  auto info = InfoOf(pool, "a");
  EXPECT_EQ(info.in_flight, 0);
  EXPECT_DOUBLE_EQ(info.in_flight_ms, 0);
  EXPECT_EQ(info.chosen, 2);
}

TEST(WorkerPoolTest, RemoveWhileLeasedIsSafe) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  auto lc = Make("least_cost");
  Lease l = pool.Pick(*lc, {10, 10}, {"b"});
  ASSERT_TRUE(l);
  ASSERT_TRUE(pool.Remove("a").ok());
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(l.name(), "a");  // the lease still sees its worker
  for (int i = 0; i < 5; ++i) pool.ReportRequest(l, Outcome::kFailure, "gone");
  pool.ReportCheck("a", CheckFailed());  // a poll answering after the removal
  EXPECT_EQ(pool.ejections(), 0);
  l = Lease();  // released into a removed worker
  EXPECT_FALSE(l);
  EXPECT_EQ(pool.size(), 1u);
  ASSERT_TRUE(pool.Add("a", Url(9003)).ok());  // the name is free again
  EXPECT_EQ(InfoOf(pool, "a").in_flight, 0);
  EXPECT_EQ(InfoOf(pool, "a").port, 9003);
}

TEST(WorkerPoolTest, ExcludeSkipsWorkersAlreadyTried) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  ASSERT_TRUE(pool.Add("c", Url(9003)).ok());
  for (const char* p : {"round_robin", "queue_weighted", "least_cost", "p2c"}) {
    auto policy = Make(p);
    for (int i = 0; i < 30; ++i) {
      Lease l = pool.Pick(*policy, {}, {"a", "c"});
      ASSERT_TRUE(l) << p;
      EXPECT_EQ(l.name(), "b") << p;
    }
    EXPECT_FALSE(pool.Pick(*policy, {}, {"a", "b", "c"})) << p;
  }
}

// ---- policies ----

TEST(PolicyTest, MakePolicyKnowsItsNames) {
  auto bad = MakePolicy("random");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("random"), std::string::npos);
  EXPECT_FALSE(MakePolicy("").ok());
  EXPECT_FALSE(MakePolicy("P2C").ok());
  const auto names = PolicyNames();
  EXPECT_EQ(names.size(), 4u);
  for (const auto& n : names) {
    auto p = MakePolicy(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
}

TEST(PolicyTest, RoundRobinCyclesEvenlyOverCandidates) {
  auto rr = Make("round_robin");
  std::mt19937_64 rng(1);
  std::vector<Candidate> c(3);
  for (size_t i = 0; i < c.size(); ++i) c[i].index = i;
  std::vector<int> counts(3, 0);
  std::vector<size_t> seq;
  for (int i = 0; i < 300; ++i) {
    const size_t p = rr->Pick(c, rng);
    ASSERT_LT(p, c.size());
    ++counts[p];
    seq.push_back(p);
  }
  EXPECT_EQ(counts, (std::vector<int>{100, 100, 100}))
      << counts[0] << " " << counts[1] << " " << counts[2];
  for (size_t i = 0; i + 1 < seq.size(); ++i) {
    EXPECT_NE(seq[i], seq[i + 1]) << "the same worker twice in a row at pick " << i;
    if (seq[i] == seq[i + 1]) break;
  }
}

TEST(PolicyTest, RoundRobinThroughThePoolSharesEvenlyAndSkipsEjected) {
  WorkerPool pool(TestHealth());
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(pool.Add(std::string("w").append(std::to_string(i)), Url(9001 + i)).ok());
  auto rr = Make("round_robin");
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(pool.Pick(*rr, {}, {}));
  for (const auto& w : pool.List()) EXPECT_EQ(w.chosen, 100) << w.name;
  for (int i = 0; i < 3; ++i) pool.ReportCheck("w1", CheckFailed());
  ASSERT_EQ(StateOf(pool, "w1"), WorkerState::kEjected);
  for (int i = 0; i < 200; ++i) {
    Lease l = pool.Pick(*rr, {}, {});
    ASSERT_TRUE(l);
    EXPECT_NE(l.name(), "w1");
  }
  EXPECT_EQ(InfoOf(pool, "w0").chosen, 200);
  EXPECT_EQ(InfoOf(pool, "w2").chosen, 200);
}

TEST(PolicyTest, LeastCostPicksTheSoonestFinishPerWeight) {
  auto lc = Make("least_cost");
  // finish = (backlog + cost) / weight: 110, 77.5, 150, 120.
  std::vector<Candidate> c = {
      {0, 1, 100, 10, 1}, {1, 9, 300, 10, 4}, {2, 0, 50, 100, 1}, {3, 2, 230, 10, 2}};
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::mt19937_64 rng(seed);
    EXPECT_EQ(lc->Pick(c, rng), 1u) << "seed " << seed;
  }
  // Equal finish: the shorter queue wins.
  std::vector<Candidate> tie = {{0, 5, 100, 0, 1}, {1, 2, 100, 0, 1}, {2, 7, 100, 0, 1}};
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::mt19937_64 rng(seed);
    EXPECT_EQ(lc->Pick(tie, rng), 1u) << "seed " << seed;
  }
  // A fully idle, equal fleet: ties broken at random, every worker used.
  std::vector<Candidate> idle(4);
  for (size_t i = 0; i < idle.size(); ++i) idle[i].index = i;
  std::mt19937_64 rng(7);
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 400; ++i) ++counts[lc->Pick(idle, rng)];
  for (int n : counts) EXPECT_GT(n, 50);
}

TEST(PolicyTest, P2cNeverPicksTheWorst) {
  auto p2c = Make("p2c");
  std::mt19937_64 rng(42);
  for (size_t n = 2; n <= 6; ++n) {
    std::vector<Candidate> c(n);
    for (size_t i = 0; i < n; ++i)
      c[i] = {i, 0, 100.0 * static_cast<double>((i * 7 + 3) % n), 10, 1};  // distinct
    size_t worst = 0;
    for (size_t i = 1; i < n; ++i) {
      if (c[i].finish_ms() > c[worst].finish_ms()) worst = i;
    }
    std::vector<int> counts(n, 0);
    for (int k = 0; k < 3000; ++k) {
      const size_t p = p2c->Pick(c, rng);
      ASSERT_LT(p, n);
      ++counts[p];
    }
    EXPECT_EQ(counts[worst], 0) << "n=" << n;
    if (n == 2) {
      EXPECT_EQ(counts[1 - worst], 3000);
    }
    if (n == 3) {
      // The best wins whenever it is sampled (2 of 3 pairs), the middle one otherwise.
      size_t best = 0;
      for (size_t i = 1; i < n; ++i) {
        if (c[i].finish_ms() < c[best].finish_ms()) best = i;
      }
      EXPECT_NEAR(counts[best] / 3000.0, 2.0 / 3, 0.05);
    }
  }
  std::vector<Candidate> one = {{5, 0, 0, 0, 1}};
  EXPECT_EQ(p2c->Pick(one, rng), 0u);
}

TEST(PolicyTest, QueueWeightedFollowsWeightOverQueue) {
  auto qw = Make("queue_weighted");
  std::mt19937_64 rng(12345);
  // weight / (queue + 1): 1, 1, 0.25, 2.
  std::vector<Candidate> c = {{0, 0, 0, 0, 1}, {1, 1, 0, 0, 2}, {2, 3, 0, 0, 1}, {3, 1, 0, 0, 4}};
  const std::vector<double> w = {1, 1, 0.25, 2};
  double total_w = 0;
  for (double x : w) total_w += x;
  constexpr int kPicks = 20000;
  std::vector<int> counts(c.size(), 0);
  for (int i = 0; i < kPicks; ++i) ++counts[qw->Pick(c, rng)];
  double chi2 = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double expected = kPicks * w[i] / total_w;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 16.3) << counts[0] << " " << counts[1] << " " << counts[2] << " "
                        << counts[3];  // 3 dof, p = 0.001
}

// ---- prefix-aware routing ----

// Workers "a" and "b", polled idle: 1 ms per prompt token, 10 per generated one.
std::unique_ptr<WorkerPool> TwoIdleWorkers() {
  auto pool = std::make_unique<WorkerPool>(TestHealth());
  EXPECT_TRUE(pool->Add("a", Url(9001)).ok());
  EXPECT_TRUE(pool->Add("b", Url(9002)).ok());
  pool->ReportCheck("a", Load(0, 0, 0, 1, 10));
  pool->ReportCheck("b", Load(0, 0, 0, 1, 10));
  return pool;
}

// The prefixes of a conversation: the system prompt (1000 characters), then `turns` turns of
// 200 characters each; `id` tells conversations apart from the second key on.
RequestPrefix Conversation(int id, int turns) {
  RequestPrefix p;
  p.keys.push_back({42, 1000});  // the shared system prompt
  for (int t = 1; t <= turns; ++t) {
    p.keys.push_back({static_cast<uint64_t>(id) * 1000 + static_cast<uint64_t>(t), 1000 + 200 * t});
  }
  p.prompt_chars = p.keys.back().chars;
  return p;
}

TEST(PrefixIndexTest, TheLongestPrefixSentToAWorkerCounts) {
  PrefixIndex index(/*capacity=*/100, /*workers_per_prefix=*/2);
  const auto conv = Conversation(1, 3);
  index.Record(std::span(conv.keys).first(2), "a");  // turn 1 went to a
  EXPECT_EQ(index.Matched(conv.keys, "a"), 1200);
  EXPECT_EQ(index.Matched(conv.keys, "b"), 0);
  index.Record(conv.keys, "b");  // turn 3 went to b: both have the start, b all of it
  EXPECT_EQ(index.Matched(conv.keys, "a"), 1200);
  EXPECT_EQ(index.Matched(conv.keys, "b"), 1600);
  index.Record(std::span(conv.keys).first(1), "c");  // a third worker on the shared prefix:
  EXPECT_EQ(index.Matched(std::span(conv.keys).first(1), "a"), 0);  // a, least recent, drops
  EXPECT_EQ(index.Matched(conv.keys, "c"), 1000);
  index.Forget("b");
  EXPECT_EQ(index.Matched(conv.keys, "b"), 0);
  // A prefix continued in two ways (two conversations on one system prompt) is shared: every
  // worker is credited with it, not only those it went to.
  const auto other = Conversation(2, 1);
  EXPECT_EQ(index.Matched(other.keys, "z"), 0);
  index.Record(other.keys, "c");
  EXPECT_EQ(index.Matched(other.keys, "z"), 1000);
  EXPECT_EQ(index.Matched(other.keys, "c"), 1200);
  // Bounded: the least recently routed prefixes go first.
  PrefixIndex small(3);
  for (int i = 0; i < 5; ++i) {
    const PrefixKey k{static_cast<uint64_t>(i), 10};
    small.Record(std::span(&k, 1), "a");
  }
  EXPECT_EQ(small.size(), 3u);
  const PrefixKey oldest{0, 10}, newest{4, 10};
  EXPECT_EQ(small.Matched(std::span(&oldest, 1), "a"), 0);
  EXPECT_EQ(small.Matched(std::span(&newest, 1), "a"), 10);
}

TEST(WorkerPoolPrefixTest, AFollowUpGoesWhereItsConversationWasUnlessThatWorkerIsFarBehind) {
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "prefix routing on" : "off");
    auto owner = TwoIdleWorkers();
    WorkerPool& pool = *owner;
    pool.set_prefix_routing(on);
    auto lc = Make("least_cost");
    const auto turn1 = Conversation(1, 1);  // 1200 characters: 300 tokens
    Lease t1 = pool.Pick(*lc, {300, 10}, {}, &turn1);
    ASSERT_TRUE(t1);
    const std::string home = t1.name(), other = home == "a" ? "b" : "a";
    t1 = Lease();
    // Its worker is busier now (200 ms of others' work), but turn 2 (1400 characters, 350
    // tokens) would prefill only the last 200 characters there: 50 ms instead of 350.
    pool.ReportCheck(home, Load(0, 1, 200, 1, 10));
    const auto turn2 = Conversation(1, 2);
    Lease f = pool.Pick(*lc, {350, 10}, {}, &turn2);
    ASSERT_TRUE(f);
    EXPECT_EQ(f.name(), on ? home : other);
    f = Lease();
    // Far behind (5 s of backlog): the prefill it saves does not make up for the wait.
    pool.ReportCheck(home, Load(3, 1, 5000, 1, 10));
    pool.ReportCheck(other, Load(0, 0, 0, 1, 10));
    const auto turn3 = Conversation(1, 3);
    Lease g = pool.Pick(*lc, {400, 10}, {}, &turn3);
    ASSERT_TRUE(g);
    EXPECT_EQ(g.name(), other);
    EXPECT_EQ(pool.prefix_routed() > 0, on);
  }
}

TEST(WorkerPoolPrefixTest, NewConversationsOnOneSystemPromptSpreadOverAnIdleFleet) {
  auto owner = TwoIdleWorkers();
  WorkerPool& pool = *owner;
  auto lc = Make("least_cost");
  // One conversation at a time, each done before the next: nothing in flight ever tells the
  // workers apart but what they were sent. The system prompt must not pin them all to the
  // first worker that had it.
  std::map<std::string, int> per;
  for (int i = 0; i < 40; ++i) {
    const auto conv = Conversation(200 + i, 1);
    Lease l = pool.Pick(*lc, {300, 10}, {}, &conv);
    ASSERT_TRUE(l);
    ++per[l.name()];
  }
  EXPECT_GE(per["a"], 10);
  EXPECT_GE(per["b"], 10);
}

TEST(WorkerPoolPrefixTest, AHotSharedSystemPromptDoesNotHerd) {
  auto owner = TwoIdleWorkers();
  WorkerPool& pool = *owner;
  auto lc = Make("least_cost");
  const RequestCost cost{400, 10};
  // New conversations all share the system prompt: both workers were sent it, so it favours
  // neither, and held requests spread evenly.
  std::vector<Lease> held;
  std::map<std::string, int> per;
  for (int i = 0; i < 40; ++i) {
    const auto conv = Conversation(100 + i, 1);
    held.push_back(pool.Pick(*lc, cost, {}, &conv));
    ASSERT_TRUE(held.back());
    ++per[held.back().name()];
  }
  EXPECT_EQ(per["a"], 20);
  EXPECT_EQ(per["b"], 20);
}

// ---- load estimation between polls ----

TEST(WorkerPoolLoadTest, HeldLeasesSteerLeastCostBetweenPolls) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  auto lc = Make("least_cost");
  pool.ReportCheck("a", Load(2, 1, 800, 1, 10));
  pool.ReportCheck("b", Load(2, 1, 800, 1, 10));
  const RequestCost cost{0, 10};  // 100 ms on either
  std::vector<Lease> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(pool.Pick(*lc, cost, {}));
    ASSERT_TRUE(held.back());
    if (i % 2 == 1) {
      EXPECT_NE(held[static_cast<size_t>(i)].name(), held[static_cast<size_t>(i) - 1].name())
          << "pick " << i;
    }
  }
  for (const char* n : {"a", "b"}) {
    const auto info = InfoOf(pool, n);
    EXPECT_EQ(info.in_flight, 10) << n;
    EXPECT_DOUBLE_EQ(info.est_queue, 13) << n;  // 10 own + 3 polled that were not ours
    EXPECT_DOUBLE_EQ(info.est_backlog_ms, 1800) << n;
  }
}

TEST(WorkerPoolLoadTest, APollThatSawOnlyOurRequestsLeavesNoBacklogOnceTheyFinish) {
  auto owner = TwoIdleWorkers();
  WorkerPool& pool = *owner;
  auto lc = Make("least_cost");
  Lease mine = pool.Pick(*lc, {10, 10}, {});  // 110 ms by our estimate
  ASSERT_TRUE(mine);
  const std::string name = mine.name();
  // The worker costs it higher (900 ms) and has nothing else: all of it is ours.
  pool.ReportCheck(name, Load(0, 1, 900, 1, 10));
  EXPECT_DOUBLE_EQ(InfoOf(pool, name).est_backlog_ms, 110);
  mine = Lease();
  EXPECT_DOUBLE_EQ(InfoOf(pool, name).est_backlog_ms, 0);
  // One request beyond ours at the poll: that part of its backlog stays until the next poll.
  Lease again = pool.Pick(*lc, {10, 10}, {});
  ASSERT_TRUE(again);
  const std::string second = again.name();
  pool.ReportCheck(second, Load(1, 1, 900, 1, 10));
  again = Lease();
  EXPECT_DOUBLE_EQ(InfoOf(pool, second).est_backlog_ms, 790);
}

TEST(WorkerPoolLoadTest, APolledBacklogIsFilledUntilBalanced) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("b", Url(9002)).ok());
  auto lc = Make("least_cost");
  pool.ReportCheck("a", Load(0, 0, 5000, 1, 10));
  pool.ReportCheck("b", Load(0, 0, 0, 1, 10));
  const RequestCost cost{0, 10};
  std::vector<Lease> held;
  for (int i = 0; i < 50; ++i) {
    held.push_back(pool.Pick(*lc, cost, {}));
    ASSERT_TRUE(held.back());
    EXPECT_EQ(held.back().name(), "b") << "pick " << i;
  }
  // Now b's own in-flight cost equals a's polled backlog: the shorter queue (a's) wins.
  held.push_back(pool.Pick(*lc, cost, {}));
  EXPECT_EQ(held.back().name(), "a");
}

TEST(WorkerPoolLoadTest, OwnInFlightIsNotCountedTwiceAfterAPoll) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("a", Url(9001)).ok());
  auto lc = Make("least_cost");
  pool.ReportCheck("a", Load(0, 0, 0, 1, 10));
  const RequestCost cost{0, 10};
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool.Pick(*lc, cost, {}));
  // The worker reports exactly our three requests.
  pool.ReportCheck("a", Load(1, 2, 300, 1, 10));
  auto info = InfoOf(pool, "a");
  EXPECT_DOUBLE_EQ(info.est_queue, 3);
  EXPECT_DOUBLE_EQ(info.est_backlog_ms, 300);
  held.clear();  // they finish before the next poll
  info = InfoOf(pool, "a");
  EXPECT_EQ(info.in_flight, 0);
  EXPECT_DOUBLE_EQ(info.est_queue, 0);
  EXPECT_DOUBLE_EQ(info.est_backlog_ms, 0);
  // Someone else's two requests show up in the next poll.
  pool.ReportCheck("a", Load(2, 0, 200, 1, 10));
  info = InfoOf(pool, "a");
  EXPECT_DOUBLE_EQ(info.est_queue, 2);
  EXPECT_DOUBLE_EQ(info.est_backlog_ms, 200);
}

// llama.cpp's server while busy: its queue is known, the time its requests take is not.
TEST(WorkerPoolLoadTest, AQueueWithoutABacklogIsCostedAsTypicalRequests) {
  WorkerPool pool(TestHealth());
  ASSERT_TRUE(pool.Add("busy", Url(9001)).ok());
  ASSERT_TRUE(pool.Add("idle", Url(9002)).ok());
  WorkerLoad busy = Load(4, 2, 0, 1, 10);
  busy.known &= ~kSignalBacklog;
  WorkerLoad idle = Load(0, 0, 0, 1, 10);
  idle.known &= ~kSignalBacklog;
  pool.ReportCheck("busy", busy);
  pool.ReportCheck("idle", idle);
  auto p2c = Make("p2c");
  const RequestCost cost{20, 30};  // 20 * 1 + 30 * 10 = 320 ms on either
  {
    Lease l = pool.Pick(*p2c, cost, {});
    ASSERT_TRUE(l);
    EXPECT_EQ(l.name(), "idle");
  }
  // 6 requests that are not the gateway's, 2 at a time, each costed like this one.
  EXPECT_DOUBLE_EQ(InfoOf(pool, "busy").est_backlog_ms, 6 * 320.0 / 2);
  EXPECT_DOUBLE_EQ(InfoOf(pool, "idle").est_backlog_ms, 0);
  // The busy one gets traffic again only once the idle one holds as much of the gateway's
  // (3 x 320 ms; at the tie, the shorter queue wins).
  std::vector<Lease> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(pool.Pick(*p2c, cost, {}));
    EXPECT_EQ(held.back().name(), "idle") << "pick " << i;
  }
  held.push_back(pool.Pick(*p2c, cost, {}));
  EXPECT_EQ(held.back().name(), "busy");
  // Without a queue either, nothing is assumed: only the gateway's own books.
  WorkerLoad none;
  pool.ReportCheck("busy", none);
  EXPECT_DOUBLE_EQ(InfoOf(pool, "busy").est_backlog_ms, 320);
}

// ---- ParseGatewayConfig ----

TEST(ConfigTest, FullYamlParses) {
  const std::string yaml = R"(
listen:
  host: 0.0.0.0
  port: 9000
  http_threads: 8
policy: least_cost
default_max_tokens: 128
admin_token: s3cret
workers:
  - name: gpu-0
    url: http://10.0.0.1:8080
    weight: 2.5
  - url: http://10.0.0.2:8080/
health:
  interval_ms: 250
  timeout_ms: 100
  eject_after: 5
  restore_after: 4
  max_queue: 64
retries:
  max: 3
  backoff_ms: 10
limits:
  max_body_bytes: 4096
  request_timeout_s: 30.5
cache:
  enabled: false
  model: models/other
  threads: 2
  threshold: 0.9
  namespace_thresholds:
    tenant-a: 0.95
  ttl_s: 60
  capacity: 1000
  snapshot: /tmp/cache.snap
  snapshot_interval_s: 30
  context_turns: 2
  nondeterministic: true
api_keys:
  - key: k1
    name: alice
    rate_per_s: 5
    burst: 10
  - key: k2
    name: bob
admin_listen: 127.0.0.1:9001
status_access: admin
)";
  auto c = ParseGatewayConfig(yaml);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->host, "0.0.0.0");
  EXPECT_EQ(c->port, 9000);
  EXPECT_EQ(c->http_threads, 8);
  EXPECT_EQ(c->policy, "least_cost");
  EXPECT_EQ(c->default_max_tokens, 128);
  EXPECT_EQ(c->admin_token, "s3cret");
  ASSERT_EQ(c->workers.size(), 2u);
  EXPECT_EQ(c->workers[0].name, "gpu-0");
  EXPECT_EQ(c->workers[0].url, "http://10.0.0.1:8080");
  EXPECT_DOUBLE_EQ(c->workers[0].weight, 2.5);
  EXPECT_EQ(c->workers[1].name, "w1");  // a default name
  EXPECT_DOUBLE_EQ(c->workers[1].weight, 1);
  EXPECT_EQ(c->health.interval.count(), 250);
  EXPECT_EQ(c->health.timeout.count(), 100);
  EXPECT_EQ(c->health.eject_after, 5);
  EXPECT_EQ(c->health.restore_after, 4);
  EXPECT_EQ(c->health.max_queue, 64);
  EXPECT_EQ(c->max_retries, 3);
  EXPECT_EQ(c->retry_backoff_ms, 10);
  EXPECT_EQ(c->max_body_bytes, 4096);
  EXPECT_DOUBLE_EQ(c->request_timeout_s, 30.5);
  EXPECT_FALSE(c->cache.enabled);
  EXPECT_EQ(c->cache.model, "models/other");
  EXPECT_EQ(c->cache.threads, 2);
  EXPECT_FLOAT_EQ(c->cache.threshold, 0.9f);
  ASSERT_EQ(c->cache.namespace_threshold.count("tenant-a"), 1u);
  EXPECT_FLOAT_EQ(c->cache.namespace_threshold.at("tenant-a"), 0.95f);
  EXPECT_EQ(c->cache.ttl_s, 60);
  EXPECT_EQ(c->cache.capacity, 1000);
  EXPECT_EQ(c->cache.snapshot, "/tmp/cache.snap");
  EXPECT_EQ(c->cache.snapshot_interval_s, 30);
  EXPECT_EQ(c->cache.context_turns, 2);
  EXPECT_TRUE(c->cache.nondeterministic);
  ASSERT_EQ(c->api_keys.size(), 2u);
  EXPECT_EQ(c->api_keys[0].key, "k1");
  EXPECT_EQ(c->api_keys[0].name, "alice");
  EXPECT_DOUBLE_EQ(c->api_keys[0].rate_per_s, 5);
  EXPECT_DOUBLE_EQ(c->api_keys[0].burst, 10);
  EXPECT_EQ(c->api_keys[1].name, "bob");
  EXPECT_DOUBLE_EQ(c->api_keys[1].rate_per_s, 0);
  EXPECT_EQ(c->admin_listen, "127.0.0.1:9001");
  EXPECT_EQ(c->status_access, "admin");
}

// The hit decision (issue 47): learned by default at target precision 0.95; the previous rule
// verifier by name; anything else, or a target outside [0.5, 1], refused naming the key.
TEST(ConfigTest, CacheDecisionAndTargetPrecision) {
  auto d = ParseGatewayConfig("cache:\n  enabled: true\n");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->cache.decision, cache::DecisionKind::kLearned);
  EXPECT_DOUBLE_EQ(d->cache.target_precision, 0.95);
  auto c = ParseGatewayConfig("cache:\n  decision: rules\n  target_precision: 0.9\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.decision, cache::DecisionKind::kRules);
  EXPECT_DOUBLE_EQ(c->cache.target_precision, 0.9);
  auto bad = ParseGatewayConfig("cache:\n  decision: cosine\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cache.decision"), std::string::npos);
  auto low = ParseGatewayConfig("cache:\n  target_precision: 0.3\n");
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.status().message().find("cache.target_precision"), std::string::npos);
}

// The key's name is the tenant (the cache's scope of its answers): it must be given, and given
// once, so that reordering the list can never hand one tenant another's answers.
TEST(ConfigTest, ApiKeysNeedTheirOwnUniqueNames) {
  auto unnamed = ParseGatewayConfig("api_keys:\n  - key: k1\n    name: a\n  - key: k2\n");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_NE(unnamed.status().message().find("api key #2 has no name"), std::string::npos)
      << unnamed.status().message();
  auto twice = ParseGatewayConfig("api_keys:\n  - {key: k1, name: a}\n  - {key: k2, name: a}\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'a' is used twice"), std::string::npos)
      << twice.status().message();
  auto same_key = ParseGatewayConfig("api_keys:\n  - {key: k1, name: a}\n  - {key: k1, name: b}\n");
  EXPECT_FALSE(same_key.ok());
}

TEST(ConfigTest, CacheAuditKeys) {
  auto d = ParseGatewayConfig("policy: p2c\n");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_DOUBLE_EQ(d->cache_audit.rate, 0.01);
  EXPECT_DOUBLE_EQ(d->cache_audit.min_similarity, 0.85);
  EXPECT_EQ(d->cache_audit.max_in_flight, 2);
  auto c = ParseGatewayConfig(
      "cache:\n  audit_rate: 1\n  audit_min_similarity: 0.9\n  audit_max_in_flight: 0\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->cache_audit.rate, 1);
  EXPECT_DOUBLE_EQ(c->cache_audit.min_similarity, 0.9);
  EXPECT_EQ(c->cache_audit.max_in_flight, 0);
  for (const char* bad : {"cache:\n  audit_rate: 1.5\n", "cache:\n  audit_rate: -0.1\n",
                          "cache:\n  audit_min_similarity: 2\n", "cache:\n  audit_rat: 0.5\n",
                          "cache:\n  audit_max_in_flight: -1\n"}) {
    EXPECT_FALSE(ParseGatewayConfig(bad).ok()) << bad;
  }
}

TEST(ConfigTest, SecretsComeFromFilesAndTheEnvironment) {
  frugal::testing::TempDir tmp("frugal_gateway_secrets");
  const std::string dir = tmp.dir().string();
  auto write = [&](const std::string& name, const std::string& text) {
    return tmp.Write(name, text);
  };
  GatewayConfig c;
  c.admin_token_file = write("admin.token", "  tok-from-file \nignored\n");
  c.api_keys_file = write("keys.yaml", "- {key: sk-1, name: team-a, rate_per_s: 2}\n");
  c.worker_api_key_file = write("worker.key", "wk\n");
  c.workers.push_back({});
  c.workers.back().name = "gpu";
  c.workers.back().url = "http://127.0.0.1:9";
  c.workers.back().api_key_file = write("gpu.key", "gk");
  std::vector<std::string> warnings;
  ASSERT_TRUE(LoadGatewaySecrets(c, &warnings).ok());
  EXPECT_EQ(c.admin_token, "tok-from-file");
  ASSERT_EQ(c.api_keys.size(), 1u);
  EXPECT_EQ(c.api_keys[0].name, "team-a");
  EXPECT_EQ(c.worker_api_key, "wk");
  EXPECT_EQ(c.workers[0].api_key, "gk");

  {  // FRUGAL_ADMIN_TOKEN when no token is configured.
    frugal::testing::ScopedEnv env("FRUGAL_ADMIN_TOKEN", "tok-from-env");
    GatewayConfig e;
    ASSERT_TRUE(LoadGatewaySecrets(e).ok());
    EXPECT_EQ(e.admin_token, "tok-from-env");
  }

  GatewayConfig bad;
  bad.admin_token_file = dir + "/no-such-file";
  EXPECT_EQ(LoadGatewaySecrets(bad).code(), StatusCode::kNotFound);
  GatewayConfig empty;
  empty.admin_token_file = write("empty.token", "\n");
  EXPECT_EQ(LoadGatewaySecrets(empty).code(), StatusCode::kInvalidArgument);
  GatewayConfig unnamed;
  unnamed.api_keys_file = write("unnamed.yaml", "- {key: sk-2}\n");
  EXPECT_EQ(LoadGatewaySecrets(unnamed).code(), StatusCode::kInvalidArgument);
}

TEST(ConfigTest, WorkerKindParsesAndABadOneIsRefusedByName) {
  auto c = ParseGatewayConfig(
      "workers:\n  - {name: a, url: \"http://10.0.0.1:8000\", kind: vllm}\n"
      "  - {name: b, url: \"http://10.0.0.2:8000\"}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->workers[0].kind, WorkerKind::kVllm);
  EXPECT_EQ(c->workers[1].kind, WorkerKind::kAuto);  // detected at the first poll
  auto bad = ParseGatewayConfig("workers:\n  - {name: a, url: \"http://h:1\", kind: trt}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("worker 'a'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("vllm"), std::string::npos) << bad.status().message();
}

TEST(ConfigTest, RedisCacheParses) {
  auto c = ParseGatewayConfig(
      "cache:\n  redis: redis://10.0.0.9:6380\n  redis_prefix: shop:cache\n  redis_timeout_ms: "
      "250\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->cache.redis, "redis://10.0.0.9:6380");
  EXPECT_EQ(c->cache.redis_prefix, "shop:cache");
  EXPECT_EQ(c->cache.redis_timeout_ms, 250);
  auto d = ParseGatewayConfig("");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->cache.redis.empty());  // the embedded cache by default
  EXPECT_EQ(d->cache.redis_prefix, "frugal:cache");
}

TEST(ConfigTest, HnswParametersParse) {
  auto c = ParseGatewayConfig(
      "cache:\n  hnsw_m: 32\n  hnsw_ef_construction: 400\n  hnsw_ef_search: 64\n  exact_match: "
      "false\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->cache.hnsw_m, 32);
  EXPECT_EQ(c->cache.hnsw_ef_construction, 400);
  EXPECT_EQ(c->cache.hnsw_ef_search, 64);
  EXPECT_FALSE(c->cache.exact_match);
  auto d = ParseGatewayConfig("");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cache.hnsw_ef_search,
            static_cast<int64_t>(cache::HnswParams{}.ef_search));  // the library's default
  EXPECT_TRUE(d->cache.exact_match);
}

TEST(ConfigTest, EmptyConfigIsTheDefaults) {
  for (const char* text : {"", "# nothing\n", "~"}) {
    auto c = ParseGatewayConfig(text);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->policy, "p2c");
    EXPECT_EQ(c->port, 8000);
    EXPECT_TRUE(c->workers.empty());
    EXPECT_TRUE(ValidateGatewayConfig(*c).ok());
  }
}

void ExpectRefused(const std::string& yaml, const std::string& mention) {
  auto c = ParseGatewayConfig(yaml);
  ASSERT_FALSE(c.ok()) << "accepted:\n" << yaml;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << yaml;
  EXPECT_NE(c.status().message().find(mention), std::string::npos)
      << "'" << c.status().message() << "' does not mention '" << mention << "' for:\n"
      << yaml;
}

TEST(ConfigTest, UnknownKeysAreRefusedByName) {
  ExpectRefused("polcy: p2c\n", "polcy");
  ExpectRefused("listen:\n  hots: 0.0.0.0\n", "hots");
  ExpectRefused("health:\n  eject_afterr: 3\n", "eject_afterr");
  ExpectRefused("workers:\n  - url: http://a:1\n    wieght: 2\n", "wieght");
  ExpectRefused("cache:\n  treshold: 0.9\n", "treshold");
  ExpectRefused("api_keys:\n  - key: k\n    rate: 5\n", "rate");
  ExpectRefused("retries:\n  maximum: 1\n", "maximum");
  ExpectRefused("limits:\n  max_body: 1\n", "max_body");
}

TEST(ConfigTest, BadValuesAreRefused) {
  ExpectRefused("policy: random\n", "random");
  ExpectRefused("workers:\n  - name: a\n    url: http://h:1\n  - name: a\n    url: http://h:2\n",
                "'a'");
  ExpectRefused("workers:\n  - url: http://h:1\n  - name: w0\n    url: http://h:2\n",
                "w0");  // clashes with a default name
  ExpectRefused("workers:\n  - name: a\n    url: h:1\n", "h:1");
  ExpectRefused("workers:\n  - name: a\n    url: http://h:0\n", "http://h:0");
  ExpectRefused("workers:\n  - name: a\n    url: http://h:1\n    weight: 0\n", "weight");
  ExpectRefused("workers: http://h:1\n", "workers");
  ExpectRefused("cache:\n  threshold: 1.5\n", "threshold");
  ExpectRefused("cache:\n  threshold: -0.2\n", "threshold");
  ExpectRefused("cache:\n  redis: redis://h:99999\n", "cache.redis");
  ExpectRefused("cache:\n  redis: redis://user@h:1\n", "cache.redis");
  ExpectRefused("cache:\n  redis: h:6379\n  redis_timeout_ms: 0\n", "redis_timeout_ms");
  ExpectRefused("cache:\n  redis: h:6379\n  snapshot: /tmp/x\n", "snapshot");
  ExpectRefused("cache:\n  namespace_thresholds:\n    t: 2\n", "t");
  ExpectRefused("cache:\n  namespace_thresholds: [1]\n", "namespace_thresholds");
  ExpectRefused("cache:\n  threads: 0\n", "threads");
  ExpectRefused("cache:\n  hnsw_m: 1\n", "hnsw_m");
  ExpectRefused("cache:\n  hnsw_ef_construction: 8\n", "hnsw_ef_construction");  // below m (16)
  ExpectRefused("cache:\n  hnsw_ef_search: 2\n", "hnsw_ef_search");
  ExpectRefused("cache:\n  ttl_s: 0\n", "ttl_s");
  ExpectRefused("health:\n  eject_after: 0\n", "eject_after");
  ExpectRefused("health:\n  restore_after: 0\n", "restore_after");
  ExpectRefused("health:\n  max_queue: 0\n", "max_queue");
  ExpectRefused("health:\n  interval_ms: 5\n", "interval_ms");
  ExpectRefused("health:\n  eject_after: three\n", "");
  ExpectRefused("listen:\n  http_threads: 0\n", "http_threads");
  ExpectRefused("listen:\n  port: 70000\n", "");
  ExpectRefused("listen:\n  port: -1\n", "");
  ExpectRefused("retries:\n  max: 11\n", "retries.max");
  ExpectRefused("retries:\n  backoff_ms: -1\n", "backoff_ms");
  ExpectRefused("limits:\n  max_body_bytes: 0\n", "max_body_bytes");
  ExpectRefused("limits:\n  request_timeout_s: 0\n", "request_timeout_s");
  ExpectRefused("default_max_tokens: 0\n", "default_max_tokens");
  ExpectRefused("api_keys:\n  - name: x\n", "empty");
  ExpectRefused("api_keys:\n  - {key: k, name: a}\n  - {key: k, name: b}\n", "twice");
  ExpectRefused("api_keys:\n  - key: k\n    name: a\n    rate_per_s: -1\n", "rate");
  ExpectRefused("- a\n- b\n", "mapping");
  ExpectRefused("listen: 8000\n", "listen");
  ExpectRefused("{unclosed: [\n", "config");
}

// The gateway turns these into integer durations (request_timeout_s * 1e3 into int64
// milliseconds, retries.backoff_ms * 1e3 * 2^retry into microseconds, health.interval_ms into a
// steady_clock deadline): values that overflow there must be refused here.
TEST(ConfigTest, DurationsThatOverflowAreRefused) {
  ExpectRefused("limits:\n  request_timeout_s: .inf\n", "request_timeout_s");
  ExpectRefused("limits:\n  request_timeout_s: 1e300\n", "request_timeout_s");
  ExpectRefused("retries:\n  backoff_ms: 9223372036854775807\n", "backoff_ms");
  ExpectRefused("health:\n  interval_ms: 9223372036854775807\n", "interval_ms");
}

TEST(ConfigTest, LoadGatewayConfigNamesAMissingFile) {
  auto c = LoadGatewayConfig("/nonexistent/frugal-gateway.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/frugal-gateway.yaml"), std::string::npos);
}

// ---- TokenBucket ----

TEST(TokenBucketTest, BurstThenRefuseWithRetryAfter) {
  using namespace std::chrono_literals;
  const auto t0 = TokenBucket::Clock::time_point{} + 1000s;
  TokenBucket b(2, 3);
  double retry = -1;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.TryTake(t0, &retry)) << i;
  EXPECT_FALSE(b.TryTake(t0, &retry));
  EXPECT_NEAR(retry, 0.5, 1e-9);  // 1 / rate
  EXPECT_FALSE(b.TryTake(t0 + 250ms, &retry));
  EXPECT_NEAR(retry, 0.25, 1e-6);
  EXPECT_TRUE(b.TryTake(t0 + 500ms, &retry));
  EXPECT_FALSE(b.TryTake(t0 + 500ms, &retry));
  EXPECT_FALSE(b.TryTake(t0 + 500ms, nullptr));  // no out-parameter needed
  // A long pause refills up to the burst, no more.
  const auto t1 = t0 + 100s;
  int taken = 0;
  while (b.TryTake(t1, &retry) && taken < 100) ++taken;
  EXPECT_EQ(taken, 3);
  // Steady state: one every 1/rate seconds.
  int steady = 0;
  for (int i = 1; i <= 20; ++i) {
    if (b.TryTake(t1 + std::chrono::milliseconds(500 * i), &retry)) ++steady;
  }
  EXPECT_EQ(steady, 20);
}

TEST(TokenBucketTest, ZeroRateIsUnlimited) {
  const auto t0 = TokenBucket::Clock::time_point{} + std::chrono::seconds(5);
  TokenBucket b(0, 0);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(b.TryTake(t0, nullptr));
  TokenBucket neg(-1, 5);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(neg.TryTake(t0, nullptr));
}

TEST(TokenBucketTest, ZeroBurstIsAtLeastOneAndTheRate) {
  const auto t0 = TokenBucket::Clock::time_point{} + std::chrono::seconds(5);
  TokenBucket fast(5, 0);
  int n = 0;
  while (fast.TryTake(t0, nullptr) && n < 100) ++n;
  EXPECT_EQ(n, 5);
  TokenBucket slow(0.5, 0);
  double retry = 0;
  EXPECT_TRUE(slow.TryTake(t0, &retry));
  EXPECT_FALSE(slow.TryTake(t0, &retry));
  EXPECT_NEAR(retry, 2, 1e-9);
}

TEST(TokenBucketTest, ATimeGoingBackwardsAddsNothing) {
  using namespace std::chrono_literals;
  const auto t0 = TokenBucket::Clock::time_point{} + 1000s;
  TokenBucket b(1, 1);
  EXPECT_TRUE(b.TryTake(t0, nullptr));
  EXPECT_FALSE(b.TryTake(t0 - 10s, nullptr));
  EXPECT_FALSE(b.TryTake(t0 + 500ms, nullptr));
  EXPECT_TRUE(b.TryTake(t0 + 1s, nullptr));
}

// ---- TrafficStats ----

TEST(TrafficStatsTest, P95WithinTenPercent) {
  TrafficStats s;
  const int64_t now = 1'700'000'000;
  EXPECT_FALSE(s.P95Ms(now, 60).has_value());
  for (int i = 1; i <= 1000; ++i) s.Record(now - (i % 30), i, false, false);
  auto p = s.P95Ms(now, 60);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p, 950, 95);

  TrafficStats t;
  for (int i = 0; i < 95; ++i) t.Record(now, 10, false, false);
  for (int i = 0; i < 5; ++i) t.Record(now, 1000, false, false);
  for (int i = 0; i < 50; ++i) t.Record(now, 5000, true, false);  // errors have no latency
  auto q = t.P95Ms(now, 60);
  ASSERT_TRUE(q.has_value());
  EXPECT_NEAR(*q, 10, 1);

  TrafficStats u;
  for (int i = 0; i < 100; ++i) u.Record(now, 0.2, false, true);  // sub-millisecond
  auto r = u.P95Ms(now, 60);
  ASSERT_TRUE(r.has_value());
  EXPECT_LE(*r, 1.0);
}

TEST(TrafficStatsTest, SeriesHasSixtyBuckets) {
  TrafficStats s;
  const int64_t now = 1'700'000'003;  // 3 s into a bucket
  const int64_t last = now - now % TrafficStats::kBucketS;
  s.Record(last - TrafficStats::kBuckets * TrafficStats::kBucketS, 1, false,
           false);  // out of the window
  s.Record(now, 100, false, false);
  s.Record(now - 1, 100, false, true);
  s.Record(now, 100, true, false);
  s.Record(last - 10, 40, false, false);  // two buckets back
  auto series = s.Series(now);
  ASSERT_EQ(series.size(), 60u);
  for (size_t i = 0; i < series.size(); ++i) {
    EXPECT_EQ(series[i].t, last - static_cast<int64_t>(59 - i) * TrafficStats::kBucketS) << i;
  }
  const auto& cur = series.back();
  EXPECT_EQ(cur.requests, 3);
  EXPECT_EQ(cur.errors, 1);
  EXPECT_EQ(cur.hits, 1);
  ASSERT_TRUE(cur.p95_ms.has_value());
  EXPECT_NEAR(*cur.p95_ms, 100, 10);
  EXPECT_EQ(series[57].requests, 1);
  ASSERT_TRUE(series[57].p95_ms.has_value());
  EXPECT_NEAR(*series[57].p95_ms, 40, 4);
  int64_t total = 0;
  for (const auto& p : series) total += p.requests;
  EXPECT_EQ(total, 4);
  EXPECT_FALSE(series[58].p95_ms.has_value());
  EXPECT_EQ(series[58].requests, 0);
  EXPECT_NEAR(s.Rps(now, 60), 4.0 / 60, 1e-9);
}

TEST(TrafficStatsTest, SharesSumToOneAndForgetAfterAMinute) {
  TrafficStats s;
  const int64_t t = 1'700'000'000;
  for (int i = 0; i < 3; ++i) s.Routed(t, "a");
  s.Routed(t + 10, "b");
  auto sh = s.Shares(t + 10);
  ASSERT_EQ(sh.size(), 2u);
  EXPECT_DOUBLE_EQ(sh["a"], 0.75);
  EXPECT_DOUBLE_EQ(sh["b"], 0.25);
  double sum = 0;
  for (const auto& [w, v] : sh) sum += v;
  EXPECT_NEAR(sum, 1, 1e-12);
  sh = s.Shares(t + 59);
  EXPECT_DOUBLE_EQ(sh["a"], 0.75);
  sh = s.Shares(t + 60);  // a's requests are a minute old
  ASSERT_EQ(sh.size(), 1u);
  EXPECT_DOUBLE_EQ(sh["b"], 1);
  EXPECT_TRUE(s.Shares(t + 70).empty());
  s.Routed(t + 200, "c");
  sh = s.Shares(t + 200);
  ASSERT_EQ(sh.size(), 1u);
  EXPECT_DOUBLE_EQ(sh["c"], 1);
}

// ---- ParseCompletionRequest ----

StatusOr<CompletionRequest> Chat(const std::string& body, const RequestPolicy& p = {}) {
  return ParseCompletionRequest(body, true, p);
}
StatusOr<CompletionRequest> Completion(const std::string& body, const RequestPolicy& p = {}) {
  return ParseCompletionRequest(body, false, p);
}

// A chat body from a JSON object plus the standard single user message.
std::string ChatBody(json extra) {
  json j = {{"model", "m"},
            {"messages", json::array({{{"role", "user"}, {"content", "What is 2+2?"}}})}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j.dump();
}

TEST(CompletionRequestTest, RefusesWhatCannotBeRouted) {
  for (const char* body :
       {"", "{", "[]", "null", "\"x\"", R"({"messages":[{"role":"user","content":"hi"}]})",
        R"({"model":5,"messages":[{"role":"user","content":"hi"}]})",
        R"({"model":"","messages":[{"role":"user","content":"hi"}]})",
        R"({"model":null,"messages":[{"role":"user","content":"hi"}]})", R"({"model":"m"})",
        R"({"model":"m","messages":[]})", R"({"model":"m","messages":{"role":"user"}})",
        R"({"model":"m","messages":"hi"})",
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":"yes"})",
        R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":1})"}) {
    auto r = Chat(body);
    EXPECT_FALSE(r.ok()) << "accepted " << body;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
    }
  }
  for (const char* body : {R"({"model":"m"})", R"({"model":"m","prompt":5})",
                           R"({"model":"m","prompt":null})", R"({"model":"m","prompt":{"a":1}})",
                           R"({"model":"m","messages":[{"role":"user","content":"x"}]})",
                           R"({"model":"m","prompt":"x","stream":"true"})"}) {
    auto r = Completion(body);
    EXPECT_FALSE(r.ok()) << "accepted " << body;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << body;
    }
  }
}

// A body within the default 1 MiB limit nested a few hundred thousand levels deep must be
// refused, not overflow the stack of the HTTP thread (a one-request crash of the gateway). Run in
// a child process so that a crash fails this test only.
TEST(CompletionRequestDeathTest, DeeplyNestedBodyIsRefusedNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  constexpr size_t kDepth = 400'000;
  const std::string nest = std::string(kDepth, '[').append(kDepth, ']');
  const std::string prompt = std::string(R"({"model":"m","prompt":)").append(nest).append("}");
  const std::string param =
      std::string(R"({"model":"m","temperature":0,"messages":[{"role":"user","content":"q"}],"x":)")
          .append(nest)
          .append("}");
  ASSERT_LT(param.size(), size_t{1} << 20);
  EXPECT_EXIT(
      {
        (void)ParseCompletionRequest(prompt, false, {});
        (void)ParseCompletionRequest(param, true, {});
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CompletionRequestTest, ReadsModelStreamAndQuery) {
  auto r = Chat(ChatBody({{"stream", true}, {"stream_options", {{"include_usage", true}}}}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->chat);
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  auto n = Chat(ChatBody({{"stream", nullptr}}));
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_FALSE(n->stream);
  EXPECT_FALSE(n->include_usage);
  auto c = Completion(R"({"model":"m2","prompt":"Once upon","stream":false})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->chat);
  EXPECT_EQ(c->model, "m2");
  EXPECT_FALSE(c->stream);
  auto arr = Completion(R"({"model":"m","prompt":["a","b"]})");
  ASSERT_TRUE(arr.ok()) << arr.status().message();
}

TEST(CompletionRequestTest, CostFromMaxTokensOrTheDefault) {
  RequestPolicy p;
  p.default_max_tokens = 77;
  auto d = Chat(ChatBody(json::object()), p);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cost.max_tokens, 77);
  EXPECT_GE(d->cost.prompt_tokens, 8);
  auto m = Chat(ChatBody({{"max_tokens", 100}}), p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->cost.max_tokens, 100);
  auto mc = Chat(ChatBody({{"max_completion_tokens", 33}}), p);
  ASSERT_TRUE(mc.ok());
  EXPECT_EQ(mc->cost.max_tokens, 33);
  for (const json& bad : {json(0), json(-5), json("100"), json(1.5), json(nullptr)}) {
    auto b = Chat(ChatBody({{"max_tokens", bad}}), p);
    ASSERT_TRUE(b.ok()) << bad.dump();  // the worker validates; the gateway estimates
    EXPECT_EQ(b->cost.max_tokens, 77) << bad.dump();
  }
  // Longer prompts cost more.
  auto short_p = Completion(R"({"model":"m","prompt":"hi"})", p);
  auto long_p = Completion(json({{"model", "m"}, {"prompt", std::string(4000, 'x')}}).dump(), p);
  ASSERT_TRUE(short_p.ok());
  ASSERT_TRUE(long_p.ok());
  EXPECT_GE(short_p->cost.prompt_tokens, 0);
  EXPECT_GE(long_p->cost.prompt_tokens, 1000);
  EXPECT_LT(short_p->cost.prompt_tokens, long_p->cost.prompt_tokens);
}

TEST(CompletionRequestTest, CacheableOnlyWhenDeterministicSingleTextUserTurn) {
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 0}}))->cacheable);
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 0.0}}))->cacheable);
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 0.8}, {"seed", 7}}))->cacheable);
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 0}, {"n", 1}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody(json::object()))->cacheable);  // default temperature is not 0
  EXPECT_FALSE(Chat(ChatBody({{"temperature", 0.7}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"temperature", "0"}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"seed", "7"}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"seed", 1.5}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"temperature", 0}, {"n", 2}}))->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"temperature", 0}, {"n", "1"}}))->cacheable);

  // The last message must be the user's, in plain text.
  const auto body = [](json msgs) {
    return json({{"model", "m"}, {"temperature", 0}, {"messages", msgs}}).dump();
  };
  EXPECT_FALSE(Chat(body(json::array({{{"role", "user"}, {"content", "q"}},
                                      {{"role", "assistant"}, {"content", "a"}}})))
                   ->cacheable);
  EXPECT_FALSE(
      Chat(body(json::array({{{"role", "user"},
                              {"content", json::array({{{"type", "text"}, {"text", "q"}}})}}})))
          ->cacheable);
  EXPECT_FALSE(Chat(body(json::array({{{"role", "system"}, {"content", "q"}}})))->cacheable);
  EXPECT_FALSE(Chat(body(json::array({"just a string"})))->cacheable);
  EXPECT_FALSE(Chat(body(json::array({{{"content", "q"}}})))->cacheable);

  // Completions: a string prompt only.
  EXPECT_TRUE(Completion(R"({"model":"m","prompt":"p","temperature":0})")->cacheable);
  EXPECT_FALSE(Completion(R"({"model":"m","prompt":["p"],"temperature":0})")->cacheable);
  EXPECT_FALSE(Completion(R"({"model":"m","prompt":"p","temperature":1})")->cacheable);

  // Non-deterministic requests only when the policy allows, still one choice only.
  RequestPolicy any;
  any.cache_nondeterministic = true;
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 0.7}}), any)->cacheable);
  EXPECT_FALSE(Chat(ChatBody({{"temperature", 0.7}, {"n", 3}}), any)->cacheable);

  // Cacheable always carries the question and a sampling key; otherwise no sampling key.
  auto r = Chat(ChatBody({{"temperature", 0}}));
  EXPECT_EQ(r->query, "What is 2+2?");
  EXPECT_FALSE(r->sampling.empty());
  EXPECT_TRUE(Chat(ChatBody({{"temperature", 1}}))->sampling.empty());
}

TEST(CompletionRequestTest, ContextIsTheSystemPromptAndTheLastTurns) {
  const json msgs = json::array({{{"role", "system"}, {"content", "S"}},
                                 {{"role", "user"}, {"content", "u1"}},
                                 {{"role", "assistant"}, {"content", "a1"}},
                                 {{"role", "user"}, {"content", "u2"}},
                                 {{"role", "assistant"}, {"content", "a2"}},
                                 {{"role", "user"}, {"content", "q"}}});
  const std::string body = json({{"model", "m"}, {"temperature", 0}, {"messages", msgs}}).dump();
  const auto contents = [](const std::string& ctx) {
    std::vector<std::string> out;
    for (const auto& m : json::parse(ctx)) out.push_back(m["content"].get<std::string>());
    return out;
  };
  RequestPolicy all;
  auto r = Chat(body, all);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->query, "q");
  EXPECT_EQ(contents(r->context), (std::vector<std::string>{"S", "u1", "a1", "u2", "a2"}));
  RequestPolicy two;
  two.context_turns = 2;
  r = Chat(body, two);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(contents(r->context), (std::vector<std::string>{"S", "u2", "a2"}));
  RequestPolicy none;
  none.context_turns = 0;
  r = Chat(body, none);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(contents(r->context), (std::vector<std::string>{"S"}));
  RequestPolicy many;
  many.context_turns = 100;
  r = Chat(body, many);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(contents(r->context).size(), 5u);

  // A different earlier turn is a different scope when it is kept, the same when it is dropped.
  json other = msgs;
  other[1]["content"] = "u1-changed";
  const std::string body2 = json({{"model", "m"}, {"temperature", 0}, {"messages", other}}).dump();
  EXPECT_NE(Chat(body, all)->context, Chat(body2, all)->context);
  EXPECT_EQ(Chat(body, two)->context, Chat(body2, two)->context);
  // A different system prompt always is.
  other = msgs;
  other[0]["content"] = "S2";
  const std::string body3 = json({{"model", "m"}, {"temperature", 0}, {"messages", other}}).dump();
  EXPECT_NE(Chat(body, none)->context, Chat(body3, none)->context);
}

TEST(CompletionRequestTest, SamplingIsCanonicalAndCoversEveryParameter) {
  const std::string a =
      R"({"model":"m","messages":[{"role":"user","content":"q"}],"temperature":0,"top_p":0.9,"max_tokens":50,"stop":["\n"]})";
  const std::string b =
      R"({"stop":["\n"],"max_tokens":50,"top_p":0.9,"messages":[{"content":"q","role":"user"}],"temperature":0,"model":"m"})";
  auto ra = Chat(a);
  auto rb = Chat(b);
  ASSERT_TRUE(ra.ok());
  ASSERT_TRUE(rb.ok());
  ASSERT_TRUE(ra->cacheable);
  EXPECT_EQ(ra->sampling, rb->sampling);
  EXPECT_EQ(ra->context, rb->context);
  EXPECT_EQ(ra->query, rb->query);

  const json base = json::parse(a);
  const auto with = [&](const char* key, json v) {
    json j = base;
    j[key] = std::move(v);
    auto r = Chat(j.dump());
    EXPECT_TRUE(r.ok() && r->cacheable) << key;
    return r.ok() ? r->sampling : std::string();
  };
  for (const auto& [key, v] : std::vector<std::pair<const char*, json>>{
           {"top_p", 0.8},
           {"max_tokens", 51},
           {"stop", json::array({"."})},
           {"seed", 1},
           {"presence_penalty", 0.5},
           {"frequency_penalty", 0.1},
           {"logit_bias", {{"50256", -100}}},
           {"response_format", {{"type", "json_object"}}},
           {"tools", json::array({{{"type", "function"}}})}}) {
    EXPECT_NE(with(key, v), ra->sampling) << key << " did not change the sampling key";
  }
  // Transport and accounting fields do not change the answer.
  EXPECT_EQ(with("stream", true), ra->sampling);
  EXPECT_EQ(with("stream_options", {{"include_usage", true}}), ra->sampling);
  EXPECT_EQ(with("user", "alice"), ra->sampling);
  // The question itself is not part of the sampling key.
  json q2 = base;
  q2["messages"][0]["content"] = "another question";
  EXPECT_EQ(Chat(q2.dump())->sampling, ra->sampling);
  // The same parameters on /v1/completions are another route.
  auto rc = Completion(
      R"({"model":"m","prompt":"q","temperature":0,"top_p":0.9,"max_tokens":50,"stop":["\n"]})");
  ASSERT_TRUE(rc.ok() && rc->cacheable);
  EXPECT_NE(rc->sampling, ra->sampling);
}

}  // namespace
}  // namespace frugal::gateway
