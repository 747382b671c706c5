// `frugal serve`: the OpenAI-compatible inference worker.
//
// HTTP threads parse and validate requests, render chat templates and tokenize; the Scheduler's
// one thread runs continuous batching; events come back to the connection as SSE chunks or one
// JSON response. The worker reports its load truthfully (/queue_depth, /metrics) and refuses
// work it cannot take in time (503 + Retry-After) instead of queueing without bound.
//
// Routes: POST /v1/chat/completions, /v1/completions, /v1/embeddings (encoder models);
// GET /v1/models, /health, /ready, /queue_depth (plain count, or JSON with
// Accept: application/json), /metrics (Prometheus text).
//
// A simulated worker (options.scheduler.simulation, `frugal serve --simulate`) says so everywhere:
// header X-Frugal-Simulated: true on every response it makes, "simulated": true in /queue_depth
// and /v1/models, system_fingerprint "frugal-simulated", gauge frugal_simulated 1.
//
// Thread safety: Start, port, Shutdown from the owning thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "api/openai.h"
#include "engine/scheduler.h"
#include "frugal/engine.h"
#include "frugal/status.h"
#include "http/server.h"

namespace frugal::server {

struct WorkerOptions {
  http::ServerOptions http;
  SchedulerOptions scheduler;
  std::string served_model_name;      // the id in /v1/models and the accepted `model`
  double request_timeout_s = 600;     // per request, from arrival; then 504 (or an SSE error event)
  int64_t default_max_tokens = 1024;  // when the request names none (capped by the context room)
  int64_t max_embedding_queue = 256;  // embedding requests waiting; beyond: 503
  api::RequestLimits limits;          // messages per request, bytes per stop string; beyond: 400
  // Keys a client must send (Authorization: Bearer) on every path but /health; empty: none.
  // Read from --api-key-file; held as digests (http::KeyRing).
  std::vector<std::string> api_keys;
};

class Worker {
 public:
  // Starts the scheduler (decoder models) and the HTTP server. The engine must outlive the worker.
  static StatusOr<std::unique_ptr<Worker>> Start(Engine& engine, WorkerOptions options);
  ~Worker();

  uint16_t port() const;
  // Graceful: /ready turns 503, no new connections, requests in flight finish (up to grace),
  // then everything closes.
  void Shutdown(std::chrono::milliseconds grace);

  struct Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::server
