// The balancer's health checker against a scripted probe (no network) and the retry policy:
// probes never overlap per worker, three failed checks eject through the pool, a success after
// ejection starts half-open probing, model refreshes come on the first and every n-th success,
// workers that leave are forgotten; retries only when nothing reached the client and the worker
// never did the work, at most max_retries, with exponential jittered backoff.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "balancer/health_checker.h"
#include "balancer/retry_policy.h"
#include "balancer/worker_pool.h"

namespace frugal::gateway {
namespace {

// Holds every probe until the test answers it.
class ScriptedProbe final : public LoadProbe {
 public:
  void Probe(const WorkerAddress& worker, std::function<void(StatusOr<WorkerLoad>)> done) override {
    asked.push_back(worker.name);
    pending.emplace_back(worker.name, std::move(done));
  }
  // Answers the oldest pending probe of `name`; false when there is none.
  bool Answer(const std::string& name, StatusOr<WorkerLoad> load) {
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (it->first != name) continue;
      auto done = std::move(it->second);
      pending.erase(it);
      done(std::move(load));
      return true;
    }
    return false;
  }
  std::vector<std::string> asked;
  std::vector<std::pair<std::string, std::function<void(StatusOr<WorkerLoad>)>>> pending;
};

WorkerLoad Idle() { return WorkerLoad{}; }
StatusOr<WorkerLoad> Refused() { return StatusOr<WorkerLoad>(IoError("connection refused")); }

WorkerState StateOf(const WorkerPool& pool, const std::string& name) {
  for (const auto& w : pool.List()) {
    if (w.name == name) return w.state;
  }
  ADD_FAILURE() << "no worker " << name;
  return WorkerState::kDraining;
}

TEST(HealthCheckerTest, ProbesEveryWorkerAndNeverTwiceAtOnce) {
  WorkerPool pool(HealthOptions{});
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9001").ok());
  ASSERT_TRUE(pool.Add("b", "http://127.0.0.1:9002").ok());
  ScriptedProbe probe;
  HealthChecker checker(pool, probe);
  checker.CheckAll();
  EXPECT_EQ(probe.asked, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(checker.in_flight(), 2u);
  // "a" hangs; "b" answers. The next round asks only "b" again.
  ASSERT_TRUE(probe.Answer("b", Idle()));
  checker.CheckAll();
  EXPECT_EQ(probe.asked, (std::vector<std::string>{"a", "b", "b"}));
  ASSERT_TRUE(probe.Answer("a", Idle()));
  ASSERT_TRUE(probe.Answer("b", Idle()));
  EXPECT_EQ(checker.in_flight(), 0u);
  checker.CheckAll();
  EXPECT_EQ(probe.asked.size(), 5u);
}

TEST(HealthCheckerTest, ThreeFailedChecksEjectAndASuccessProbesBack) {
  HealthOptions h;
  h.eject_after = 3;
  h.restore_after = 2;
  WorkerPool pool(h);
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9001").ok());
  ScriptedProbe probe;
  HealthChecker checker(pool, probe);
  for (int i = 0; i < 2; ++i) {
    checker.CheckAll();
    ASSERT_TRUE(probe.Answer("a", Refused()));
    EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy) << "after " << i + 1 << " failures";
  }
  checker.CheckAll();
  ASSERT_TRUE(probe.Answer("a", Refused()));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
  // Ejected workers are still probed.
  checker.CheckAll();
  ASSERT_TRUE(probe.Answer("a", Idle()));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHalfOpen);
  checker.CheckAll();
  ASSERT_TRUE(probe.Answer("a", Idle()));
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kHealthy);
}

TEST(HealthCheckerTest, RefreshOnFirstAndEveryNthSuccessOnly) {
  WorkerPool pool(HealthOptions{});
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9001").ok());
  ScriptedProbe probe;
  std::vector<bool> refreshes;
  HealthChecker checker(pool, probe, /*refresh_every=*/3,
                        [&](const WorkerAddress& w, bool refresh) {
                          EXPECT_EQ(w.name, "a");
                          EXPECT_EQ(w.port, 9001);
                          refreshes.push_back(refresh);
                        });
  for (int i = 0; i < 7; ++i) {
    checker.CheckAll();
    ASSERT_TRUE(probe.Answer("a", i == 2 ? Refused() : StatusOr<WorkerLoad>(Idle())));
  }
  // Six successes (the third check failed and is not reported as healthy).
  EXPECT_EQ(refreshes, (std::vector<bool>{true, false, false, true, false, false}));
}

