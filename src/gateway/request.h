// What the gateway reads from a completion request: api::ParseProxiedCompletion (the worker's
// field readers: model, stream, max_tokens; the cache's view), and the request's cost estimate
// for routing. Everything else is the worker's to validate; the body is forwarded as it came.
#pragma once

#include <cstdint>
#include <string_view>

#include "api/openai.h"
#include "balancer/policy.h"
#include "frugal/status.h"

namespace frugal::gateway {

struct RequestPolicy : api::ProxyOptions {
  int64_t default_max_tokens = 256;  // the cost estimate when the request names none
};

struct CompletionRequest : api::ProxiedCompletion {
  RequestCost cost;      // prompt tokens estimated from its characters; max_tokens or the default
  RequestPrefix prefix;  // its prefixes, for prefix-aware routing
};

// InvalidArgument with an OpenAI-style message for a body the gateway cannot route.
StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body, bool chat,
                                                   const RequestPolicy& policy);

}  // namespace frugal::gateway
