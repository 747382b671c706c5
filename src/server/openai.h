// OpenAI API request parsing and response building for the worker (and later the gateway).
// JSON stops here: the engine loop sees InferenceRequest only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampler.h"
#include "frugal/status.h"
#include "tokenizer/chat_template.h"

namespace frugal::server {

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
};

// InvalidArgument naming the field when the body is not valid JSON, a field has the wrong type
// or an out-of-range value, messages are empty, or n != 1.
StatusOr<CompletionParams> ParseCompletionRequest(std::string_view body, bool chat);

struct EmbeddingParams {
  std::string model;
  std::vector<std::string> inputs;  // a string or an array of strings
  bool base64 = false;              // encoding_format "base64": little-endian float32, base64
};
StatusOr<EmbeddingParams> ParseEmbeddingRequest(std::string_view body);

// "chatcmpl-" / "cmpl-" + 24 random hex digits.
std::string NewCompletionId(bool chat);

}  // namespace frugal::server
