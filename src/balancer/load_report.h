// The one load report the routing policies and the pool's health logic read, whatever the worker
// says it in. Today a Frugal worker's /queue_depth JSON; the adapters for other engines' own
// signals (Prometheus /metrics of vLLM, SGLang, llama.cpp's server, TGI) turn theirs into this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/status.h"

namespace frugal::gateway {

// The signals a load report may carry. A worker's engine reports some of them; the others are
// unknown, and unknown is never read as zero: the pool falls back to its own books (what this
// gateway has in flight there, and the latencies it assumes) for them.
enum LoadSignal : uint32_t {
  kSignalWaiting = 1u << 0,
  kSignalRunning = 1u << 1,
  kSignalBacklog = 1u << 2,
  kSignalPrefill = 1u << 3,  // per-token prefill latency
  kSignalDecode = 1u << 4,   // per-token decode latency
  kSignalKvUsage = 1u << 5,
};
inline constexpr uint32_t kFrugalSignals =
    kSignalWaiting | kSignalRunning | kSignalBacklog | kSignalPrefill | kSignalDecode;

struct WorkerLoad {
  int64_t waiting = 0, running = 0;  // requests queued, and being decoded
  double backlog_ms = 0;             // estimated time to finish what the worker has
  double prefill_ms_per_token = 0, decode_ms_per_token = 0;
  double kv_usage = 0;  // share of the KV cache in use, 0..1
  bool simulated = false;
  uint32_t known = 0;  // LoadSignal bits: which fields above the worker reported
  // Where the report came from ("frugal /queue_depth", "vllm /metrics", "none: openai"), and
  // the engine's metrics that its kind should have and this scrape lacked.
  std::string source;
  std::vector<std::string> missing;

  bool Has(LoadSignal s) const { return (known & s) != 0; }
};

// A Frugal worker's /queue_depth body. Every field is optional; a present one must be
// well-formed (counts non-negative integers, times finite and non-negative) and is marked known.
StatusOr<WorkerLoad> ParseWorkerLoad(std::string_view json);

}  // namespace frugal::gateway
