// A small synchronous Redis client over hiredis for the semantic cache's shared backend.
//
// - A pool of connections: each command takes one (or opens one), and gives it back unless it
//   broke; commands from many threads run in parallel.
// - Timeouts on connect and on every command, so an unreachable Redis costs a bounded wait.
// - When Redis cannot be reached, further commands fail at once (no connect attempt) for
//   `retry_after`, then one try again: a Redis that is down costs the caller microseconds, not a
//   connect timeout per request. The change down/up is logged once each way.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/thread_annotations.h"
#include "frugal/status.h"

struct redisContext;

namespace frugal::cache {

// A parsed reply (RESP2). Errors come back as a failed Status, not as a Reply.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus
  int64_t integer = 0;
  std::vector<RedisReply> elements;  // kArray

  bool is_nil() const { return type == Type::kNil; }
  // A string or integer reply as text ("" for nil).
  std::string Text() const;
  // For an array of alternating names and values (FT.INFO, HGETALL): the value after `name`.
  const RedisReply* Field(std::string_view name) const;
};

struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{1000};
  std::chrono::milliseconds retry_after{1000};  // after a failed connect
  size_t max_idle = 16;                         // connections kept open between commands
};

// "host:port", "redis://host:port" or "redis://host:port/" (no auth, no db selection).
StatusOr<RedisOptions> ParseRedisAddress(std::string_view address);

class RedisClient {
 public:
  explicit RedisClient(RedisOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // One command (argv are binary-safe). A Redis error reply is an Internal status carrying its
  // text; an unreachable server or a timeout is IoError.
  StatusOr<RedisReply> Command(const std::vector<std::string>& argv);
  // Several commands sent at once on one connection (MULTI ... EXEC is such a pipeline); the
  // replies in order. The first error reply fails the whole call.
  StatusOr<std::vector<RedisReply>> Pipeline(const std::vector<std::vector<std::string>>& commands);

  // Whether the last command reached Redis.
  bool reachable() const { return reachable_.load(); }
  const RedisOptions& options() const { return opt_; }
  std::string address() const { return opt_.host + ":" + std::to_string(opt_.port); }

 private:
  StatusOr<redisContext*> Take(bool* reused);
  StatusOr<std::vector<RedisReply>> Send(const std::vector<std::vector<std::string>>& commands,
                                         bool* stale);
  void Give(redisContext* c, bool broken);
  void MarkDown(const std::string& why);
  void MarkUp();

  RedisOptions opt_;
  Mutex mu_;
  std::vector<redisContext*> idle_ FRUGAL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point down_until_ FRUGAL_GUARDED_BY(mu_){};
  std::atomic<bool> reachable_{true};
};

}  // namespace frugal::cache
