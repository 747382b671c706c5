#include "api/openai_response.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "http/server.h"

namespace frugal::api {
namespace {

using json = nlohmann::json;

std::string Event(const json& j) { return "data: " + j.dump() + "\n\n"; }

json Head(const ResponseHead& h, bool chunk) {
  json j = {{"id", h.id},
            {"object",
             h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", h.created},
            {"model", h.model}};
  if (!h.fingerprint.empty()) j["system_fingerprint"] = h.fingerprint;
  return j;
}

// One chunk whose only choice carries `delta` (chat) or `text` (completions).
json Chunk(const ResponseHead& h, json delta_or_text, const json& finish_reason) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", nullptr}};
  choice[h.chat ? "delta" : "text"] = std::move(delta_or_text);
  json j = Head(h, true);
  j["choices"] = json::array({std::move(choice)});
  return j;
}

json Piece(const ResponseHead& h, std::string_view piece) {
  if (!h.chat) return json(std::string(piece));
  json delta = json::object();
  if (!piece.empty()) delta["content"] = std::string(piece);
  return delta;
}

}  // namespace

std::string UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}}
      .dump();
}

std::string CompletionJson(const ResponseHead& head, std::string_view content,
                           std::string_view finish_reason, std::string_view usage_json) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", nullptr}};
  if (head.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", content}};
  } else {
    choice["text"] = content;
  }
  json j = Head(head, false);
  j["choices"] = json::array({std::move(choice)});
  if (!usage_json.empty()) j["usage"] = json::parse(usage_json);
  return j.dump();
}

std::string OpenEvent(const ResponseHead& head) {
  return Event(
      Chunk(head, head.chat ? json{{"role", "assistant"}, {"content", ""}} : json(""), nullptr));
}

std::string PieceEvent(const ResponseHead& head, std::string_view piece) {
  return Event(Chunk(head, Piece(head, piece), nullptr));
}

std::string FinishEvent(const ResponseHead& head, std::string_view finish_reason) {
  return Event(Chunk(head, Piece(head, ""), finish_reason));
}

std::string UsageEvent(const ResponseHead& head, std::string_view usage_json) {
  json j = Head(head, true);
  j["choices"] = json::array();
  j["usage"] = json::parse(usage_json);
  return Event(j);
}

std::string ErrorEvent(int status, std::string_view message, std::string_view code) {
  return Event(json::parse(http::OpenAiErrorBody(status, message, code)));
}

std::string ReplayStream(const ResponseHead& head, std::string_view content,
                         std::string_view finish_reason, std::string_view usage_json,
                         bool include_usage) {
  std::string events;
  if (head.chat) events += OpenEvent(head);
  // Pieces end after a space or newline (never inside a UTF-8 sequence).
  size_t from = 0;
  for (size_t i = 0; i < content.size(); ++i) {
    if ((content[i] == ' ' || content[i] == '\n') && i + 1 - from >= 16) {
      events += PieceEvent(head, content.substr(from, i + 1 - from));
      from = i + 1;
    }
  }
  if (from < content.size()) events += PieceEvent(head, content.substr(from));
  events += FinishEvent(head, finish_reason);
  if (include_usage && !usage_json.empty()) events += UsageEvent(head, usage_json);
  events += kDoneEvent;
  return events;
}

bool NoteChunk(std::string_view data, bool chat, StreamNotes* notes) {
  const json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return false;
  StreamNotes& n = *notes;
  if (j.contains("error")) {
    n.finish_reason = "error";
    return true;
  }
  if (n.id.empty() && j.contains("id") && j["id"].is_string()) n.id = j["id"].get<std::string>();
  if (j.contains("usage") && j["usage"].is_object()) n.usage_json = j["usage"].dump();
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return true;
  const json& ch = j["choices"][0];
  const json* text = nullptr;
  if (chat && ch.contains("delta") && ch["delta"].is_object() && ch["delta"].contains("content") &&
      ch["delta"]["content"].is_string()) {
    text = &ch["delta"]["content"];
  } else if (!chat && ch.contains("text") && ch["text"].is_string()) {
    text = &ch["text"];
  }
  if (text != nullptr && !text->get_ref<const std::string&>().empty()) {
    n.content += text->get_ref<const std::string&>();
    ++n.pieces;
  }
  if (ch.contains("finish_reason") && ch["finish_reason"].is_string())
    n.finish_reason = ch["finish_reason"].get<std::string>();
  return true;
}

