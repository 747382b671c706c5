// The Redis client without a Redis: addresses with credentials and rediss://, the cache config's
// credentials and TLS settings, and the transport against fake servers on loopback (AUTH and its
// refusal, NOAUTH, timeouts while connecting, during the TLS handshake and in a command). The
// real servers (AUTH, ACL users, TLS) are in tests/redis/redis_cache_test.cc.
#include "cache/redis_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.h"
#include "testing/temp_files.h"

namespace frugal::cache {
namespace {

using frugal::testing::ScopedEnv;
using frugal::testing::TempDir;

using Clock = std::chrono::steady_clock;
constexpr const char* kSecret = "hunter2-s3cret";

TEST(RedisAddressTest, PlainForms) {
  auto bare = ParseRedisAddress("cache.internal");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->host, "cache.internal");
  EXPECT_EQ(bare->port, 6379);
  EXPECT_FALSE(bare->tls);
  auto url = ParseRedisAddress("redis://10.0.0.7:6380/");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "10.0.0.7");
  EXPECT_EQ(url->port, 6380);
  EXPECT_TRUE(url->user.empty() && url->password.empty());
  EXPECT_FALSE(ParseRedisAddress("host:99999").ok());
  EXPECT_FALSE(ParseRedisAddress("redis://h:1/0").ok());  // no database selection
  EXPECT_FALSE(ParseRedisAddress("redis://h:1?timeout=1").ok());
  EXPECT_FALSE(ParseRedisAddress("").ok());
}

TEST(RedisAddressTest, TlsAndCredentials) {
  auto tls = ParseRedisAddress("rediss://redis.example.com:6380");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "redis.example.com");
  EXPECT_EQ(tls->port, 6380);

  // URL-decoded: %40 is '@', %3A ':' and %25 '%'.
  auto full = ParseRedisAddress("rediss://cache%2Dapp:p%40ss%3Aw%25rd@10.1.2.3:7000/");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_TRUE(full->tls);
  EXPECT_EQ(full->user, "cache-app");
  EXPECT_EQ(full->password, "p@ss:w%rd");
  EXPECT_EQ(full->host, "10.1.2.3");
  EXPECT_EQ(full->port, 7000);

  auto pass_only = ParseRedisAddress("redis://:only-a-password@h");
  ASSERT_TRUE(pass_only.ok());
  EXPECT_EQ(pass_only->user, "");
  EXPECT_EQ(pass_only->password, "only-a-password");
  EXPECT_EQ(pass_only->port, 6379);

  auto user_only = ParseRedisAddress("redis://app@h:1");  // the password from elsewhere
  ASSERT_TRUE(user_only.ok());
  EXPECT_EQ(user_only->user, "app");
  EXPECT_EQ(user_only->password, "");

  // An '@' in the password needs its escape only when it is the last one: the host follows the
  // last '@'.
  auto at = ParseRedisAddress("redis://u:a@b@h:2");
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->password, "a@b");
  EXPECT_EQ(at->host, "h");
}

