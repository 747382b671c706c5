// Starts redis-stack-server (Redis + RediSearch) on 127.0.0.1 and a free port for a test, through
// scripts/redis-stack.sh (the build's FRUGAL_REDIS_LAUNCHER, or the environment's), and stops it.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cache/redis_client.h"

namespace frugal::testing {

inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

class RedisServer {
 public:
  // port 0: a free one.
  explicit RedisServer(int port = 0) : port_(port ? port : FreePort()) {
    dir_ = std::filesystem::temp_directory_path() /
           ("frugal-redis-" + std::to_string(::getpid()) + "-" + std::to_string(port_));
    std::filesystem::create_directories(dir_);
  }
  ~RedisServer() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Empty when it runs and answers PING; otherwise why not. `extra` goes to redis-server after
  // the port, dir and log file (later ones win: {"--port", "0", "--tls-port", ...} serves TLS
  // only); `probe` is how to reach it (its port is set here), e.g. with a password or TLS.
  std::string Start(const std::vector<std::string>& extra = {},
                    cache::RedisOptions probe = cache::RedisOptions{}) {
    // scripts/redis-stack.sh of this source tree, unless the environment names another.
    const char* launcher = std::getenv("FRUGAL_REDIS_LAUNCHER");
    if (launcher == nullptr || *launcher == '\0') launcher = FRUGAL_REDIS_LAUNCHER;
    const std::string port = std::to_string(port_), dir = dir_.string(),
                      log = (dir_ / "redis.log").string();
    std::vector<std::string> args = {launcher, "--port", port, "--dir", dir, "--logfile", log};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execv(launcher, argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) return "fork failed";
    cache::RedisOptions o = std::move(probe);
    o.port = port_;
    o.retry_after = std::chrono::milliseconds(0);
    cache::RedisClient c(o);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (c.Command({"PING"}).ok()) return "";
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "redis-server exited at start (status " + std::to_string(status) + "); see " + log;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "redis-server did not answer within 20 s";
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);  // like a crash: nothing is saved
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port() const { return port_; }
  // Its own directory (removed with it): for certificates, password files.
  const std::filesystem::path& dir() const { return dir_; }
  cache::RedisOptions Options() const {
    cache::RedisOptions o;
    o.port = port_;
    return o;
  }

 private:
  int port_;
  pid_t pid_ = -1;
  std::filesystem::path dir_;
};

}  // namespace frugal::testing
