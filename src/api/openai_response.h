// The OpenAI API's responses, written in one place: what the worker answers, and what the
// gateway replays from its cache and writes into a stream it relays (issue 45). vLLM keeps its
// request and response models together; api/openai.h reads the requests, this file writes the
// responses. No header exposes nlohmann::json: a usage object travels as JSON text (the gateway
// stores and replays whatever usage the engine behind it reported).
//
// Every event is one whole SSE event, "data: {...}\n\n"; a stream is OpenEvent (the first chunk),
// PieceEvents, FinishEvent, UsageEvent when asked for, then kDoneEvent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace frugal::api {

// What every response of one completion repeats.
struct ResponseHead {
  bool chat = true;         // chat.completion(.chunk), else text_completion
  std::string id;           // NewCompletionId
  std::string model;        // as the client named it, or the served model
  int64_t created = 0;      // Unix seconds
  std::string fingerprint;  // system_fingerprint; empty: the field is left out
};

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details":
// {"cached_tokens"}} (cached_tokens: prompt tokens whose KV was reused, OpenAI's field).
std::string UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// A whole non-streamed answer. usage_json: a JSON object's text, or empty for no usage field.
std::string CompletionJson(const ResponseHead& head, std::string_view content,
                           std::string_view finish_reason, std::string_view usage_json);

// The first chunk: chat delta {"role": "assistant", "content": ""}; completions text "".
std::string OpenEvent(const ResponseHead& head);
// A piece of the answer: chat delta {"content": piece} ({} for an empty piece); completions text.
std::string PieceEvent(const ResponseHead& head, std::string_view piece);
// The last chunk: an empty delta (chat) or text "" (completions), with the finish reason.
std::string FinishEvent(const ResponseHead& head, std::string_view finish_reason);
// The usage chunk (stream_options.include_usage): no choices, the usage object.
std::string UsageEvent(const ResponseHead& head, std::string_view usage_json);
// An error inside a stream whose headers went out long ago: the OpenAI error body as an event.
std::string ErrorEvent(int status, std::string_view message, std::string_view code = {});
inline constexpr std::string_view kDoneEvent = "data: [DONE]\n\n";

// A stored answer replayed as a stream (the gateway's cache): for chat the opening role chunk,
// the text in pieces that end after a space or newline once 16 bytes long (never inside a UTF-8
// sequence), the finish chunk, the usage chunk when include_usage and usage_json is not empty,
// and [DONE].
std::string ReplayStream(const ResponseHead& head, std::string_view content,
                         std::string_view finish_reason, std::string_view usage_json,
                         bool include_usage);

// --- A proxy relaying any OpenAI-compatible engine's answer (the gateway) ---

// What a proxy keeps of the chunks of a stream it relays.
struct StreamNotes {
  std::string id;             // the first chunk's id: the client's stream
  std::string content;        // the answer so far
  int64_t pieces = 0;         // chunks that carried text (about one token each)
  std::string finish_reason;  // the last one given; "error" after an error object
  std::string usage_json;     // the last usage object, as JSON text
};
// Adds one chunk (an SSE event's data) to `notes`; false (nothing noted) when it is not a JSON
// object.
bool NoteChunk(std::string_view data, bool chat, StreamNotes* notes);

// A chunk of the stream that continues a broken one on another engine, made part of the stream
// the client already has: the client's stream id, usage counting the `prefix_tokens` relayed
// before as answer (the new engine read them as prompt), the role delta dropped. nullopt: drop
// the chunk (the new stream's opening role delta, or data that is not a JSON object).
std::optional<std::string> RewriteContinuedChunk(std::string_view data, bool chat,
                                                 std::string_view stream_id, int64_t prefix_tokens);
// The request that continues the client's stream: the answer so far as the final assistant
// message to continue (chat: continue_final_message, as vLLM, SGLang and Frugal's worker read
// it) or appended to the prompt (completions), and max_tokens less the `relayed` pieces.
std::string ContinuedRequestBody(std::string_view body, bool chat, std::string_view answer,
                                 int64_t relayed);
// Whether a broken stream can be continued from its text: one choice, and for completions a
// prompt that is one string.
bool Continuable(std::string_view body, bool chat, std::string_view answer);

// A non-streamed answer as a cache keeps it: the first choice's text and finish reason, and the
// usage object as JSON text ("" when none). nullopt when the body has no such choice.
struct CompletionText {
  std::string content, finish_reason, usage_json;
};
std::optional<CompletionText> ReadCompletion(std::string_view body, bool chat);

}  // namespace frugal::api
