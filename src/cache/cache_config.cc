#include "cache/cache_config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

namespace frugal::cache {

float ThresholdFor(const CacheOptions& options, std::string_view ns, const Embedder& embedder) {
  auto it = options.namespace_threshold.find(std::string(ns));
  if (it != options.namespace_threshold.end()) return it->second;
  return options.threshold > 0 ? options.threshold : RecallThreshold(embedder, options.decision);
}

namespace {

Status Readable(const char* key, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return InvalidArgument(std::string(key) + ": cannot read '" + path +
                           "': " + std::strerror(errno));
  std::fclose(f);
  return Status::Ok();
}

}  // namespace

StatusOr<RedisOptions> RedisOptionsFor(const CacheConfig& config) {
  auto parsed = ParseRedisAddress(config.redis);
  if (!parsed.ok()) return parsed.status().WithContext("cache.redis");
  RedisOptions o = std::move(parsed).value();
  o.command_timeout = std::chrono::milliseconds(config.redis_timeout_ms);
  if (!config.redis_user.empty()) {
    if (!o.user.empty() && o.user != config.redis_user)
      return InvalidArgument("cache.redis_user and the user in cache.redis differ: name one");
    o.user = config.redis_user;
  }
  if (!config.redis_password_file.empty()) {
    if (!o.password.empty()) {
      return InvalidArgument(
          "cache.redis holds a password and cache.redis_password_file names one: keep one");
    }
    FRUGAL_RETURN_IF_ERROR(Readable("cache.redis_password_file", config.redis_password_file));
    std::ifstream f(config.redis_password_file, std::ios::binary);
    std::getline(f, o.password);
    if (!o.password.empty() && o.password.back() == '\r') o.password.pop_back();
    if (o.password.empty()) {
      return InvalidArgument("cache.redis_password_file: the first line of '" +
                             config.redis_password_file + "' is empty");
    }
  } else if (o.password.empty()) {
    if (const char* env = std::getenv("FRUGAL_REDIS_PASSWORD"); env != nullptr) o.password = env;
  }
  if (!o.user.empty() && o.password.empty()) {
    return InvalidArgument("cache.redis: user '" + o.user +
                           "' without a password (cache.redis_password_file, the address's "
                           "user:password@ or FRUGAL_REDIS_PASSWORD)");
  }
  o.tls = o.tls || config.redis_tls;
  const std::pair<const char*, const std::string*> tls_files[] = {
      {"cache.redis_tls_ca_file", &config.redis_tls_ca_file},
      {"cache.redis_tls_cert_file", &config.redis_tls_cert_file},
      {"cache.redis_tls_key_file", &config.redis_tls_key_file}};
  for (const auto& [key, path] : tls_files) {
    if (path->empty()) continue;
    if (!o.tls)
      return InvalidArgument(std::string(key) +
                             " needs TLS (cache.redis_tls: true, or a rediss:// address)");
    FRUGAL_RETURN_IF_ERROR(Readable(key, *path));
  }
  if (!config.redis_tls_server_name.empty() && !o.tls) {
    return InvalidArgument(
        "cache.redis_tls_server_name needs TLS (cache.redis_tls: true, or a rediss:// address)");
  }
  if (config.redis_tls_cert_file.empty() != config.redis_tls_key_file.empty()) {
    return InvalidArgument(
        "cache.redis_tls_cert_file and cache.redis_tls_key_file go together (a client "
        "certificate and its key)");
  }
  o.tls_ca_file = config.redis_tls_ca_file;
  o.tls_cert_file = config.redis_tls_cert_file;
  o.tls_key_file = config.redis_tls_key_file;
  o.tls_server_name = config.redis_tls_server_name;
  return o;
}

Status ValidateRedisConfig(const CacheConfig& config) {
  if (!config.redis.empty()) return RedisOptionsFor(config).status();
  const std::pair<const char*, bool> set[] = {
      {"cache.redis_user", !config.redis_user.empty()},
      {"cache.redis_password_file", !config.redis_password_file.empty()},
      {"cache.redis_tls", config.redis_tls},
      {"cache.redis_tls_ca_file", !config.redis_tls_ca_file.empty()},
      {"cache.redis_tls_cert_file", !config.redis_tls_cert_file.empty()},
      {"cache.redis_tls_key_file", !config.redis_tls_key_file.empty()},
      {"cache.redis_tls_server_name", !config.redis_tls_server_name.empty()}};
  for (const auto& [key, on] : set) {
    if (on) return InvalidArgument(std::string(key) + " is set but cache.redis is not");
  }
  return Status::Ok();
}

}  // namespace frugal::cache
