// One upstream try of a completion request (Envoy's "upstream request"): the request goes to the
// leased worker, a streamed answer is relayed to the client event by event as it arrives, a
// non-streamed one is buffered, and when the worker is done the attempt hands back one
// AttemptOutcome. It decides nothing: retrying, continuing a broken stream, answering and
// reporting the worker's health are the ProxyRequest's (proxy.h), which reads the outcome.
//
// Threads: the callbacks of one attempt run one after another on an HTTP client thread; Cancel
// may come from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/openai_response.h"
#include "balancer/worker_pool.h"
#include "common/metrics.h"
#include "common/thread_annotations.h"
#include "frugal/status.h"
#include "gateway/upstream.h"
#include "http/client.h"
#include "http/server.h"

namespace frugal::gateway {

// The client's side of a streamed answer, kept across attempts (a stream continued on another
// worker is still one stream). Owned by the ProxyRequest; the running attempt writes into it.
struct ClientStream {
  std::shared_ptr<http::Responder> out;
  bool wants_stream = false;  // the client asked for SSE
  bool chat = true;
  std::chrono::steady_clock::time_point start;  // the request's arrival, for the TTFT
  MetricsRegistry::Histogram* ttft = nullptr;   // null: not observed
  bool started = false;    // the client's stream has begun: no retry any more, only continuation
  bool sent_any = false;   // a body byte went to the client
  api::StreamNotes notes;  // the answer relayed so far (every attempt), its id, end and usage
  // Continuing a broken stream: this attempt's events are rewritten into the stream the client
  // has (its id, no second role delta, usage over the whole answer).
  bool continuing = false;
  int64_t prefix_tokens = 0;  // notes.pieces relayed before the current attempt
};

// What one attempt came to.
struct AttemptOutcome {
  Lease lease;            // the worker it ran on, handed back for ReportRequest
  Status transport;       // the HTTP client's end: ok, kDeadlineExceeded, kIoError, cancelled
  size_t bytes = 0;       // response bytes seen (0: the worker never answered)
  int status = 0;         // the worker's HTTP status, 0 when none arrived
  http::Headers headers;  // the worker's response headers
  std::string body;       // a response not relayed as a stream: the whole body
  bool saw_done = false;  // a relayed stream reached [DONE]
};

// The headers of an answer the gateway relays: a cache miss, the worker that answered, and the
// worker's X-Frugal-Simulated when it has one.
http::Headers RelayHeaders(const std::string& worker, const http::Headers& upstream);

class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  // `stream` must outlive the attempt's callbacks (the ProxyRequest owns both).
  Attempt(Upstream& upstream, ClientStream& stream) : upstream_(upstream), stream_(stream) {}

  // Sends `request` to the leased worker; `done` runs exactly once, on an HTTP client thread.
  void Start(http::ClientRequest request, Lease lease, std::function<void(AttemptOutcome)> done);
  // Ends the attempt early (the client left); `done` still runs, with a cancelled transport.
  void Cancel();

 private:
  void OnHeaders(int status, const http::Headers& headers);
  void OnData(std::string_view data);
  void OnDone(const Status& st, size_t bytes);
  // Relays whole events of a first stream as they came; notes what they say.
  std::string RelayEvents(std::string_view data);
  // Rewrites a continuation's events into the client's stream.
  std::string ContinueEvents(std::string_view data);

  Upstream& upstream_;
  ClientStream& stream_;
  std::function<void(AttemptOutcome)> done_;
  AttemptOutcome outcome_;
  bool relaying_ = false;  // this attempt's bytes go to the client's stream
  http::SseParser sse_;
  std::string pending_;  // the start of an SSE event not complete yet: held back from the client
  Mutex mu_;
  std::optional<uint64_t> id_ FRUGAL_GUARDED_BY(mu_);
  bool cancelled_ FRUGAL_GUARDED_BY(mu_) = false;
};

}  // namespace frugal::gateway
