// Credentials for the worker and the gateway: secrets read from files or the environment (never
// only from argv, which `ps` shows), compared in constant time, API keys held only as SHA-256
// digests, and a throttle on repeated authentication failures from one address.
//
// Thread safety: SecretEquals, ReadSecretFile and ReadKeyLines are pure; a KeyRing is immutable
// once filled; AuthFailureThrottle is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/thread_annotations.h"
#include "frugal/status.h"

namespace frugal::http {

// Whether two secrets are equal, in time that does not depend on where they differ or on their
// lengths (both are hashed, then the digests compared without an early exit).
bool SecretEquals(std::string_view a, std::string_view b);

// The secret in a file: its first line, without the line end and surrounding blanks. NotFound
// for a missing file, InvalidArgument for an empty secret. `warning` gets a line to print when
// the file can be read by others than its owner.
StatusOr<std::string> ReadSecretFile(const std::string& path, std::string* warning = nullptr);

// Non-empty lines of a file that are not comments (#), trimmed: one API key per line.
StatusOr<std::vector<std::string>> ReadKeyLines(const std::string& path);

// API keys by name, kept as SHA-256 digests: a presented key is hashed and looked up, so the
// keys themselves are not in memory (or in a core dump) and the lookup's timing depends only on
// the digest.
class KeyRing {
 public:
  // InvalidArgument for an empty key, a key given twice, or a name given twice.
  Status Add(std::string_view key, std::string name);
  // The name of the key, or nullptr.
  const std::string* Find(std::string_view presented) const;
  bool empty() const { return by_digest_.empty(); }
  size_t size() const { return by_digest_.size(); }

 private:
  std::unordered_map<std::string, std::string> by_digest_;  // digest (hex) -> name
  std::unordered_map<std::string, bool> names_;
};

// Repeated authentication failures from one address are refused for a while (429 with
// Retry-After), so keys and tokens cannot be guessed at request speed. Each address has a
// bucket of `burst` failures refilled at `per_minute`; an address with an empty bucket is
// blocked until the next refill. At most `max_addresses` are tracked (past it, one is forgotten
// for each new one).
class AuthFailureThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit AuthFailureThrottle(double per_minute = 10, double burst = 20,
                               size_t max_addresses = 100000);
  // nullopt when `address` may try; else the seconds until it may.
  std::optional<double> Blocked(const std::string& address, Clock::time_point now);
  // Counts one failed attempt of `address`.
  void Failed(const std::string& address, Clock::time_point now);
  int64_t refused() const;  // attempts refused while blocked

 private:
  struct Bucket {
    double tokens;
    Clock::time_point last;
  };
  void Refill(Bucket& b, Clock::time_point now) const;
  const double per_s_, burst_;
  const size_t max_addresses_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ FRUGAL_GUARDED_BY(mu_);
  int64_t refused_ FRUGAL_GUARDED_BY(mu_) = 0;
};

}  // namespace frugal::http
