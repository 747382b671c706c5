// The one load report the routing policies and the pool's health logic read, whatever the worker
// says it in. Today a Frugal worker's /queue_depth JSON; the adapters for other engines' own
// signals (Prometheus /metrics of vLLM, SGLang, llama.cpp's server, TGI) turn theirs into this.
#pragma once

#include <cstdint>
#include <string_view>

#include "frugal/status.h"

namespace frugal::gateway {

struct WorkerLoad {
  int64_t waiting = 0, running = 0;
  double backlog_ms = 0;
  double prefill_ms_per_token = 0, decode_ms_per_token = 0;
  bool simulated = false;
};

// A Frugal worker's /queue_depth body. Every field is optional; a present one must be
// well-formed (counts non-negative integers, times finite and non-negative).
StatusOr<WorkerLoad> ParseWorkerLoad(std::string_view json);

}  // namespace frugal::gateway
