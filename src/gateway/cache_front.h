// The gateway's semantic-cache front: looks a request up on the cache pool and answers a hit
// itself (a normal response, or replayed as SSE when the client streams, as the worker would
// have streamed it); stores a complete answer it is handed. It never dispatches: a miss goes
// back to whoever asked (gateway.cc), which starts the proxy, and the proxy hands its answer
// back to gateway.cc, which stores it here.
//
// Threads: lookups and inserts run on the cache pool (two lanes per embedding thread, so a long
// query never holds the lane a short one waits for); `then` runs there too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/openai_response.h"
#include "cache/cache.h"
#include "common/metrics.h"
#include "http/server.h"

namespace boost::asio {
class thread_pool;
}

namespace frugal::gateway {

// Where an answer is filed: the request's scope (cache::ScopeKey: namespace, model, context,
// sampling), its namespace (the API key's name) and the question.
struct CacheKey {
  std::string scope, ns, query;
};

// How the client asked, for answering a hit the same way the worker would have.
struct ReplyShape {
  bool chat = true;
  bool stream = false;
  bool include_usage = false;
  std::string model;
  std::chrono::steady_clock::time_point start;  // the request's arrival, for the TTFT
};

struct CacheFrontMetrics {
  MetricsRegistry::Counter* lookups = nullptr;      // by result: hit, miss
  MetricsRegistry::Counter* bad_entries = nullptr;  // stored answers not valid: served as misses
  MetricsRegistry::Histogram* ttft = nullptr;       // a streamed hit's first byte
};

class CacheFront {
 public:
  // lanes: cache pool threads.
  CacheFront(std::unique_ptr<cache::Cache> cache, size_t lanes, CacheFrontMetrics metrics);
  ~CacheFront();  // Join()

  cache::Cache& cache() { return *cache_; }

  struct Looked {
    bool served = false;  // a hit was answered to the client
    std::string content;  // a served hit's answer text (the audit compares it: gateway/audit.h)
    // A miss's lookup: its vector is reused when the answer is stored (Store's looked_up).
    std::optional<cache::LookupResult> miss;
  };
  // On the cache pool: a valid hit is answered to `out` and `then` gets served; a miss, a failed
  // lookup (the cache is never the cause of an outage) or a stored entry that is not a valid
  // answer (a shared store may hold anything) is not served.
  void Lookup(CacheKey key, ReplyShape shape, std::shared_ptr<http::Responder> out,
              std::function<void(Looked)> then);
  // Files a complete answer, on the cache pool.
  void Store(CacheKey key, const api::CompletionText& answer,
             std::optional<cache::LookupResult> looked_up);
  // Runs `task` on the cache pool (the audit's embeddings: never on an HTTP thread).
  void Post(std::function<void()> task);
  // Waits for the lookups and inserts queued (shutdown). Idempotent.
  void Join();

 private:
  // false (nothing sent) when `stored` is not a valid answer; `content`: the text answered.
  bool Reply(const ReplyShape& shape, const std::shared_ptr<http::Responder>& out,
             const std::string& stored, std::string* content);

  std::unique_ptr<cache::Cache> cache_;
  CacheFrontMetrics metrics_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::atomic<int64_t> hits_{0};  // numbers the replayed answers' ids
};

}  // namespace frugal::gateway
