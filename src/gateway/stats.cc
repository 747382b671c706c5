#include "gateway/stats.h"

#include <cmath>

namespace frugal::gateway {

int TrafficStats::Bin(double ms) {
  if (!(ms > 1)) return 0;
  const int b = static_cast<int>(std::ceil(std::log(ms) / std::log(1.1)));
  return std::min(b, kBins - 1);
}

double TrafficStats::BinUpperMs(int bin) { return std::pow(1.1, bin); }

TrafficStats::Bucket& TrafficStats::BucketLocked(int64_t unix_s) {
  const int64_t start = unix_s - unix_s % kBucketS;
  Bucket& b = buckets_[static_cast<size_t>((start / kBucketS) % kBuckets)];
  if (b.t != start) b = Bucket{.t = start};
  return b;
}

void TrafficStats::Record(int64_t unix_s, double latency_ms, bool error, bool hit) {
  MutexLock lock(mu_);
  Bucket& b = BucketLocked(unix_s);
  ++b.requests;
  if (error) {
    ++b.errors;
    return;
  }
  if (hit) ++b.hits;
  ++b.bins[static_cast<size_t>(Bin(latency_ms))];
}

void TrafficStats::Routed(int64_t unix_s, const std::string& worker) {
  MutexLock lock(mu_);
  ++routed_[unix_s][worker];
  while (!routed_.empty() && routed_.begin()->first <= unix_s - kShareWindowS)
    routed_.erase(routed_.begin());
}

std::optional<double> TrafficStats::P95OfLocked(int64_t from, int64_t to) const {
  std::array<uint64_t, kBins> sum{};
  uint64_t n = 0;
  for (const Bucket& b : buckets_) {
    if (b.t < from || b.t >= to) continue;
    for (int i = 0; i < kBins; ++i) {
      sum[static_cast<size_t>(i)] += b.bins[static_cast<size_t>(i)];
      n += b.bins[static_cast<size_t>(i)];
    }
  }
  if (n == 0) return std::nullopt;
  const auto rank = static_cast<uint64_t>(std::ceil(0.95 * static_cast<double>(n)));
  uint64_t seen = 0;
  for (int i = 0; i < kBins; ++i) {
    seen += sum[static_cast<size_t>(i)];
    if (seen >= rank) return BinUpperMs(i);
  }
  return BinUpperMs(kBins - 1);
}

std::vector<TrafficStats::Point> TrafficStats::Series(int64_t now) const {
  MutexLock lock(mu_);
  const int64_t last = now - now % kBucketS;
  std::vector<Point> out;
  for (int64_t t = last - (kBuckets - 1) * kBucketS; t <= last; t += kBucketS) {
    Point p;
    p.t = t;
    const Bucket& b = buckets_[static_cast<size_t>((t / kBucketS) % kBuckets)];
    if (b.t == t) {
      p.requests = b.requests;
      p.errors = b.errors;
      p.hits = b.hits;
      p.p95_ms = P95OfLocked(t, t + kBucketS);
    }
    out.push_back(p);
  }
  return out;
}

std::optional<double> TrafficStats::P95Ms(int64_t now, int seconds) const {
  MutexLock lock(mu_);
  return P95OfLocked(now - seconds, now + 1);
}

double TrafficStats::Rps(int64_t now, int seconds) const {
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const Bucket& b : buckets_) {
    if (b.t > now - seconds && b.t <= now) n += b.requests;
  }
  return static_cast<double>(n) / seconds;
}

std::map<std::string, double> TrafficStats::Shares(int64_t now) const {
  MutexLock lock(mu_);
  std::map<std::string, double> out;
  double total = 0;
  for (const auto& [t, per] : routed_) {
    if (t <= now - kShareWindowS) continue;
    for (const auto& [w, n] : per) {
      out[w] += static_cast<double>(n);
      total += static_cast<double>(n);
    }
  }
  if (total > 0) {
    for (auto& [w, v] : out) v /= total;
  }
  return out;
}

}  // namespace frugal::gateway
