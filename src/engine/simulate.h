// `frugal serve --simulate SPEC`: a test instrument. The worker keeps its HTTP API and its real
// Scheduler (continuous batching, admission, load reports) but no model runs: each step sleeps
// the time a latency model gives and every answer is a canned text, so a fleet of GPU-like
// workers can be exercised on a machine with a few CPU cores.
//
// SPEC is comma-separated key=value (empty: all defaults), e.g. "decode_ms=20,prefill_ms=0.2":
//   prefill_ms      milliseconds per prompt token (default 0.1)
//   decode_ms       milliseconds per decode step of the whole batch (default 20): a GPU decodes
//                   the batch's sequences in parallel
//   batch_slowdown  fractional step-time increase per extra sequence in the decode batch
//                   (default 0.01)
//   max_batch       sequences running at once; overrides --max-batch when given
//   jitter          each step's time is multiplied by a uniform factor in [1 - jitter, 1 + jitter]
//                   (default 0; below 1)
//   seed            seed of the jitter; 0 = nondeterministic (default 0)
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "frugal/status.h"

namespace frugal {

struct SimulationSpec {
  double prefill_ms = 0.1;
  double decode_ms = 20;
  double batch_slowdown = 0.01;
  int max_batch = 0;  // 0: not given
  double jitter = 0;
  uint64_t seed = 0;

  bool operator==(const SimulationSpec&) const = default;
};

// The answer every simulated request gets, cycled until max_tokens or a stop string. It never
// ends by itself, so an answer's length is exactly what the request asked for.
inline constexpr std::string_view kSimulatedAnswer =
    " This is a simulated answer from a Frugal test worker.";

// InvalidArgument for an unknown or repeated key, a value that is not a number, a negative
// value, jitter >= 1 or max_batch outside 1..4096.
StatusOr<SimulationSpec> ParseSimulationSpec(std::string_view spec);
// Every key that matters, in the form ParseSimulationSpec reads back to the same spec.
std::string FormatSimulationSpec(const SimulationSpec& spec);

// The modelled duration of scheduler steps, jitter included. Not thread-safe.
class StepTimeModel {
 public:
  explicit StepTimeModel(const SimulationSpec& spec);
  // prefill_tokens x prefill_ms, plus, when any sequence decodes,
  // decode_ms x (1 + batch_slowdown x (decode_sequences - 1)); times the jitter factor.
  double StepMs(int64_t prefill_tokens, int64_t decode_sequences);

 private:
  SimulationSpec spec_;
  std::mt19937_64 rng_;
};

}  // namespace frugal
