// When a request that failed on one worker goes to another, and after how long.
//
// A request is sent again only when the client has received nothing and the failure says the
// worker never started it (nothing arrived) or refused it (its 503: queue full). A non-streamed
// answer that broke midway is not replayed (the worker may have done the work), and a stream that
// has started belongs to its worker. A request that ran out of its own time is not sent again
// either: it is long, not the worker broken (and the gateway does not count it against the
// worker's health). Each retry waits backoff * 2^(n-1), jittered by [0.5, 1.5)
// so that requests failed together do not arrive together at the next worker.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

#include "common/thread_annotations.h"

namespace frugal::gateway {

// Why an attempt did not give the client its answer.
enum class AttemptFailure {
  kNoResponse,       // connection refused or reset, or closed before any byte arrived
  kOverloaded,       // the worker's 503: its queue is full
  kPartialResponse,  // part of a non-streamed answer arrived, then the worker failed
  kStreamBroken,     // the client's stream had started
  kTimeout,          // the request ran out of its own time: another worker would not be faster
};

struct RetryOptions {
  int max_retries = 2;      // further workers tried after the first
  int64_t backoff_ms = 25;  // before the first retry; doubled for each next one
};

class RetryPolicy {
 public:
  explicit RetryPolicy(RetryOptions options, uint64_t seed = 42);

  // Whether a request already retried `retries` times may go to another worker after `failure`.
  bool MayRetry(AttemptFailure failure, int retries) const;
  // The wait before retry number `retry` (1 for the first).
  std::chrono::microseconds Backoff(int retry);

 private:
  const RetryOptions options_;
  Mutex mu_;
  std::mt19937_64 rng_ FRUGAL_GUARDED_BY(mu_);
};

}  // namespace frugal::gateway
