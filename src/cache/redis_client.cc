#include "cache/redis_client.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <charconv>
#include <cstdio>

namespace frugal::cache {
namespace {

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Converts hiredis' reply; an error reply anywhere in it (EXEC carries per-command errors in its
// array) becomes the failed status.
Status Convert(const redisReply* r, RedisReply* out) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out->type = RedisReply::Type::kString;
      out->str.assign(r->str, r->len);
      return Status::Ok();
    case REDIS_REPLY_STATUS:
      out->type = RedisReply::Type::kStatus;
      out->str.assign(r->str, r->len);
      return Status::Ok();
    case REDIS_REPLY_INTEGER:
      out->type = RedisReply::Type::kInteger;
      out->integer = r->integer;
      return Status::Ok();
    case REDIS_REPLY_NIL:
      out->type = RedisReply::Type::kNil;
      return Status::Ok();
    case REDIS_REPLY_ARRAY:
      out->type = RedisReply::Type::kArray;
      out->elements.resize(r->elements);
      for (size_t i = 0; i < r->elements; ++i)
        FRUGAL_RETURN_IF_ERROR(Convert(r->element[i], &out->elements[i]));
      return Status::Ok();
    case REDIS_REPLY_ERROR:
      return Internal("redis: " + std::string(r->str, r->len));
    default:
      return Internal("redis: unexpected reply type " + std::to_string(r->type));
  }
}

}  // namespace

std::string RedisReply::Text() const {
  switch (type) {
    case Type::kString:
    case Type::kStatus:
      return str;
    case Type::kInteger:
      return std::to_string(integer);
    default:
      return "";
  }
}

const RedisReply* RedisReply::Field(std::string_view name) const {
  if (type != Type::kArray) return nullptr;
  for (size_t i = 0; i + 1 < elements.size(); i += 2) {
    if (elements[i].type != Type::kArray && elements[i].Text() == name) return &elements[i + 1];
  }
  return nullptr;
}

StatusOr<RedisOptions> ParseRedisAddress(std::string_view address) {
  RedisOptions o;
  std::string_view a = address;
  if (a.starts_with("redis://")) a.remove_prefix(8);
  while (a.ends_with('/')) a.remove_suffix(1);
  const size_t colon = a.rfind(':');
  if (a.empty() || a.find('@') != std::string_view::npos || a.find('/') != std::string_view::npos) {
    return InvalidArgument("Redis address '" + std::string(address) +
                           "': expected host:port or redis://host:port");
  }
  if (colon == std::string_view::npos) {
    o.host = std::string(a);
    return o;
  }
  o.host = std::string(a.substr(0, colon));
  const std::string_view port = a.substr(colon + 1);
  int p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (o.host.empty() || ec != std::errc() || end != port.data() + port.size() || p < 1 ||
      p > 65535) {
    return InvalidArgument("Redis address '" + std::string(address) +
                           "': expected host:port with a port in 1..65535");
  }
  o.port = p;
  return o;
}

RedisClient::RedisClient(RedisOptions options) : opt_(std::move(options)) {}

RedisClient::~RedisClient() {
  for (redisContext* c : idle_) redisFree(c);
}

void RedisClient::MarkDown(const std::string& why) {
  {
    MutexLock lock(mu_);
    down_until_ = std::chrono::steady_clock::now() + opt_.retry_after;
  }
  if (reachable_.exchange(false)) {
    std::fprintf(stderr,
                 "frugal: Redis at %s unreachable (%s); the cache misses until it is back\n",
                 address().c_str(), why.c_str());
  }
}

void RedisClient::MarkUp() {
  if (!reachable_.exchange(true))
    std::fprintf(stderr, "frugal: Redis at %s reachable again\n", address().c_str());
}

StatusOr<redisContext*> RedisClient::Take(bool* reused) {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      redisContext* c = idle_.back();
      idle_.pop_back();
      *reused = true;
      return c;
    }
    *reused = false;
    if (std::chrono::steady_clock::now() < down_until_) {
      return IoError("Redis at " + address() + " is unreachable (retrying shortly)");
    }
  }
  redisContext* c =
      redisConnectWithTimeout(opt_.host.c_str(), opt_.port, ToTimeval(opt_.connect_timeout));
  if (c == nullptr || c->err) {
    const std::string why = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    MarkDown(why);
    return IoError("Redis at " + address() + ": " + why);
  }
  redisSetTimeout(c, ToTimeval(opt_.command_timeout));
  return c;
}

void RedisClient::Give(redisContext* c, bool broken) {
  if (!broken) {
    MutexLock lock(mu_);
    if (idle_.size() < opt_.max_idle) {
      idle_.push_back(c);
      return;
    }
  }
  redisFree(c);
}

StatusOr<RedisReply> RedisClient::Command(const std::vector<std::string>& argv) {
  FRUGAL_ASSIGN_OR_RETURN(std::vector<RedisReply> r, Pipeline({argv}));
  return std::move(r.front());
}

StatusOr<std::vector<RedisReply>> RedisClient::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return std::vector<RedisReply>{};
  bool stale = false;
  auto r = Send(commands, &stale);
  if (stale) {
    // A pooled connection the server had closed (a Redis restart): the command never ran; the
    // other pooled ones are stale too.
    {
      MutexLock lock(mu_);
      for (redisContext* c : idle_) redisFree(c);
      idle_.clear();
    }
    r = Send(commands, &stale);
  }
  return r;
}

StatusOr<std::vector<RedisReply>> RedisClient::Send(
    const std::vector<std::vector<std::string>>& commands, bool* stale) {
  *stale = false;
  bool reused = false;
  FRUGAL_ASSIGN_OR_RETURN(redisContext * c, Take(&reused));
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& argv : commands) {
    args.clear();
    lens.clear();
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()) !=
        REDIS_OK) {
      const std::string why = c->errstr;
      Give(c, true);
      return IoError("Redis at " + address() + ": " + why);
    }
  }
  std::vector<RedisReply> out(commands.size());
  Status first_error = Status::Ok();
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
      // A timeout or a closed connection: this connection's stream is out of step, drop it.
      const std::string why = c->err ? c->errstr : "no reply";
      const int err = errno;
      const bool eof = c->err == REDIS_ERR_EOF ||
                       (c->err == REDIS_ERR_IO && (err == ECONNRESET || err == EPIPE));
      Give(c, true);
      if (reused && eof && i == 0) {
        *stale = true;
        return IoError("Redis at " + address() + ": " + why);
      }
      MarkDown(why);
      return IoError("Redis at " + address() + ": " + why);
    }
    Status st = Convert(static_cast<redisReply*>(raw), &out[i]);
    freeReplyObject(raw);
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  Give(c, false);
  MarkUp();
  if (!first_error.ok()) return first_error;
  return out;
}

}  // namespace frugal::cache
