// What the gateway reads from a completion request: enough to route it (model, size) and to
// cache it (the question, the scope it depends on). Everything else is the worker's to validate;
// the body is forwarded as it came.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "balancer/worker_pool.h"
#include "frugal/status.h"

namespace frugal::gateway {

struct RequestPolicy {
  int64_t default_max_tokens = 256;  // the cost estimate when the request names none
  int context_turns = -1;            // earlier turns in the cache scope; -1 = all
  bool cache_nondeterministic = false;
};

struct CompletionRequest {
  bool chat = true;
  std::string model;
  bool stream = false, include_usage = false;
  RequestCost cost;
  // The cache's view: cacheable only for a plain-text last user message (chat) or a string
  // prompt, one choice, and a deterministic request (temperature 0 or a seed) unless allowed.
  bool cacheable = false;
  std::string query;     // the last user message / the prompt
  std::string context;   // the system prompt and earlier turns the answer depends on (JSON)
  std::string sampling;  // every other parameter, canonical JSON: a change means another answer
};

// InvalidArgument with an OpenAI-style message for a body the gateway cannot route.
StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body, bool chat,
                                                   const RequestPolicy& policy);

}  // namespace frugal::gateway