TEST(RedisAddressTest, ErrorsNeverShowThePassword) {
  const std::string secret = kSecret;
  for (const std::string& bad :
       {"redis://app:" + secret + "@h:99999", "redis://app:" + secret + "%zz@h:1",
        "app:" + secret + "@h:1", "redis://app:" + secret + "@h:1/0"}) {
    auto r = ParseRedisAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().find(secret), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("***"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(RedactRedisAddress("rediss://u:" + secret + "@h:1"), "rediss://***@h:1");
  EXPECT_EQ(RedactRedisAddress("redis://h:1"), "redis://h:1");
}

TEST(RedisConfigTest, PasswordFromTheFileTheAddressOrTheEnvironment) {
  TempDir t("frugal_redis_unit");
  ScopedEnv none("FRUGAL_REDIS_PASSWORD", std::nullopt);
  CacheConfig c;
  c.redis = "redis://app@127.0.0.1:6390";
  c.redis_timeout_ms = 250;
  c.redis_password_file = t.Write("pw", std::string(kSecret) + "\r\nignored second line\n");
  auto o = RedisOptionsFor(c);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->user, "app");
  EXPECT_EQ(o->password, kSecret);  // the first line, without its line end
  EXPECT_EQ(o->command_timeout.count(), 250);
  EXPECT_FALSE(o->tls);

  // redis_user names the user when the address does not; both naming different ones is refused.
  CacheConfig u = c;
  u.redis = "127.0.0.1:6390";
  u.redis_user = "reporting";
  ASSERT_TRUE(RedisOptionsFor(u).ok());
  EXPECT_EQ(RedisOptionsFor(u)->user, "reporting");
  u.redis = "redis://app@127.0.0.1:6390";
  EXPECT_FALSE(RedisOptionsFor(u).ok());

  // Two passwords (address and file): refused, and the message holds neither.
  CacheConfig two = c;
  two.redis = std::string("redis://app:") + kSecret + "@127.0.0.1:6390";
  auto both = RedisOptionsFor(two);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message().find(kSecret), std::string::npos);

  // The environment, when neither the file nor the address gives one.
  CacheConfig env = c;
  env.redis_password_file.clear();
  {
    ScopedEnv set("FRUGAL_REDIS_PASSWORD", "from-the-env");
    auto e = RedisOptionsFor(env);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(e->password, "from-the-env");
    // The file wins over the environment.
    auto f = RedisOptionsFor(c);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->password, kSecret);
  }
  // A user without any password is a mistake, said in one line.
  auto nopw = RedisOptionsFor(env);
  ASSERT_FALSE(nopw.ok());
  EXPECT_NE(nopw.status().message().find("without a password"), std::string::npos);

  CacheConfig missing = c;
  missing.redis_password_file = (t.dir() / "no-such-file").string();
  auto m = RedisOptionsFor(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("cache.redis_password_file"), std::string::npos);
  CacheConfig empty = c;
  empty.redis_password_file = t.Write("empty", "\n");
  EXPECT_FALSE(RedisOptionsFor(empty).ok());
}

TEST(RedisConfigTest, TlsSettings) {
  TempDir t("frugal_redis_unit");
  ScopedEnv none("FRUGAL_REDIS_PASSWORD", std::nullopt);
  const std::string ca = t.Write("ca.pem", "not really a certificate");
  CacheConfig c;
  c.redis = "rediss://redis.internal:6380";
  c.redis_tls_ca_file = ca;
  c.redis_tls_server_name = "redis.example.com";
  auto o = RedisOptionsFor(c);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->tls);
  EXPECT_EQ(o->tls_ca_file, ca);
  EXPECT_EQ(o->tls_server_name, "redis.example.com");

  CacheConfig flag;
  flag.redis = "redis.internal:6380";
  flag.redis_tls = true;
  ASSERT_TRUE(RedisOptionsFor(flag).ok());
  EXPECT_TRUE(RedisOptionsFor(flag)->tls);

  // TLS files without TLS, a certificate without its key, a file that cannot be read.
  CacheConfig plain;
  plain.redis = "redis.internal:6380";
  plain.redis_tls_ca_file = ca;
  EXPECT_NE(RedisOptionsFor(plain).status().message().find("needs TLS"), std::string::npos);
  CacheConfig half = c;
  half.redis_tls_cert_file = ca;
  EXPECT_FALSE(RedisOptionsFor(half).ok());
  CacheConfig gone = c;
  gone.redis_tls_ca_file = (t.dir() / "gone.pem").string();
  EXPECT_NE(RedisOptionsFor(gone).status().message().find("cache.redis_tls_ca_file"),
            std::string::npos);

  // Settings for a Redis that is not configured would be ignored: refused.
  CacheConfig embedded;
  embedded.redis_tls = true;
  EXPECT_FALSE(ValidateRedisConfig(embedded).ok());
  embedded.redis_tls = false;
  EXPECT_TRUE(ValidateRedisConfig(embedded).ok());

  // A CA file that holds no certificate is refused when the client is made.
  RedisClient client(*o);
  ASSERT_FALSE(client.setup().ok());
  EXPECT_EQ(client.setup().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(client.setup().message().find(ca), std::string::npos) << client.setup().message();
  EXPECT_EQ(client.Command({"PING"}).status().message(), client.setup().message());
}

