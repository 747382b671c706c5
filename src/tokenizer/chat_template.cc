#include "tokenizer/chat_template.h"

namespace frugal {
namespace {

// Finds the literal default system prompt in a ChatML template: the text between
// "<|im_start|>system" + newline (real or escaped) and "<|im_end|>" that contains no template
// syntax.
std::string ExtractChatMlDefaultSystem(const std::string& t) {
  const std::string open = "<|im_start|>system";
  for (size_t at = t.find(open); at != std::string::npos; at = t.find(open, at + 1)) {
    size_t p = at + open.size();
    if (t.compare(p, 1, "\n") == 0) {
      p += 1;
    } else if (t.compare(p, 2, "\\n") == 0) {
      p += 2;
    } else {
      continue;
    }
    const size_t end = t.find("<|im_end|>", p);
    if (end == std::string::npos) break;
    std::string body = t.substr(p, end - p);
    if (body.empty() || body.find_first_of("{}'\"") != std::string::npos) continue;
    return body;
  }
  return "";
}

bool ValidRole(const std::string& r) { return r == "system" || r == "user" || r == "assistant"; }

}  // namespace

StatusOr<ChatTemplate> ChatTemplate::FromTemplateText(const std::string& text) {
  ChatTemplate t;
  if (text.empty() || text.find("<|im_start|>") != std::string::npos) {
    t.format_ = ChatFormat::kChatMl;
    t.default_system_ = ExtractChatMlDefaultSystem(text);
  } else if (text.find("<|start_header_id|>") != std::string::npos) {
    t.format_ = ChatFormat::kLlama3;
  } else {
    return Unimplemented(
        "the model's chat template is not one Frugal renders (supported: ChatML, Llama 3)");
  }
  return t;
}

StatusOr<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt, bool continue_final) const {
  auto r = RenderMarked(messages, add_generation_prompt, continue_final);
  if (!r.ok()) return r.status();
  return std::move(r->text);
}

StatusOr<ChatTemplate::Rendered> ChatTemplate::RenderMarked(
    const std::vector<ChatMessage>& messages, bool add_generation_prompt,
    bool continue_final) const {
  if (messages.empty()) return InvalidArgument("messages must not be empty");
  if (continue_final && messages.back().role != "assistant")
    return InvalidArgument("only an assistant's final message can be continued");
  if (continue_final) add_generation_prompt = false;
  const size_t open = continue_final ? messages.size() - 1 : messages.size();
  for (const auto& m : messages) {
    if (!ValidRole(m.role)) return InvalidArgument("unknown message role '" + m.role + "'");
  }
  Rendered r;
  auto markup = [&r](std::string_view s) {
    if (!r.markup.empty() && r.markup.back().end == r.text.size()) {
      r.markup.back().end += s.size();  // adjoining markup: one range
    } else {
      r.markup.push_back({r.text.size(), r.text.size() + s.size()});
    }
    r.text += s;
  };
  auto content = [&r](std::string_view s) { r.text += s; };
  if (format_ == ChatFormat::kChatMl) {
    if (messages.front().role != "system" && !default_system_.empty()) {
      markup("<|im_start|>system\n");
      content(default_system_);
      markup("<|im_end|>\n");
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      markup("<|im_start|>" + m.role + "\n");
      content(m.content);
      if (i != open) markup("<|im_end|>\n");
    }
    if (add_generation_prompt) markup("<|im_start|>assistant\n");
  } else {
    markup("<|begin_of_text|>");
    for (size_t i = 0; i < messages.size(); ++i) {
      const auto& m = messages[i];
      markup("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n");
      content(m.content);
      if (i != open) markup("<|eot_id|>");
    }
    if (add_generation_prompt) markup("<|start_header_id|>assistant<|end_header_id|>\n\n");
  }
  return r;
}

}  // namespace frugal
