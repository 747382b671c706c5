// Frugal's HTTP/1.1 server: event-driven on Boost.Asio with Boost.Beast, shared by the worker and
// the gateway.
//
// - A few event-loop threads serve every connection; a response that waits on generation holds
//   no thread, so thousands of open streams cost memory, not threads.
// - Keep-alive, request-size limits (413), a read timeout for a whole request and an idle timeout
//   between requests on a kept-alive connection.
// - Responses whole (Send) or streamed with chunked transfer encoding (StartStream / Write / End),
//   which carries Server-Sent Events when the content type is text/event-stream.
// - A client that goes away is noticed while its response is pending (a watch on the socket),
//   not only at the next write: OnClose handlers run then, so generation can be cancelled.
// - A client that half-closes (shuts its sending side after the request) still gets its answer:
//   an end of stream while a response is pending is told from a client that has gone by an
//   interim "100 Continue" the client must accept; only a reset after it means gone.
// - A connection limit (503 beyond it, a reserved /health still answered) and, when the process
//   runs out of descriptors (EMFILE), a pause before the next accept instead of a busy loop; a
//   spare descriptor lets the server shed the connection it cannot take.
// - Graceful shutdown: stop accepting, let in-flight responses finish (up to a grace period),
//   then close.
//
// Thread safety: Server methods from any thread. A Responder may be used from any thread: its
// calls are posted to the connection's strand. The handler runs on an event-loop thread and must
// not block (hand long work to another thread and answer through the Responder).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "frugal/status.h"

namespace frugal::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct ServerOptions {
  std::string host = "127.0.0.1";                  // address to bind
  uint16_t port = 8080;                            // 0 = any free port (see Server::port())
  int io_threads = 2;                              // event-loop threads
  size_t max_body_bytes = 1 << 20;                 // request bodies beyond this get 413
  std::chrono::milliseconds read_timeout{30'000};  // to receive one whole request
  std::chrono::milliseconds idle_timeout{60'000};  // a kept-alive connection with no request
  // Body of the error responses the server itself makes (400, 404 on bad requests, 413, 503
  // while draining): given the status and a message, returns a JSON body. Default: OpenAI's
  // {"error": {"message", "type", "param", "code"}} shape.
  std::function<std::string(int status, std::string_view message)> error_body;
  // Sent with every response, the server's own errors included (e.g. a simulated worker's label).
  Headers default_headers;
  // Open connections served normally; 0 = half of the process's open-file limit (at least 16),
  // so that upstream connections, files and the overflow below keep descriptors to spare. At
  // the limit, a connection that waits for a request (idle keep-alive, or never used) is closed
  // to make room for the new one; only when none is idle does the overflow below apply.
  int max_connections = 0;
  // Connections past max_connections still accepted, each for one request: a reserved path is
  // answered, anything else gets 503 (`connection_limit`) and the connection closes. Past this
  // too, a connection is closed as soon as it is accepted.
  int overflow_connections = 64;
  // Paths answered even over the connection limit (a load balancer's health check).
  std::vector<std::string> reserved_paths = {"/health"};
};

// What the server refused, for /metrics.
struct ConnectionStats {
  int64_t open = 0;             // connections open now
  int64_t limit = 0;            // max_connections in effect
  int64_t over_limit = 0;       // answered 503 (or only a reserved path) over the limit
  int64_t shed = 0;             // closed at once: over the limit and the overflow
  int64_t accept_failures = 0;  // accept() errors (EMFILE, ENFILE, ...), each followed by a pause
  int64_t evicted_idle = 0;     // idle connections closed to make room at the limit
};

struct Request {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // target without the query string
  std::string query;                           // after '?', or empty
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote;  // the client's IP address (the peer of the connection)

  // A header's value or "" (name in lower case).
  const std::string& Header(const std::string& name) const;
};

// Answers one request: exactly one of Send or StartStream (+ Writes + End). Must not outlive the
// Server that made it.
class Responder {
 public:
  virtual ~Responder() = default;
  virtual void Send(int status, std::string content_type, std::string body,
                    Headers headers = {}) = 0;
  virtual void StartStream(int status, std::string content_type, Headers headers = {}) = 0;
  virtual void Write(std::string data) = 0;  // one chunk
  virtual void End() = 0;
  // f runs once, on an event-loop thread, if the client disconnects before the response is
  // complete (never after a complete response). Set it before handing the Responder on.
  virtual void OnClose(std::function<void()> f) = 0;
  // True once the client is known to be gone.
  virtual bool closed() const = 0;
};

using Handler = std::function<void(const Request&, std::shared_ptr<Responder>)>;

// Default error body: {"error": {"message": m, "type": t, "param": null, "code": c}} with the
// type and code OpenAI's clients expect for the status.
std::string OpenAiErrorBody(int status, std::string_view message, std::string_view code = {});

class Server {
 public:
  // Binds, listens and starts the event-loop threads.
  static StatusOr<std::unique_ptr<Server>> Start(ServerOptions options, Handler handler);
  // Shutdown(0) if still running.
  ~Server();

  uint16_t port() const;
  // Stops accepting; requests in flight may finish within `grace`, idle keep-alive connections
  // close at once; then every connection closes and the threads stop. Idempotent.
  void Shutdown(std::chrono::milliseconds grace);
  // Connections open now and responses still pending (for tests and metrics).
  int64_t open_connections() const;
  ConnectionStats connection_stats() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Gauges of a server's connection stats in `metrics`, named PREFIX_http_connections (open),
// _http_connection_limit, _http_connections_over_limit_total (answered only on a reserved path
// or refused with 503), _http_connections_shed_total, _http_connections_evicted_idle_total and
// _http_accept_failures_total. `server` is read at each scrape (it may not exist yet).
void AddConnectionMetrics(MetricsRegistry& metrics, const std::string& prefix,
                          std::function<const Server*()> server);

}  // namespace frugal::http
