// The process supervisor of `frugal up`: starts workers as children of this binary, restarts
// the ones that die on their old port, and stops them in order.
//
// - A child gets PR_SET_PDEATHSIG (it never outlives its parent, even after SIGKILL), an empty
//   signal mask and its own process group (Ctrl-C reaches the parent only, which stops the
//   children after the gateway).
// - It is started with `--port 0` and found from its "listening on http://HOST:PORT" line.
// - Restarts reuse the port the child had; one that will not come back there is retried with a
//   pause that doubles up to 30 s.
//
// Thread safety: none; one thread (the one running `frugal up`) owns the children.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "frugal/status.h"

namespace frugal::cli {

struct Child {
  pid_t pid = -1;
  int out_fd = -1;  // its stdout, until the listening line
  std::string url;
  // Supervision: how to start it again, and when to try next after a failed restart.
  std::vector<std::string> args;
  std::chrono::steady_clock::time_point retry_at{};
  std::chrono::milliseconds backoff{500};
};

// Starts this binary with `args` (argv[0] included; "--port" "0" among them) and waits up to
// `timeout` for its listening line.
StatusOr<Child> SpawnWorker(const std::vector<std::string>& args, std::chrono::seconds timeout);
// SIGTERM to every child, SIGKILL to those still there after `grace`.
void StopWorkers(std::vector<Child>& kids, std::chrono::seconds grace);
// Reaps children that died and starts them again (call it periodically).
void Supervise(std::vector<Child>& kids);

}  // namespace frugal::cli
