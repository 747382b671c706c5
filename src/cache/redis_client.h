// A small synchronous Redis client for the semantic cache's shared backend: its own connections
// (a socket, optionally TLS through OpenSSL), hiredis only to encode commands
// (redisFormatCommandArgv) and to parse replies (redisReader). Debian 12's hiredis 0.14 has no
// TLS (hiredis_ssl arrived in 1.0), hence the own transport.
//
// - A pool of connections: each command takes one (or opens one), and gives it back unless it
//   broke; commands from many threads run in parallel.
// - Timeouts: connecting (TCP, then the TLS handshake) finishes within `connect_timeout`, and
//   every wait for the server during a command (to send, to receive the next bytes of a reply)
//   within `command_timeout`, so an unreachable or stalled Redis costs a bounded wait.
// - AUTH: with a password, every new connection sends `AUTH [user] password` before its first
//   command (RESP2, no HELLO). The password is never logged nor part of any error message.
// - TLS: the server's certificate is verified against `tls_ca_file` (or the system store) and
//   its name against `tls_server_name` (or the host): SSL_VERIFY_PEER and
//   X509_VERIFY_PARAM_set1_host (set1_ip_asc for an IP address). There is no switch to skip the
//   verification: a self-signed server is verified by naming its certificate as the CA file.
// - When Redis cannot be reached, or refuses this client (credentials, certificate), further
//   commands fail at once (no connect attempt) for `retry_after`, then one try again: a Redis
//   that is down costs the caller microseconds, not a connect timeout per request. Each change
//   (unreachable, refused, reachable again) is logged once.
//
// Errors: an unreachable server, a timeout or a broken connection is IoError; a server that
// refuses the credentials (WRONGPASS, NOAUTH, any error to AUTH), a certificate that fails
// verification, or options the client cannot use (an unreadable CA file) is InvalidArgument: a
// configuration error, which RedisCache::Open refuses to start with. A Redis error reply to a
// command is Internal, carrying its text.
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
  std::chrono::milliseconds connect_timeout{200};   // TCP connect + TLS handshake
  std::chrono::milliseconds command_timeout{1000};  // each wait for the server in a command
  std::chrono::milliseconds retry_after{1000};      // after a failed connect or a refusal
  size_t max_idle = 16;                             // connections kept open between commands
  // AUTH on every new connection when `password` is set: `AUTH user password` with a user
  // (Redis 6 ACL), `AUTH password` without (the default user). Never logged nor shown.
  std::string user;
  std::string password;
  // TLS (rediss://): the server's certificate is always verified.
  bool tls = false;
  std::string tls_ca_file;      // PEM CA certificate(s) to verify the server; "" = system store
  std::string tls_cert_file;    // PEM client certificate (chain), with tls_key_file; optional
  std::string tls_key_file;     // PEM private key of tls_cert_file (unencrypted)
  std::string tls_server_name;  // SNI and the name verified in the certificate; "" = host
};

// "host", "host:port", "redis://host:port", "rediss://host:port" (TLS), with an optional
// trailing "/" and optional credentials after the scheme: "redis://user:password@host:port",
// "redis://:password@host" (the default user), "redis://user@host" (the password from
// elsewhere); user and password are URL-decoded (%40 is '@'). No database selection. Error
// messages show the address with its credentials replaced by "***".
StatusOr<RedisOptions> ParseRedisAddress(std::string_view address);
// The address as it may be shown: credentials replaced by "***".
std::string RedactRedisAddress(std::string_view address);

class RedisClient {
 public:
  explicit RedisClient(RedisOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Whether the options can be used (the TLS files are read when the client is made): an
  // unreadable or invalid CA, certificate or key file is InvalidArgument, and every command then
  // fails with it.
  const Status& setup() const { return setup_; }

  // One command (argv are binary-safe). A Redis error reply is an Internal status carrying its
  // text; an unreachable server or a timeout is IoError; a refusal is InvalidArgument (above).
  StatusOr<RedisReply> Command(const std::vector<std::string>& argv);
  // Several commands sent at once on one connection (MULTI ... EXEC is such a pipeline); the
  // replies in order. The first error reply fails the whole call.
  StatusOr<std::vector<RedisReply>> Pipeline(const std::vector<std::vector<std::string>>& commands);

  // Whether the last command reached Redis and was let in.
  bool reachable() const { return state_.load() == kUp; }
  const RedisOptions& options() const { return opt_; }
  // "host:port" (never the credentials).
  std::string address() const { return opt_.host + ":" + std::to_string(opt_.port); }

 private:
  class Connection;  // a socket, TLS over it when options().tls, and a reply reader
  struct Tls;        // the OpenSSL context, when options().tls
  enum State { kUp, kUnreachable, kRefused };
  StatusOr<std::unique_ptr<Connection>> Take(bool* reused);
  StatusOr<std::unique_ptr<Connection>> Connect();
  StatusOr<std::vector<RedisReply>> Send(const std::vector<std::vector<std::string>>& commands,
                                         bool* stale);
  void Give(std::unique_ptr<Connection> c, bool broken);
  // Counts `why` as an outage (IoError) or a refusal (InvalidArgument): commands fail fast with
  // it for retry_after, and a change of state is logged.
  void MarkDown(const Status& why);
  void MarkUp();

  RedisOptions opt_;
  std::unique_ptr<Tls> tls_;
  Status setup_;
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ FRUGAL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point down_until_ FRUGAL_GUARDED_BY(mu_){};
  Status down_why_ FRUGAL_GUARDED_BY(mu_);
  std::atomic<int> state_{kUp};
};

}  // namespace frugal::cache