TEST(HealthCheckerTest, AWorkerThatLeftIsForgottenAndStartsOverWhenBack) {
  WorkerPool pool(HealthOptions{});
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9001").ok());
  ScriptedProbe probe;
  int refreshes = 0;
  HealthChecker checker(pool, probe, 30, [&](const WorkerAddress&, bool r) { refreshes += r; });
  checker.CheckAll();
  ASSERT_TRUE(probe.Answer("a", Idle()));
  EXPECT_EQ(refreshes, 1);
  ASSERT_TRUE(pool.Remove("a").ok());
  checker.CheckAll();  // forgets "a"
  EXPECT_TRUE(probe.pending.empty());
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9003").ok());
  checker.CheckAll();
  ASSERT_TRUE(probe.Answer("a", Idle()));
  EXPECT_EQ(refreshes, 2) << "a worker added again is new: its models are read again";
}

TEST(HealthCheckerTest, AProbeThatAnswersAtOnceIsFine) {
  WorkerPool pool(HealthOptions{});
  ASSERT_TRUE(pool.Add("a", "http://127.0.0.1:9001").ok());
  class Immediate final : public LoadProbe {
   public:
    void Probe(const WorkerAddress&, std::function<void(StatusOr<WorkerLoad>)> done) override {
      done(Refused());
    }
  } probe;
  HealthChecker checker(pool, probe);
  for (int i = 0; i < 3; ++i) checker.CheckAll();
  EXPECT_EQ(checker.in_flight(), 0u);
  EXPECT_EQ(StateOf(pool, "a"), WorkerState::kEjected);
}

TEST(RetryPolicyTest, RetriesOnlyWhatNeverReachedTheClientOrTheWorker) {
  RetryPolicy p({/*max_retries=*/2, /*backoff_ms=*/10});
  EXPECT_TRUE(p.MayRetry(AttemptFailure::kNoResponse, 0));
  EXPECT_TRUE(p.MayRetry(AttemptFailure::kOverloaded, 0));
  EXPECT_FALSE(p.MayRetry(AttemptFailure::kPartialResponse, 0));
  EXPECT_FALSE(p.MayRetry(AttemptFailure::kStreamBroken, 0));
  EXPECT_FALSE(p.MayRetry(AttemptFailure::kTimeout, 0));  // a long request is long anywhere
}

TEST(RetryPolicyTest, AtMostMaxRetries) {
  RetryPolicy p({2, 10});
  EXPECT_TRUE(p.MayRetry(AttemptFailure::kNoResponse, 1));
  EXPECT_FALSE(p.MayRetry(AttemptFailure::kNoResponse, 2));
  RetryPolicy none({0, 10});
  EXPECT_FALSE(none.MayRetry(AttemptFailure::kNoResponse, 0));
}

TEST(RetryPolicyTest, BackoffDoublesWithinItsJitter) {
  RetryPolicy p({10, 10});
  for (int retry = 1; retry <= 10; ++retry) {
    const double base_us = 10e3 * static_cast<double>(1 << (retry - 1));
    for (int i = 0; i < 50; ++i) {
      const auto d = static_cast<double>(p.Backoff(retry).count());
      EXPECT_GE(d, 0.5 * base_us - 1) << "retry " << retry;
      EXPECT_LT(d, 1.5 * base_us) << "retry " << retry;
    }
  }
  // Jittered: fifty first backoffs are not all the same.
  std::map<int64_t, int> seen;
  for (int i = 0; i < 50; ++i) ++seen[p.Backoff(1).count()];
  EXPECT_GT(seen.size(), 10u);
  RetryPolicy zero({2, 0});
  EXPECT_EQ(zero.Backoff(1).count(), 0);
  EXPECT_GE(p.Backoff(1000).count(), 0) << "a huge retry number does not overflow";
}

}  // namespace
}  // namespace frugal::gateway
