// The cache audit (issue 47): a live estimate of wrong hits. A sampled share of the hits the
// cache answered (cache.audit_rate) is sent once more, after the client has its answer, to a
// worker through an ordinary ProxyRequest (routing, retries and the worker's key as usual, but
// forced non-streamed and into a discarding Responder); the worker's answer is compared with the
// one the cache served: the same numbers (text::ExtractNumbers, as a multiset) and the same
// meaning (cosine of the two answers' embeddings >= cache.audit_min_similarity). The outcome is
// counted (frugal_gateway_cache_audits_total by result, /status.json's totals) and a
// disagreement logged. An audit never stores into the cache and is not a client request: the
// request totals, latency and the status page's series do not see it.
//
// Who calls what: gateway.cc asks Sample() on a served hit and, when it says so, Start(); the
// auditor starts a ProxyRequest and, when the worker has answered, runs the comparison on the
// cache pool (the `run_on_cache_pool` it was given): embedding never runs on an HTTP thread.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "cache/embedder.h"
#include "common/metrics.h"
#include "common/stats.h"
#include "common/thread_annotations.h"
#include "gateway/proxy.h"
#include "http/server.h"

namespace frugal::gateway {

enum class AuditResult {
  kAgree,            // the same numbers, and meaning within the threshold
  kDisagreeNumbers,  // the numbers differ (the multiset of values)
  kDisagreeMeaning,  // the same numbers, but the answers' cosine is below the threshold
  kFailed,           // the worker gave no complete answer (an error, a cut answer), or no embedding
  kSkipped,          // no worker could take it (503), or the gateway was shutting down
  kCapped,           // sampled, not sent: cache.audit_max_in_flight audits were still running
};
// The metric's label: agree, disagree_numbers, disagree_meaning, failed, skipped, capped.
const char* AuditResultName(AuditResult r);

struct AnswerComparison {
  AuditResult result = AuditResult::kFailed;
  std::optional<double> similarity;  // the answers' cosine, when it was computed
};

// Compares the answer the cache served with the worker's: numbers first (no embedding needed
// when they differ), then meaning. kFailed when an embedding fails.
AnswerComparison CompareAnswers(std::string_view cached, std::string_view fresh,
                                cache::Embedder& embedder, double min_similarity);

// The client's request body made for an audit: "stream": false, no stream_options; nullopt when
// it is not a JSON object.
std::optional<std::string> AuditRequestBody(const std::string& body);

// WilsonInterval (the false-hit rate's interval) is common/stats.h's.
using frugal::WilsonInterval;

// Draws whether a hit is audited: true with probability `rate` (0: never, 1: always).
class AuditSampler {
 public:
  AuditSampler(double rate, uint64_t seed) : rate_(rate), rng_(seed) {}
  bool Sample();

 private:
  const double rate_;
  Mutex mu_;
  std::mt19937_64 rng_ FRUGAL_GUARDED_BY(mu_);
};

// An http::Responder that nobody reads on the wire: it keeps the status and up to `max_body`
// bytes of the body (the audit's worker answer, for a look in tests and logs).
class BufferingResponder final : public http::Responder {
 public:
  explicit BufferingResponder(size_t max_body = 1 << 20) : max_body_(max_body) {}
  void Send(int status, std::string content_type, std::string body, http::Headers headers) override;
  void StartStream(int status, std::string content_type, http::Headers headers) override;
  void Write(std::string data) override;
  void End() override;
  void OnClose(std::function<void()>) override {}
  bool closed() const override { return false; }

  int status() const;
  std::string body() const;
  bool ended() const;

 private:
  const size_t max_body_;
  mutable Mutex mu_;
  int status_ FRUGAL_GUARDED_BY(mu_) = 0;
  std::string body_ FRUGAL_GUARDED_BY(mu_);
  bool ended_ FRUGAL_GUARDED_BY(mu_) = false;
};

// For /status.json: audited = agreements + disagreements (failed and skipped audits are not in
// the estimate).
struct AuditTotals {
  std::atomic<int64_t> audited{0}, disagreements{0}, failed{0}, skipped{0}, capped{0};
};

struct AuditContext {
  // The proxy's context for audits: the gateway's, with no stats and no proxy metrics (an audit
  // is not a client request). Outlives every audit.
  ProxyContext proxy;
  std::shared_ptr<cache::Embedder> embedder;
  double rate = 0.01;            // cache.audit_rate
  double min_similarity = 0.85;  // cache.audit_min_similarity
  // cache.audit_max_in_flight: audits running at once (sent to a worker, or being compared);
  // a sampled hit beyond it is counted `capped` and not sent, so that in a spike with many hits
  // the audits never take more than this many worker slots. 0 = no cap.
  int max_in_flight = 2;
  uint64_t seed = 0;               // the sampler's; 0: from std::random_device
  double request_timeout_s = 600;  // an audit's own deadline
  // Runs a task on the cache pool (where the embedder runs); tests may run it inline.
  std::function<void(std::function<void()>)> run_on_cache_pool;
  MetricsRegistry::Counter* audits = nullptr;  // by result; null: not counted
};

class Auditor {
 public:
  explicit Auditor(AuditContext ctx);

  // Whether this hit is audited (the sampler's draw).
  bool Sample() { return sampler_.Sample(); }
  // Audits a served hit: `in` is the client's request as the proxy would have sent it, `cached`
  // the answer's text the cache served. Returns at once; the worker's answer arrives later.
  void Start(const ProxyInput& in, std::string cached);
  // Compares and counts (the cache pool's part, public for tests).
  void Judge(const std::string& model, const std::string& cached, const std::string& fresh);

  const AuditTotals& totals() const { return totals_; }
  // Audits started and not yet counted (at most max_in_flight when it is set).
  int in_flight() const { return in_flight_.load(); }

 private:
  void Count(AuditResult r);
  bool TryAcquire();
  // Counts the outcome of a started audit and frees its place.
  void Finish(AuditResult r);

  AuditContext ctx_;
  AuditSampler sampler_;
  AuditTotals totals_;
  std::atomic<int> in_flight_{0};
};

}  // namespace frugal::gateway
