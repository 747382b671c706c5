// The client's side of one proxied completion (Envoy's "router"): picks a worker, runs an
// Attempt there, and reads its outcome: answer, retry on another worker before the first byte
// (connection refused, 503 from a full queue), continue a stream that broke midway on another
// worker from the text the client already has, or refuse cleanly (503 + Retry-After, 502, 504).
// Every request gets exactly one response.
//
// It neither looks up nor stores in the cache: when it is done it hands its result, with the
// complete answer when there is one, to the `done` it was started with, and the caller decides
// what to keep (gateway.cc stores it through the CacheFront).
//
// Threads: Start runs on the caller's thread (an HTTP strand or the cache pool); each attempt's
// outcome arrives on an HTTP client thread; retries and continuations start on the Timers'
// thread; Cancel comes from the server's thread when the client leaves. Attempts of one request
// never overlap, so its state needs no lock but the current attempt's handle.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/openai_response.h"
#include "balancer/policy.h"
#include "balancer/retry_policy.h"
#include "balancer/worker_pool.h"
#include "common/metrics.h"
#include "common/thread_annotations.h"
#include "gateway/attempt.h"
#include "gateway/stats.h"
#include "gateway/upstream.h"
#include "http/server.h"

namespace frugal::gateway {

// The proxy's counters (the gateway registers them; tests may leave any null).
struct ProxyMetrics {
  MetricsRegistry::Counter* retries = nullptr;
  MetricsRegistry::Counter* stream_errors = nullptr;
  MetricsRegistry::Counter* timeouts = nullptr;
  MetricsRegistry::Counter* continuations = nullptr;
  MetricsRegistry::Histogram* ttft = nullptr;
  std::atomic<int64_t> retried{0};  // for /status.json's totals
};

// What every request shares; owned by the gateway and outliving every request.
struct ProxyContext {
  WorkerPool* pool = nullptr;
  Policy* policy = nullptr;
  RetryPolicy* retry = nullptr;
  Upstream* upstream = nullptr;
  Timers* timers = nullptr;
  TrafficStats* stats = nullptr;  // null: not recorded
  ProxyMetrics* metrics = nullptr;
  const std::atomic<bool>* stopped = nullptr;  // the gateway is shutting down: no new attempt
  int max_continuations = 2;                   // times one stream may move to another worker
  double request_timeout_s = 300;              // for the 504's message
  // The key the gateway sends a worker ("" for none).
  std::function<std::string(const std::string& worker)> worker_key;
  // The workers known not to serve `model` (their model lists lack it).
  std::function<std::vector<std::string>(const std::string& model)> lacking_model;
};

// The completion to proxy.
struct ProxyInput {
  bool chat = true;
  bool stream = false;
  std::string body;   // forwarded as the client sent it
  std::string model;  // for routing and messages
  RequestCost cost;
  RequestPrefix prefix;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point deadline;  // start + request_timeout_s
  bool keep_answer = false;  // read the answer back for `done` (a cacheable request)
};

// How a proxied request ended.
struct ProxyResult {
  int status = 0;  // what the client was answered; 499 when it left first
  // A complete (finish_reason stop or length), successful answer, when keep_answer asked.
  std::optional<api::CompletionText> answer;
};

class ProxyRequest : public std::enable_shared_from_this<ProxyRequest> {
 public:
  ProxyRequest(const ProxyContext& ctx, ProxyInput in, std::shared_ptr<http::Responder> out);

  // Starts the first attempt. `done` runs exactly once, before the last byte of the response
  // goes to the client (so what it stores is there before the client can ask again).
  void Start(std::function<void(const ProxyResult&)> done);
  // The client left: the attempt in flight is cancelled; the result is 499. Any thread, any
  // time (also before Start).
  void Cancel();
  // The request as it was given (gateway.cc audits a cache hit with it: gateway/audit.h).
  const ProxyInput& input() const { return in_; }

 private:
  void Dispatch();
  void OnOutcome(AttemptOutcome o);
  void OnStreamOutcome(AttemptOutcome o);
  void Retry(AttemptFailure failure, const std::string& why);
  void Refuse(int status, const std::string& message, bool retry_after);
  void EndStreamWithError(const std::string& why);
  // Runs `done` once; false when it had run already.
  bool Finish(ProxyResult result);
  // Runs `f` after `delay`, or `stopped_instead` when the timers stop first.
  void After(std::chrono::microseconds delay, std::function<void()> f,
             std::function<void()> stopped_instead);
  std::string TimeLimitMessage() const;
  bool stopping() const { return ctx_.stopped != nullptr && ctx_.stopped->load(); }

  const ProxyContext& ctx_;
  const ProxyInput in_;
  ClientStream stream_;
  std::function<void(const ProxyResult&)> done_;
  std::vector<std::string> tried_;
  int retries_ = 0;
  int continuations_ = 0;
  std::string last_error_;  // for the client: the worker's name and a reason, no address
  std::atomic<bool> client_gone_{false};
  std::atomic<bool> finished_{false};
  Mutex mu_;
  std::shared_ptr<Attempt> attempt_ FRUGAL_GUARDED_BY(mu_);
};

}  // namespace frugal::gateway