// A TCP listener on 127.0.0.1 that serves each connection with `serve` on its own thread.
class FakeServer {
 public:
  using Serve = std::function<void(int fd)>;
  explicit FakeServer(Serve serve, bool accept = true) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen";
      return;
    }
    port_ = ntohs(a.sin_port);
    // Without accept(), the kernel still completes the TCP handshake (the backlog): a server
    // that never says a word.
    if (accept) {
      acceptor_ = std::thread([this] {
        for (;;) {
          const int c = ::accept(fd_, nullptr, nullptr);
          if (c < 0) return;
          connections_.fetch_add(1);
          workers_.emplace_back([this, c] {
            serve_(c);
            ::close(c);
          });
        }
      });
    }
  }
  ~FakeServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& w : workers_) w.join();
  }
  RedisOptions Options() const {
    RedisOptions o;
    o.port = port_;
    o.connect_timeout = std::chrono::milliseconds(300);
    o.command_timeout = std::chrono::milliseconds(300);
    return o;
  }
  int connections() const { return connections_.load(); }

 private:
  Serve serve_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

// Reads RESP commands (arrays of bulk strings) from fd and answers each with reply(argv); ends
// when the client closes or reply returns "".
void ServeCommands(int fd, const std::function<std::string(const std::vector<std::string>&)>& reply,
                   std::vector<std::vector<std::string>>* seen = nullptr) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    // Parse what is complete.
    for (;;) {
      size_t pos = 0;
      auto line = [&](std::string* out) {
        const size_t e = buf.find("\r\n", pos);
        if (e == std::string::npos) return false;
        *out = buf.substr(pos, e - pos);
        pos = e + 2;
        return true;
      };
      std::string head;
      if (!line(&head) || head.empty() || head[0] != '*') break;
      const int n = std::atoi(head.c_str() + 1);
      std::vector<std::string> argv;
      bool complete = true;
      for (int i = 0; i < n && complete; ++i) {
        std::string len;
        if (!line(&len)) {
          complete = false;
          break;
        }
        const auto l = static_cast<size_t>(std::atoll(len.c_str() + 1));
        if (buf.size() < pos + l + 2) {
          complete = false;
          break;
        }
        argv.push_back(buf.substr(pos, l));
        pos += l + 2;
      }
      if (!complete) break;
      buf.erase(0, pos);
      if (seen) seen->push_back(argv);
      const std::string r = reply(argv);
      if (r.empty()) return;
      (void)::send(fd, r.data(), r.size(), MSG_NOSIGNAL);
    }
    const ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) return;
    buf.append(chunk, static_cast<size_t>(got));
  }
}

