// `frugal gateway`: the front door. One OpenAI-compatible endpoint that answers from the
// semantic cache when it can, and otherwise sends the request to the worker that will finish it
// soonest (policies in balancer/), relaying the worker's stream chunk by chunk.
//
// - Every accepted request gets exactly one response: the worker's, a cache hit (a normal
//   response, or replayed as SSE when the client streams), or a clean refusal (503 + Retry-After
//   when no worker can take it). A request whose worker fails before the first byte (connection
//   refused or reset, 503 from a full queue) is retried on another worker with backoff; a stream
//   that breaks midway ends with an SSE error event and [DONE], never a silent truncation.
// - Only complete (finish_reason "stop" or "length"), successful, cacheable answers go to the
//   cache; by default only deterministic requests (temperature 0 or a seed) are cacheable.
// - API keys with per-key token buckets (401, 429 + Retry-After); an admin API behind a token
//   (list, add, remove, drain workers; invalidate the cache); /metrics; a live /status page.
//
// Thread safety: Start, port, Shutdown from the owning thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "cache/embedder.h"
#include "frugal/status.h"
#include "gateway/config.h"

namespace frugal::gateway {

class Gateway {
 public:
  // embedder: the cache's (null, or config.cache.enabled false: no cache).
  static StatusOr<std::unique_ptr<Gateway>> Start(GatewayConfig config,
                                                  std::shared_ptr<cache::Embedder> embedder);
  ~Gateway();

  uint16_t port() const;
  // The admin listener's port (admin_listen), 0 when there is none.
  uint16_t admin_port() const;
  // Stops accepting; requests in flight finish (up to grace); the cache snapshots if configured.
  void Shutdown(std::chrono::milliseconds grace);

  struct Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::gateway
