// The seams between the gateway's request path and the world it runs in: the HTTP client that
// reaches workers (Upstream) and the clock that delays retries (Timers). The gateway plugs in
// the real ones (http::Client, an asio timer thread); tests/unit/proxy_test.cc plugs in fakes and
// drives one request through retries and stream continuation with no socket and no sleep.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "http/client.h"

namespace frugal::gateway {

// Sends a request to a worker. The callbacks follow http::ClientCallbacks' contract: on_headers
// once before any data, on_data for body bytes, on_done exactly once (also after Cancel).
class Upstream {
 public:
  virtual ~Upstream() = default;
  // Returns an id for Cancel.
  virtual uint64_t Send(http::ClientRequest request, http::ClientCallbacks callbacks) = 0;
  // Ends a request early; its on_done reports "cancelled". A no-op when it is done.
  virtual void Cancel(uint64_t id) = 0;
};

// An Upstream over the project's HTTP client.
std::unique_ptr<Upstream> HttpUpstream(http::ClientOptions options);

// Runs `f` once after `delay`: with true when the delay ran out, false when the timer was
// cancelled first. The gateway's timers are never cancelled: at shutdown they run out, so every
// request waiting out a backoff still reaches its end (gateway.cc, Shutdown).
class Timers {
 public:
  virtual ~Timers() = default;
  virtual void After(std::chrono::microseconds delay, std::function<void(bool fired)> f) = 0;
};

}  // namespace frugal::gateway
