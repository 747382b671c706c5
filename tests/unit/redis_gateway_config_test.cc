// The gateway config's `cache:` keys for the Redis connection (src/gateway/config.cc): parsed,
// resolved to the client's options (the password read from its file), and refused in one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cache/cache.h"
#include "gateway/config.h"
#include "testing/temp_files.h"

namespace frugal::cache {
namespace {

using frugal::testing::ScopedEnv;
using frugal::testing::TempDir;

constexpr const char* kSecret = "hunter2-s3cret";

TEST(RedisGatewayConfigTest, CacheRedisKeys) {
  TempDir t("frugal_redis_config");
  ScopedEnv none("FRUGAL_REDIS_PASSWORD", std::nullopt);
  const std::string pw = t.Write("pw", std::string(kSecret) + "\n");
  const std::string ca = t.Write("ca.pem", "x");
  auto c = gateway::ParseGatewayConfig(
      "cache:\n  redis: rediss://redis.internal:6380\n  redis_user: cache-app\n"
      "  redis_password_file: " +
      pw + "\n  redis_tls: true\n  redis_tls_ca_file: " + ca + "\n  redis_tls_cert_file: " + ca +
      "\n  redis_tls_key_file: " + ca + "\n  redis_tls_server_name: redis.example.com\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->cache.redis_user, "cache-app");
  EXPECT_EQ(c->cache.redis_password_file, pw);
  EXPECT_TRUE(c->cache.redis_tls);
  EXPECT_EQ(c->cache.redis_tls_ca_file, ca);
  EXPECT_EQ(c->cache.redis_tls_cert_file, ca);
  EXPECT_EQ(c->cache.redis_tls_key_file, ca);
  EXPECT_EQ(c->cache.redis_tls_server_name, "redis.example.com");
  auto o = RedisOptionsFor(c->cache);
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->password, kSecret);
  // There is no key for the password itself: it is not to sit in the config.
  auto inline_pw = gateway::ParseGatewayConfig(
      "cache:\n  redis: redis.internal:6380\n  redis_password: " + std::string(kSecret) + "\n");
  ASSERT_FALSE(inline_pw.ok());
  EXPECT_NE(inline_pw.status().message().find("unknown key 'redis_password'"), std::string::npos);
  // Refusals are one line naming the key.
  for (const std::string& bad :
       {std::string("cache:\n  redis: h:1\n  redis_password_file: /nonexistent/pw\n"),
        std::string("cache:\n  redis: h:1\n  redis_tls_ca_file: ") + ca + "\n",
        std::string("cache:\n  redis_tls: true\n")}) {
    auto r = gateway::ParseGatewayConfig(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("cache.redis"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace frugal::cache
