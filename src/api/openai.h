// The OpenAI API's requests, read once for everyone who reads them: the worker (every field,
// validated, for the engine) and the gateway (what it routes and caches by, for any
// OpenAI-compatible engine behind it). One set of field readers, so a field means the same and
// is refused with the same message on both sides. JSON stops here: the engine loop sees
// InferenceRequest only, and no header exposes nlohmann::json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/chat.h"
#include "frugal/sampling.h"
#include "frugal/status.h"

namespace frugal::api {

// A /v1/chat/completions or /v1/completions request, validated.
struct CompletionParams {
  bool chat = false;
  std::string model;                  // "" when the client named none
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions
  std::optional<int64_t> max_tokens;  // max_tokens or max_completion_tokens
  SamplingParams sampling;            // temperature (default 1, as OpenAI), top_p, seed, ...
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  // Chat: the final (assistant) message is left open and the answer continues it, as vLLM's
  // continue_final_message (which needs add_generation_prompt false; either alone is fine).
  bool continue_final_message = false;
};

// What one request may ask, for a worker and a gateway alike: beyond these, 400.
struct RequestLimits {
  int64_t max_messages = 1024;    // messages in a chat request
  int64_t max_stop_bytes = 1024;  // bytes in each stop string (of at most 4)
};

// InvalidArgument naming the field when the body is not valid JSON, a field has the wrong type
// or an out-of-range value, messages are empty or more than the limit, a stop string is longer
// than the limit, or n != 1.
StatusOr<CompletionParams> ParseCompletionRequest(std::string_view body, bool chat,
                                                  const RequestLimits& limits = {});

// A completion request as a proxy in front of any OpenAI-compatible engine reads it. The fields
// it routes by are checked with the worker's readers; everything else (tools, images, n,
// logprobs, ...) is the engine's to accept or refuse, and only makes the request uncacheable.
struct ProxyOptions {
  int context_turns = -1;  // earlier turns in the cache scope; -1 = all
  bool cache_nondeterministic = false;
  RequestLimits limits;  // checked here too, so an engine never sees what it would choke on
};
struct ProxiedCompletion {
  bool chat = true;
  std::string model;  // required, non-empty: requests are routed by it
  bool stream = false, include_usage = false;
  std::optional<int64_t> max_tokens;  // max_tokens or max_completion_tokens, 1..2^30
  int64_t text_chars = 0;             // characters of text in messages / prompt (a size estimate)
  // The cache's view: cacheable only for a plain-text last user message (chat) or a string
  // prompt, one choice, and a deterministic request (temperature 0 or a seed) unless allowed.
  bool cacheable = false;
  std::string query;     // the last user message / the prompt
  std::string context;   // the system prompt and earlier turns the answer depends on (JSON)
  std::string sampling;  // every other parameter, canonical JSON: a change means another answer
  // For prefix-aware routing: hashes of the request's start (with its model) at each message
  // boundary (chat: the system prompt, then each turn after it; a string prompt: every 512
  // bytes), shortest first, each with the characters of text it covers.
  struct PrefixMark {
    uint64_t hash = 0;
    int64_t chars = 0;
  };
  std::vector<PrefixMark> prefixes;
};
StatusOr<ProxiedCompletion> ParseProxiedCompletion(std::string_view body, bool chat,
                                                   const ProxyOptions& options);

struct EmbeddingParams {
  std::string model;
  std::vector<std::string> inputs;  // a string or an array of strings
  bool base64 = false;              // encoding_format "base64": little-endian float32, base64
};
StatusOr<EmbeddingParams> ParseEmbeddingRequest(std::string_view body);

// "chatcmpl-" / "cmpl-" + 24 random hex digits.
std::string NewCompletionId(bool chat);

}  // namespace frugal::api
