#include "api/openai.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "http/json_limits.h"

namespace frugal::api {
namespace {

using json = nlohmann::json;

constexpr int64_t kMaxTokensLimit = int64_t{1} << 30;

Status FieldError(const std::string& field, const std::string& what) {
  return InvalidArgument("'" + field + "' " + what);
}

// Reads an optional number field into `out` within [lo, hi].
Status Number(const json& j, const char* field, double lo, double hi, double* out,
              bool* present = nullptr) {
  auto it = j.find(field);
  if (present) *present = false;
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return FieldError(field, "must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "must be between %g and %g", lo, hi);
    return FieldError(field, msg);
  }
  *out = v;
  if (present) *present = true;
  return Status::Ok();
}

Status Integer(const json& j, const char* field, int64_t lo, int64_t hi,
               std::optional<int64_t>* out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return FieldError(field, "must be an integer");
  const auto v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return FieldError(field,
                      "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

StatusOr<json> ParseObject(std::string_view body) {
  if (!http::JsonDepthWithin(body)) {
    return InvalidArgument("the request body nests deeper than " +
                           std::to_string(http::kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgument("the request body must be a JSON object");
  return j;
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts.
StatusOr<std::string> Content(const json& c, size_t index) {
  const std::string field = "messages[" + std::to_string(index) + "].content";
  if (c.is_string()) return c.get<std::string>();
  if (c.is_null()) return std::string();
  if (!c.is_array()) return FieldError(field, "must be a string or an array of text parts");
  std::string out;
  for (const auto& part : c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return FieldError(
          field, "parts must be {\"type\": \"text\", \"text\": ...} (only text is supported)");
    }
    out += part["text"].get<std::string>();
  }
  return out;
}

// "model": optional for the worker (it serves one), required by a proxy.
Status Model(const json& j, bool required, std::string* out) {
  auto it = j.find("model");
  if (it == j.end() || it->is_null()) {
    return required ? FieldError("model", "is required (a string)") : Status::Ok();
  }
  if (!it->is_string()) return FieldError("model", "must be a string");
  *out = it->get<std::string>();
  if (required && out->empty()) return FieldError("model", "must not be empty");
  return Status::Ok();
}

// "stream" and "stream_options.include_usage".
Status Stream(const json& j, bool* stream, bool* include_usage) {
  if (auto it = j.find("stream"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return FieldError("stream", "must be a boolean");
    *stream = it->get<bool>();
  }
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return FieldError("stream_options", "must be an object");
    if (auto u = it->find("include_usage"); u != it->end() && !u->is_null()) {
      if (!u->is_boolean()) return FieldError("stream_options.include_usage", "must be a boolean");
      *include_usage = u->get<bool>();
    }
  }
  return Status::Ok();
}

// "max_tokens", or the newer "max_completion_tokens" (max_tokens wins when both are given).
Status MaxTokens(const json& j, std::optional<int64_t>* out) {
  std::optional<int64_t> max_tokens;
  FRUGAL_RETURN_IF_ERROR(Integer(j, "max_tokens", 1, kMaxTokensLimit, &max_tokens));
  FRUGAL_RETURN_IF_ERROR(Integer(j, "max_completion_tokens", 1, kMaxTokensLimit, out));
  if (max_tokens) *out = max_tokens;
  return Status::Ok();
}

// FNV-1a, 64 bits, continued from `h`.
uint64_t Fnv(uint64_t h, std::string_view s) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

// The request's start at each message boundary (a string prompt: every 512 bytes), hashed with
// the model: what prefix-aware routing matches (ProxiedCompletion::prefixes).
std::vector<ProxiedCompletion::PrefixMark> PrefixMarks(const std::string& model,
                                                       const json& messages_or_prompt) {
  std::vector<ProxiedCompletion::PrefixMark> out;
  uint64_t h = Fnv(1469598103934665603ull, model);
  int64_t chars = 0;
  if (messages_or_prompt.is_string()) {
    const std::string& p = messages_or_prompt.get_ref<const std::string&>();
    constexpr size_t kStep = 512;
    for (size_t at = 0; at < p.size(); at += kStep) {
      const std::string_view piece = std::string_view(p).substr(at, kStep);
      h = Fnv(h, piece);
      chars += static_cast<int64_t>(piece.size());
      out.push_back({h, chars});
    }
    return out;
  }
  if (!messages_or_prompt.is_array()) return out;
  for (const json& m : messages_or_prompt) {
    if (!m.is_object()) break;
    const json content = m.contains("content") ? m["content"] : json();
    const std::string role =
        m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    const std::string text = content.is_string() ? content.get<std::string>() : content.dump();
    h = Fnv(Fnv(Fnv(h, role), std::string_view("\x1f", 1)), text);
    h = Fnv(h, std::string_view("\x1e", 1));
    chars += static_cast<int64_t>(text.size());
    out.push_back({h, chars});
  }
  return out;
}

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

namespace {

Status CheckMessageCount(const json& msgs, const RequestLimits& limits) {
  if (static_cast<int64_t>(msgs.size()) > limits.max_messages) {
    return FieldError("messages",
                      "may hold at most " + std::to_string(limits.max_messages) + " messages");
  }
  return Status::Ok();
}

// The stop field's strings, whatever their form (the engine refuses a malformed field).
Status CheckStopBytes(const json& j, const RequestLimits& limits) {
  auto it = j.find("stop");
  if (it == j.end()) return Status::Ok();
  auto check = [&](const json& s) {
    if (s.is_string() &&
        static_cast<int64_t>(s.get_ref<const std::string&>().size()) > limits.max_stop_bytes) {
      return FieldError("stop", "strings may be at most " + std::to_string(limits.max_stop_bytes) +
                                    " bytes long");
    }
    return Status::Ok();
  };
  if (!it->is_array()) return check(*it);
  for (const auto& s : *it) FRUGAL_RETURN_IF_ERROR(check(s));
  return Status::Ok();
}

}  // namespace

StatusOr<CompletionParams> ParseCompletionRequest(std::string_view body, bool chat,
                                                  const RequestLimits& limits) {
  FRUGAL_ASSIGN_OR_RETURN(json j, ParseObject(body));
  CompletionParams p;
  p.chat = chat;
  FRUGAL_RETURN_IF_ERROR(Model(j, /*required=*/false, &p.model));
  if (chat) {
    auto it = j.find("messages");
    if (it == j.end() || !it->is_array())
      return FieldError("messages", "is required and must be an array");
    if (it->empty()) return FieldError("messages", "must not be empty");
    FRUGAL_RETURN_IF_ERROR(CheckMessageCount(*it, limits));
    auto flag = [&](const char* k, bool& out) -> Status {
      auto f = j.find(k);
      if (f == j.end() || f->is_null()) return Status::Ok();
      if (!f->is_boolean()) return FieldError(k, "must be a boolean");
      out = f->get<bool>();
      return Status::Ok();
    };
    bool add_generation_prompt = true, explicit_add = j.contains("add_generation_prompt");
    FRUGAL_RETURN_IF_ERROR(flag("continue_final_message", p.continue_final_message));
    FRUGAL_RETURN_IF_ERROR(flag("add_generation_prompt", add_generation_prompt));
    if (p.continue_final_message && explicit_add && add_generation_prompt)
      return FieldError("continue_final_message", "cannot be used with add_generation_prompt");
    if (!p.continue_final_message && !add_generation_prompt)
      return FieldError("add_generation_prompt", "false needs continue_final_message");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& m = (*it)[i];
      if (!m.is_object())
        return FieldError("messages[" + std::to_string(i) + "]", "must be an object");
      auto role = m.find("role");
      if (role == m.end() || !role->is_string())
        return FieldError("messages[" + std::to_string(i) + "].role", "must be a string");
      const std::string r = role->get<std::string>();
      if (r != "system" && r != "user" && r != "assistant" && r != "developer") {
        return FieldError("messages[" + std::to_string(i) + "].role",
                          "must be system, developer, user or assistant");
      }
      FRUGAL_ASSIGN_OR_RETURN(std::string content,
                              Content(m.contains("content") ? m["content"] : json(), i));
      p.messages.push_back({r == "developer" ? "system" : r, std::move(content)});
    }
    if (p.continue_final_message && p.messages.back().role != "assistant")
      return FieldError("continue_final_message", "needs a final message of role assistant");
  } else {
    auto it = j.find("prompt");
    if (it == j.end()) return FieldError("prompt", "is required");
    if (it->is_string()) {
      p.prompt = it->get<std::string>();
    } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
      p.prompt = (*it)[0].get<std::string>();
    } else {
      return FieldError("prompt", "must be a string (or an array of one string)");
    }
    if (p.prompt.empty()) return FieldError("prompt", "must not be empty");
  }
  std::optional<int64_t> n, seed, top_k;
  FRUGAL_RETURN_IF_ERROR(MaxTokens(j, &p.max_tokens));
  FRUGAL_RETURN_IF_ERROR(Integer(j, "n", 1, 1, &n));
  FRUGAL_RETURN_IF_ERROR(Integer(j, "seed", INT64_MIN, INT64_MAX, &seed));
  FRUGAL_RETURN_IF_ERROR(Integer(j, "top_k", 0, 1 << 20, &top_k));

  SamplingParams& s = p.sampling;
  s.temperature = 1.0f;  // OpenAI's default
  s.top_p = 1.0f;
  double v = 0;
  bool present = false;
  FRUGAL_RETURN_IF_ERROR(Number(j, "temperature", 0, 2, &v, &present));
  if (present) s.temperature = static_cast<float>(v);
  FRUGAL_RETURN_IF_ERROR(Number(j, "top_p", 0, 1, &v, &present));
  if (present) s.top_p = static_cast<float>(v);
  FRUGAL_RETURN_IF_ERROR(Number(j, "min_p", 0, 1, &v, &present));
  if (present) s.min_p = static_cast<float>(v);
  FRUGAL_RETURN_IF_ERROR(Number(j, "repetition_penalty", 0.01, 10, &v, &present));
  if (present) s.repetition_penalty = static_cast<float>(v);
  // Accepted for compatibility, not applied: presence / frequency penalties.
  FRUGAL_RETURN_IF_ERROR(Number(j, "presence_penalty", -2, 2, &v));
  FRUGAL_RETURN_IF_ERROR(Number(j, "frequency_penalty", -2, 2, &v));
  if (top_k) s.top_k = static_cast<int32_t>(*top_k);
  // seed 0 means "random" to the sampler; map the client's 0 to a fixed value instead.
  if (seed) s.seed = *seed == 0 ? 0x9e3779b97f4a7c15ull : static_cast<uint64_t>(*seed);

  FRUGAL_RETURN_IF_ERROR(CheckStopBytes(j, limits));
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      p.stop.push_back(it->get<std::string>());
    } else if (it->is_array() && it->size() <= 4) {
      for (const auto& e : *it) {
        if (!e.is_string())
          return FieldError("stop", "must be a string or an array of up to 4 strings");
        p.stop.push_back(e.get<std::string>());
      }
    } else {
      return FieldError("stop", "must be a string or an array of up to 4 strings");
    }
    for (const auto& st : p.stop) {
      if (st.empty()) return FieldError("stop", "strings must not be empty");
    }
  }
  FRUGAL_RETURN_IF_ERROR(Stream(j, &p.stream, &p.include_usage));
  if (auto it = j.find("user"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError("user", "must be a string");
    p.user = it->get<std::string>();
  }
  return p;
}

StatusOr<ProxiedCompletion> ParseProxiedCompletion(std::string_view body, bool chat,
                                                   const ProxyOptions& options) {
  FRUGAL_ASSIGN_OR_RETURN(json j, ParseObject(body));
  ProxiedCompletion r;
  r.chat = chat;
  FRUGAL_RETURN_IF_ERROR(Model(j, /*required=*/true, &r.model));
  const char* field = chat ? "messages" : "prompt";
  if (chat && (!j.contains(field) || !j[field].is_array() || j[field].empty())) {
    return FieldError("messages", "must be a non-empty array");
  }
  if (!chat && (!j.contains(field) || (!j[field].is_string() && !j[field].is_array()))) {
    return FieldError("prompt", "must be a string or an array");
  }
  if (chat) FRUGAL_RETURN_IF_ERROR(CheckMessageCount(j[field], options.limits));
  FRUGAL_RETURN_IF_ERROR(CheckStopBytes(j, options.limits));
  FRUGAL_RETURN_IF_ERROR(Stream(j, &r.stream, &r.include_usage));
  // A bad max_tokens is the engine's to refuse; for the estimate it is as if absent.
  if (std::optional<int64_t> m; MaxTokens(j, &m).ok()) r.max_tokens = m;
  r.text_chars = TextChars(j[field]);
  r.prefixes = PrefixMarks(r.model, j[field]);

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
      const size_t keep = options.context_turns < 0
                              ? turns.size()
                              : std::min(turns.size(), static_cast<size_t>(options.context_turns));
      for (size_t i = turns.size() - keep; i < turns.size(); ++i) ctx.push_back(*turns[i]);
      r.context = ctx.dump();
    }
  } else if (j["prompt"].is_string()) {
    text_query = true;
    r.query = j["prompt"].get<std::string>();
  }
  r.cacheable = text_query && one_choice && (deterministic || options.cache_nondeterministic);
  if (r.cacheable) {
    json sampling = j;
    for (const char* k : {"model", "messages", "prompt", "stream", "stream_options", "user"})
      sampling.erase(k);
    sampling["route"] = chat ? "chat" : "completions";
    r.sampling = sampling.dump();  // object keys sorted: the same parameters in any order match
  }
  return r;
}

StatusOr<EmbeddingParams> ParseEmbeddingRequest(std::string_view body) {
  FRUGAL_ASSIGN_OR_RETURN(json j, ParseObject(body));
  EmbeddingParams p;
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError("model", "must be a string");
    p.model = it->get<std::string>();
  }
  auto it = j.find("input");
  if (it == j.end()) return FieldError("input", "is required");
  if (it->is_string()) {
    p.inputs.push_back(it->get<std::string>());
  } else if (it->is_array() && !it->empty()) {
    for (const auto& e : *it) {
      if (!e.is_string()) return FieldError("input", "must be a string or an array of strings");
      p.inputs.push_back(e.get<std::string>());
    }
  } else {
    return FieldError("input", "must be a string or a non-empty array of strings");
  }
  if (p.inputs.size() > 2048) return FieldError("input", "may hold at most 2048 strings");
  for (const auto& s : p.inputs) {
    if (s.empty()) return FieldError("input", "strings must not be empty");
  }
  if (auto f = j.find("encoding_format"); f != j.end() && !f->is_null()) {
    if (*f == "base64") {
      p.base64 = true;
    } else if (*f != "float") {
      return FieldError("encoding_format", "must be \"float\" or \"base64\"");
    }
  }
  return p;
}

std::string NewCompletionId(bool chat) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", chat ? "chatcmpl-" : "cmpl-",
                static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  return buf;
}

}  // namespace frugal::api
