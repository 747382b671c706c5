// Frugal's HTTP/1.1 client: event-driven on Boost.Asio/Beast, the counterpart of server.h (the
// gateway talks to workers through it; tests use it too).
//
// - Asynchronous: Send returns at once; callbacks run on the client's event-loop thread(s) and
//   must not block. Many requests in flight need no thread each.
// - Streaming: the body is handed over as it arrives (chunked transfer decoded), so SSE from a
//   worker can be relayed chunk by chunk; SseParser splits it into events.
// - Keep-alive: connections are pooled per host:port and reused.
// - Timeouts: connect, and the whole response; Cancel ends a request early.
// - Every request ends with exactly one on_done: Ok, or why it failed (connection refused,
//   timeout, reset, cancelled), and `bytes_received` tells whether anything had arrived (so a
//   caller knows whether it may retry elsewhere).
//
// Thread safety: Send / Cancel / Fetch from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/status.h"
#include "http/server.h"

namespace frugal::http {

struct ClientOptions {
  int io_threads = 1;
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds response_timeout{600'000};  // from send to the last body byte
  size_t max_idle_per_host = 64;                        // pooled keep-alive connections
};

struct ClientRequest {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string method = "GET";
  std::string target = "/";
  Headers headers;
  std::string body;
  // This request's own limit from send to the last body byte, instead of the client's
  // response_timeout (0: the client's). Running out of it ends the request with
  // DeadlineExceeded; a connect that times out is an IoError (the server was not reached).
  std::chrono::milliseconds response_timeout{0};
};

struct ClientCallbacks {
  std::function<void(int status, const Headers& headers)> on_headers;  // once, before any data
  std::function<void(std::string_view data)> on_data;                  // body bytes as they arrive
  // Exactly once. bytes_received: response bytes (header included) seen before the end.
  std::function<void(const Status& status, size_t bytes_received)> on_done;
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;
  const std::string* Header(std::string_view name) const;  // case-insensitive
};

class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();  // cancels what is in flight (on_done: cancelled) and stops the threads
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Starts a request; returns an id for Cancel.
  uint64_t Send(ClientRequest request, ClientCallbacks callbacks);
  // Ends a request early; its on_done reports "cancelled". No-op when already done.
  void Cancel(uint64_t id);
  // Synchronous convenience: the whole response.
  StatusOr<ClientResponse> Fetch(ClientRequest request);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Server-Sent Events: feed body bytes in any pieces; complete events come out.
struct SseEvent {
  std::string event;  // "" = "message"
  std::string data;   // data lines joined with '\n'
  std::string id;
};

class SseParser {
 public:
  // Calls on_event for every event completed by `bytes`.
  void Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);

 private:
  std::string line_;  // partial line
  SseEvent current_;
  bool has_data_ = false;
  bool last_cr_ = false;
};

}  // namespace frugal::http
