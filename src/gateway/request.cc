#include "gateway/request.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "http/json_limits.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;

// Characters of text in a value, a proxy for prompt tokens (about 4 per token in English).
int64_t TextChars(const json& v) {
  if (v.is_string()) return static_cast<int64_t>(v.get_ref<const std::string&>().size());
  int64_t n = 0;
  if (v.is_array() || v.is_object()) {
    for (const auto& e : v) n += TextChars(e);
  }
  return n;
}

}  // namespace

StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body, bool chat,
                                                   const RequestPolicy& policy) {
  if (!http::JsonDepthWithin(body)) {
    return InvalidArgument("the request body nests deeper than " +
                           std::to_string(http::kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("the request body is not a JSON object");
  CompletionRequest r;
  r.chat = chat;
  if (!j.contains("model") || !j["model"].is_string() ||
      j["model"].get_ref<const std::string&>().empty()) {
    return InvalidArgument("'model' is required (a string)");
  }
  r.model = j["model"].get<std::string>();
  const char* field = chat ? "messages" : "prompt";
  if (chat && (!j.contains(field) || !j[field].is_array() || j[field].empty())) {
    return InvalidArgument("'messages' must be a non-empty array");
  }
  if (!chat && (!j.contains(field) || (!j[field].is_string() && !j[field].is_array()))) {
    return InvalidArgument("'prompt' must be a string or an array");
  }
  if (j.contains("stream") && !j["stream"].is_boolean() && !j["stream"].is_null())
    return InvalidArgument("'stream' must be a boolean");
  r.stream = j.contains("stream") && j["stream"].is_boolean() && j["stream"].get<bool>();
  if (j.contains("stream_options") && j["stream_options"].is_object()) {
    const json& so = j["stream_options"];
    r.include_usage = so.contains("include_usage") && so["include_usage"].is_boolean() &&
                      so["include_usage"].get<bool>();
  }
  int64_t max_tokens = policy.default_max_tokens;
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (j.contains(k) && j[k].is_number_integer() && j[k].get<int64_t>() > 0)
      max_tokens = j[k].get<int64_t>();
  }
  r.cost = {TextChars(j[field]) / 4 + 8, max_tokens};

  const bool deterministic = (j.contains("temperature") && j["temperature"].is_number() &&
                              j["temperature"].get<double>() == 0) ||
                             (j.contains("seed") && j["seed"].is_number_integer());
  const bool one_choice =
      !j.contains("n") || (j["n"].is_number_integer() && j["n"].get<int64_t>() == 1);
  bool text_query = false;
  if (chat) {
    const json& msgs = j["messages"];
    const json& last = msgs.back();
    if (last.is_object() && last.contains("role") && last["role"] == "user" &&
        last.contains("content") && last["content"].is_string()) {
      text_query = true;
      r.query = last["content"].get<std::string>();
      // The system prompt always counts; of the earlier turns, the last `context_turns`.
      json ctx = json::array();
      std::vector<const json*> turns;
      for (size_t i = 0; i + 1 < msgs.size(); ++i) {
        if (msgs[i].is_object() && msgs[i].contains("role") && msgs[i]["role"] == "system") {
          ctx.push_back(msgs[i]);
        } else {
          turns.push_back(&msgs[i]);
        }
      }
      const size_t keep = policy.context_turns < 0
                              ? turns.size()
                              : std::min(turns.size(), static_cast<size_t>(policy.context_turns));
      for (size_t i = turns.size() - keep; i < turns.size(); ++i) ctx.push_back(*turns[i]);
      r.context = ctx.dump();
    }
  } else if (j["prompt"].is_string()) {
    text_query = true;
    r.query = j["prompt"].get<std::string>();
  }
  r.cacheable = text_query && one_choice && (deterministic || policy.cache_nondeterministic);
  if (r.cacheable) {
    json sampling = j;
    for (const char* k : {"model", "messages", "prompt", "stream", "stream_options", "user"})
      sampling.erase(k);
    sampling["route"] = chat ? "chat" : "completions";
    r.sampling = sampling.dump();  // object keys sorted: the same parameters in any order match
  }
  return r;
}

}  // namespace frugal::gateway