TEST(RedisClientTest, AuthenticatesEachNewConnectionFirst) {
  std::vector<std::vector<std::string>> seen;
  FakeServer server([&](int fd) {
    bool authed = false;
    ServeCommands(
        fd,
        [&](const std::vector<std::string>& argv) -> std::string {
          if (argv[0] == "AUTH") {
            authed = argv.size() == 3 && argv[1] == "app" && argv[2] == kSecret;
            return authed ? "+OK\r\n"
                          : "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
          }
          if (!authed) return "-NOAUTH Authentication required.\r\n";
          return "+PONG\r\n";
        },
        &seen);
  });
  RedisOptions o = server.Options();
  o.user = "app";
  o.password = kSecret;
  RedisClient good(o);
  auto pong = good.Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->str, "PONG");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<std::string>{"AUTH", "app", kSecret}));
  EXPECT_EQ(seen[1], (std::vector<std::string>{"PING"}));
  ASSERT_TRUE(good.Command({"PING"}).ok());  // the pooled connection: no second AUTH
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(good.reachable());

  // A wrong password: refused, in words that name the server and never hold the password.
  o.password = std::string(kSecret) + "-wrong";
  o.retry_after = std::chrono::milliseconds(60'000);
  RedisClient wrong(o);
  auto refused = wrong.Command({"PING"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  const std::string m = refused.status().message();
  EXPECT_NE(m.find(wrong.address()), std::string::npos) << m;
  EXPECT_NE(m.find("WRONGPASS"), std::string::npos) << m;
  EXPECT_EQ(m.find("unreachable"), std::string::npos) << m;
  EXPECT_EQ(m.find(kSecret), std::string::npos) << m;
  EXPECT_FALSE(wrong.reachable());
  // Refused once: the next commands fail at once with the same words, without connecting.
  const int connections = server.connections();
  auto again = wrong.Command({"PING"});
  EXPECT_EQ(again.status().message(), m);
  EXPECT_EQ(server.connections(), connections);

  // No password at all, to a server that wants one: NOAUTH, a refusal too.
  RedisClient none(server.Options());
  auto noauth = none.Command({"PING"});
  ASSERT_FALSE(noauth.ok());
  EXPECT_EQ(noauth.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(noauth.status().message().find("NOAUTH"), std::string::npos);
  EXPECT_NE(noauth.status().message().find("no password"), std::string::npos);
  EXPECT_FALSE(none.reachable());
}

TEST(RedisClientTest, ErrorRepliesAndPipelines) {
  FakeServer server([](int fd) {
    ServeCommands(fd, [](const std::vector<std::string>& argv) -> std::string {
      if (argv[0] == "GET") return "$5\r\nhello\r\n";
      if (argv[0] == "MGET") return "*3\r\n$1\r\na\r\n$-1\r\n:7\r\n";
      return "-ERR unknown command '" + argv[0] + "'\r\n";
    });
  });
  RedisClient c(server.Options());
  auto r = c.Pipeline({{"GET", "k"}, {"MGET", "a", "b"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].str, "hello");
  ASSERT_EQ((*r)[1].elements.size(), 3u);
  EXPECT_TRUE((*r)[1].elements[1].is_nil());
  EXPECT_EQ((*r)[1].elements[2].integer, 7);
  auto err = c.Command({"NOPE"});
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kInternal);
  EXPECT_TRUE(c.reachable());  // an error reply is the command's, not the connection's
  EXPECT_TRUE(c.Command({"GET", "k"}).ok());
}

TEST(RedisClientTest, TimeoutsHoldInTheCommandAndTheTlsHandshake) {
  // A server that accepts and never answers.
  FakeServer silent([](int fd) {
    char b[256];
    while (::recv(fd, b, sizeof b, 0) > 0) {
    }
  });
  {
    RedisClient c(silent.Options());
    const auto t0 = Clock::now();
    auto r = c.Command({"PING"});
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
    EXPECT_GE(ms, 250);
    EXPECT_LT(ms, 2000);
    EXPECT_FALSE(c.reachable());
  }
  // TLS to a server that never sends its hello: the handshake gives up at the connect timeout.
  FakeServer mute([](int) {}, /*accept=*/false);
  RedisOptions o = mute.Options();
  o.tls = true;
  RedisClient c(o);
  ASSERT_TRUE(c.setup().ok()) << c.setup().ToString();
  const auto t0 = Clock::now();
  auto r = c.Command({"PING"});
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS handshake timed out"), std::string::npos)
      << r.status().message();
  EXPECT_GE(ms, 250);
  EXPECT_LT(ms, 2000);
  // And then fails fast for retry_after instead of waiting again.
  const auto t1 = Clock::now();
  EXPECT_FALSE(c.Command({"PING"}).ok());
  const double fast_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  EXPECT_LT(fast_ms, 100);
}

TEST(RedisClientTest, ConnectionRefusedIsUnreachable) {
  int port = 0;
  {
    FakeServer gone([](int) {}, /*accept=*/false);
    port = gone.Options().port;
  }  // closed: nothing listens there now
  RedisOptions o;
  o.port = port;
  RedisClient c(o);
  auto r = c.Command({"PING"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("Connection refused"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace frugal::cache
