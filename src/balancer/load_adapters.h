// Load reports from engines other than Frugal's worker: the kinds of worker the gateway fronts,
// and the adapters that turn an engine's Prometheus /metrics into the one WorkerLoad the
// policies read (load_report.h). docs/gateway.md "Worker kinds" lists, per kind, the metrics
// read, how each becomes a field, and what stays unknown.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "balancer/load_report.h"
#include "frugal/status.h"

namespace frugal::gateway {

enum class WorkerKind { kAuto, kFrugal, kVllm, kSglang, kLlamaCpp, kTgi, kOpenAi };

// "auto", "frugal", "vllm", "sglang", "llamacpp", "tgi", "openai"; anything else InvalidArgument
// listing them.
StatusOr<WorkerKind> ParseWorkerKind(std::string_view name);
std::string_view WorkerKindName(WorkerKind k);

// The kind whose metrics a /metrics text carries (by metric names: vllm:, sglang:, llamacpp:,
// tgi_), kAuto when none, when several engines' names are mixed, or when it is unparsable. A
// Frugal worker is recognised by its /queue_depth, not here.
WorkerKind DetectKind(std::string_view metrics_text);

// Turns one engine's /metrics scrapes into load reports. Stateful: rates (a histogram's
// sum/count, counters) are taken between this scrape and the previous one; the first scrape
// gives cumulative means. Not thread-safe.
//
// A window in which nothing was observed (no request finished, no token made) falls back to the
// cumulative mean; a counter that went down (the engine restarted) starts a new baseline. Each
// field is set only with its `known` bit; a metric the kind should offer and the scrape lacked
// is named in `missing`, and a present one without observations yet (count 0) leaves its field
// unknown but is not missing.
class MetricsLoadAdapter {
 public:
  explicit MetricsLoadAdapter(WorkerKind kind);  // kVllm, kSglang, kLlamaCpp, kTgi
  // InvalidArgument for a malformed text (the line named), for a kind without a /metrics
  // adapter, and for a now_s that is not finite or earlier than the previous scrape's. A refused
  // scrape leaves the state as it was.
  StatusOr<WorkerLoad> Update(std::string_view metrics_text, double now_s);

 private:
  WorkerKind kind_;
  double last_now_s_ = -1;
  // Per rate: the cumulative numerator and denominator at the previous scrape.
  std::map<std::string, std::pair<double, double>> prev_;
};

// llama.cpp's server /slots (on unless --no-slots): what each slot has left, which /metrics does
// not say. Fills `load.backlog_ms` of a llamacpp report (read from /metrics just before, with its
// per-token latencies and deferred count): 0 when a slot is free and nothing is deferred; else
// (the processing slots' remaining prompt and answer tokens at those latencies, plus each
// deferred request as the mean full request of the processing slots) / the processing slots.
// Leaves the backlog unknown where a slot's remaining answer is unbounded (n_predict -1) or the
// latencies are unknown. InvalidArgument for a body that is not a list of slot objects of the
// documented shape; `load` is then unchanged.
Status ApplyLlamaCppSlots(std::string_view slots_json, WorkerLoad& load);

}  // namespace frugal::gateway
