#include "http/auth.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/sha256.h"

namespace frugal::http {
namespace {

std::string Trim(std::string s) {
  const auto not_blank = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_blank));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_blank).base(), s.end());
  return s;
}

}  // namespace

bool SecretEquals(std::string_view a, std::string_view b) {
  const std::string da = Sha256Hex(a), db = Sha256Hex(b);
  unsigned diff = 0;
  for (size_t i = 0; i < da.size(); ++i)
    diff |= static_cast<unsigned char>(da[i]) ^ static_cast<unsigned char>(db[i]);
  return diff == 0;
}

StatusOr<std::string> ReadSecretFile(const std::string& path, std::string* warning) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read the secret file " + path);
  std::string line;
  std::getline(f, line);
  line = Trim(line);
  if (line.empty()) return InvalidArgument("the secret file " + path + " is empty");
  struct stat st {};
  if (warning && ::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    *warning = "the secret file " + path + " can be read by other users (chmod 600 it)";
  }
  return line;
}

StatusOr<std::vector<std::string>> ReadKeyLines(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read the key file " + path);
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(f, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    keys.push_back(line);
  }
  if (keys.empty()) return InvalidArgument("the key file " + path + " holds no key");
  return keys;
}

Status KeyRing::Add(std::string_view key, std::string name) {
  if (key.empty()) return InvalidArgument("an API key is empty");
  if (names_.count(name)) return InvalidArgument("the API key name '" + name + "' is given twice");
  if (!by_digest_.emplace(Sha256Hex(key), name).second)
    return InvalidArgument("API key '" + name + "' is the same key as another one");
  names_[std::move(name)] = true;
  return Status::Ok();
}

const std::string* KeyRing::Find(std::string_view presented) const {
  if (presented.empty()) return nullptr;
  auto it = by_digest_.find(Sha256Hex(presented));
  return it == by_digest_.end() ? nullptr : &it->second;
}

AuthFailureThrottle::AuthFailureThrottle(double per_minute, double burst, size_t max_addresses)
    : per_s_(per_minute / 60), burst_(std::max(1.0, burst)), max_addresses_(max_addresses) {}

void AuthFailureThrottle::Refill(Bucket& b, Clock::time_point now) const {
  const double dt = std::chrono::duration<double>(now - b.last).count();
  if (dt > 0) {
    b.tokens = std::min(burst_, b.tokens + dt * per_s_);
    b.last = now;
  }
}

std::optional<double> AuthFailureThrottle::Blocked(const std::string& address,
                                                   Clock::time_point now) {
  MutexLock lock(mu_);
  auto it = buckets_.find(address);
  if (it == buckets_.end()) return std::nullopt;
  Refill(it->second, now);
  if (it->second.tokens >= 1) return std::nullopt;
  ++refused_;
  return per_s_ > 0 ? (1 - it->second.tokens) / per_s_ : 3600.0;
}

void AuthFailureThrottle::Failed(const std::string& address, Clock::time_point now) {
  MutexLock lock(mu_);
  auto it = buckets_.find(address);
  if (it == buckets_.end()) {
    // Full: forget some address (constant time, so a flood of addresses costs no scans).
    if (buckets_.size() >= max_addresses_) buckets_.erase(buckets_.begin());
    it = buckets_.emplace(address, Bucket{burst_, now}).first;
  }
  Refill(it->second, now);
  it->second.tokens = std::max(0.0, it->second.tokens - 1);
}

int64_t AuthFailureThrottle::refused() const {
  MutexLock lock(mu_);
  return refused_;
}

}  // namespace frugal::http
