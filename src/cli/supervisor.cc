#include "cli/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <thread>
#include <utility>

namespace frugal::cli {

// Starts `frugal serve ... --port 0` and waits for its "listening on http://HOST:PORT" line.
StatusOr<Child> SpawnWorker(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return IoError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return IoError("fork failed");
  if (pid == 0) {
    // A worker never outlives `frugal up`, even when it is killed with SIGKILL.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);  // Ctrl-C goes to `frugal up`, which stops the workers in order
    dup2(pipefd[1], STDOUT_FILENO);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  Child c;
  c.pid = pid;
  c.out_fd = pipefd[0];
  c.args = args;
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  static const std::regex kListening(R"(listening on (http://[^\s:]+:\d+))");
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{c.out_fd, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      char buf[512];
      const ssize_t n = read(c.out_fd, buf, sizeof buf);
      if (n <= 0) break;  // it exited
      got.append(buf, static_cast<size_t>(n));
      std::smatch m;
      if (std::regex_search(got, m, kListening)) {
        c.url = m[1];
        return c;
      }
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  close(c.out_fd);
  return InvalidArgument("a worker did not start (see its error above)");
}

void StopWorkers(std::vector<Child>& kids, std::chrono::seconds grace) {
  for (auto& k : kids) {
    if (k.pid > 0) kill(k.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (auto& k : kids) {
    while (k.pid > 0 && waitpid(k.pid, nullptr, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(k.pid, SIGKILL);
        waitpid(k.pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (k.out_fd >= 0) close(k.out_fd);
  }
}

// A worker that died is started again on its old port, so the gateway finds it where it was
// (ejected meanwhile, then probed back half-open). A worker that will not start is retried with
// a growing pause; the gateway keeps it ejected until then.
void Supervise(std::vector<Child>& kids) {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < kids.size(); ++i) {
    Child& k = kids[i];
    if (k.pid > 0) {
      int status = 0;
      if (waitpid(k.pid, &status, WNOHANG) != k.pid) continue;
      std::fprintf(stderr, "frugal up: worker w%zu (pid %d) %s %d: starting it again on %s\n", i,
                   static_cast<int>(k.pid),
                   WIFSIGNALED(status) ? "was killed by signal" : "exited with",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), k.url.c_str());
      close(k.out_fd);
      k.pid = -1;
      k.out_fd = -1;
      k.retry_at = now;
    }
    if (now < k.retry_at) continue;
    std::vector<std::string> args = k.args;
    const std::string port = k.url.substr(k.url.rfind(':') + 1);
    for (size_t a = 0; a + 1 < args.size(); ++a) {
      if (args[a] == "--port") args[a + 1] = port;
    }
    auto c = SpawnWorker(args, std::chrono::seconds(300));
    if (!c.ok() || c->url != k.url) {
      if (c.ok()) {  // up, but elsewhere: the gateway would never find it
        kill(c->pid, SIGKILL);
        waitpid(c->pid, nullptr, 0);
        close(c->out_fd);
      }
      k.backoff = std::min(k.backoff * 2, std::chrono::milliseconds(30'000));
      k.retry_at = now + k.backoff;
      std::fprintf(stderr, "frugal up: worker w%zu did not come back on %s; next try in %lld ms\n",
                   i, k.url.c_str(), static_cast<long long>(k.backoff.count()));
      continue;
    }
    std::fprintf(stderr, "frugal up: worker w%zu back at %s (pid %d)\n", i, c->url.c_str(),
                 static_cast<int>(c->pid));
    c->args = k.args;
    k = std::move(*c);
  }
}

}  // namespace frugal::cli
