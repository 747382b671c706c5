// What the status page and its JSON show: per-bucket request counts, errors, cache hits and a
// latency histogram over the last minutes, and each worker's share of the recently routed
// requests. Fixed memory: a ring of buckets, a log-spaced histogram per bucket (P95 within 10%).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/thread_annotations.h"

namespace frugal::gateway {

// Every completion request's end, counted (a client that left included).
struct RequestTotals {
  std::atomic<int64_t> requests{0}, errors{0}, hits{0};
};

class TrafficStats {
 public:
  static constexpr int kBucketS = 5;        // seconds per bucket
  static constexpr int kBuckets = 60;       // 5 minutes
  static constexpr int kShareWindowS = 60;  // share of traffic over the last minute
  static constexpr int kBins = 160;         // latency bins, 1 ms x 1.1^i

  // A finished request (hit: answered from the cache).
  void Record(int64_t unix_s, double latency_ms, bool error, bool hit);
  // A request routed to `worker`.
  void Routed(int64_t unix_s, const std::string& worker);

  struct Point {
    int64_t t = 0;  // bucket start, unix seconds
    int64_t requests = 0, errors = 0, hits = 0;
    std::optional<double> p95_ms;
  };
  // Oldest first, one per bucket of the window ending at `now`.
  std::vector<Point> Series(int64_t now_unix_s) const;
  // Over the last `seconds`: P95 latency, requests per second.
  std::optional<double> P95Ms(int64_t now_unix_s, int seconds) const;
  double Rps(int64_t now_unix_s, int seconds) const;
  std::map<std::string, double> Shares(int64_t now_unix_s) const;

 private:
  struct Bucket {
    int64_t t = -1;
    int64_t requests = 0, errors = 0, hits = 0;
    std::array<uint32_t, kBins> bins{};
  };
  static int Bin(double ms);
  static double BinUpperMs(int bin);
  Bucket& BucketLocked(int64_t unix_s) FRUGAL_REQUIRES(mu_);
  std::optional<double> P95OfLocked(int64_t from, int64_t to) const FRUGAL_REQUIRES(mu_);

  mutable Mutex mu_;
  std::array<Bucket, kBuckets> buckets_ FRUGAL_GUARDED_BY(mu_);
  std::map<int64_t, std::map<std::string, int64_t>> routed_
      FRUGAL_GUARDED_BY(mu_);  // second -> worker -> count
};

}  // namespace frugal::gateway