std::optional<std::string> RewriteContinuedChunk(std::string_view data, bool chat,
                                                 std::string_view stream_id,
                                                 int64_t prefix_tokens) {
  json j = json::parse(data, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  if (j.contains("error")) return j.dump();
  if (!stream_id.empty() && j.contains("id")) j["id"] = stream_id;
  if (j.contains("usage") && j["usage"].is_object()) {
    json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer() &&
        u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      const int64_t moved = std::min(u["prompt_tokens"].get<int64_t>(), prefix_tokens);
      u["prompt_tokens"] = u["prompt_tokens"].get<int64_t>() - moved;
      u["completion_tokens"] = u["completion_tokens"].get<int64_t>() + moved;
      u["total_tokens"] = u["prompt_tokens"].get<int64_t>() + u["completion_tokens"].get<int64_t>();
    }
  }
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return j.dump();
  json& ch = j["choices"][0];
  if (chat && ch.contains("delta") && ch["delta"].is_object()) {
    json& d = ch["delta"];
    d.erase("role");
    // (json::empty() is false for any string, so the text itself is asked.)
    const bool empty =
        d.empty() || (d.size() == 1 && d.contains("content") && d["content"].is_string() &&
                      d["content"].get_ref<const std::string&>().empty());
    const bool finish = ch.contains("finish_reason") && !ch["finish_reason"].is_null();
    if (empty && !finish && !j.contains("usage")) return std::nullopt;
  }
  return j.dump();
}

std::string ContinuedRequestBody(std::string_view body, bool chat, std::string_view answer,
                                 int64_t relayed) {
  json b = json::parse(body, nullptr, false);
  if (!b.is_object()) return std::string(body);
  if (!answer.empty()) {
    if (chat) {
      b["messages"].push_back({{"role", "assistant"}, {"content", answer}});
      b["continue_final_message"] = true;
      b["add_generation_prompt"] = false;
    } else {
      b["prompt"] = b["prompt"].get<std::string>() + std::string(answer);
    }
  }
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (b.contains(k) && b[k].is_number_integer())
      b[k] = std::max<int64_t>(1, b[k].get<int64_t>() - relayed);
  }
  return b.dump();
}

bool Continuable(std::string_view body, bool chat, std::string_view answer) {
  const json b = json::parse(body, nullptr, false);
  if (!b.is_object()) return false;
  if (b.contains("n") && !(b["n"].is_number_integer() && b["n"].get<int64_t>() == 1)) return false;
  if (chat) return b.contains("messages") && b["messages"].is_array();
  return answer.empty() || (b.contains("prompt") && b["prompt"].is_string());
}

std::optional<CompletionText> ReadCompletion(std::string_view body, bool chat) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty()) {
    return std::nullopt;
  }
  const json& ch = j["choices"][0];
  CompletionText out;
  if (ch.contains("finish_reason") && ch["finish_reason"].is_string())
    out.finish_reason = ch["finish_reason"].get<std::string>();
  if (chat && ch.contains("message") && ch["message"].is_object() &&
      ch["message"].contains("content") && ch["message"]["content"].is_string()) {
    out.content = ch["message"]["content"].get<std::string>();
  } else if (!chat && ch.contains("text") && ch["text"].is_string()) {
    out.content = ch["text"].get<std::string>();
  } else {
    return std::nullopt;
  }
  if (j.contains("usage") && !j["usage"].is_null()) out.usage_json = j["usage"].dump();
  return out;
}

}  // namespace frugal::api
