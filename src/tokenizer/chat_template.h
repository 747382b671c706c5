// Chat prompt rendering for the template families Frugal supports, recognised from the model's
// own template text (GGUF tokenizer.chat_template or tokenizer_config.json chat_template):
// ChatML (SmolLM2, Qwen2) and Llama 3. A Jinja interpreter is deliberately not embedded: the
// families are few and their output is checked against the models' own templates in tests.
#pragma once

#include <string>
#include <vector>

#include "frugal/chat.h"
#include "frugal/status.h"
#include "tokenizer/tokenizer.h"

namespace frugal {

enum class ChatFormat { kChatMl, kLlama3 };

class ChatTemplate {
 public:
  // `template_text` empty -> ChatML (what llama.cpp's server falls back to as well).
  static StatusOr<ChatTemplate> FromTemplateText(const std::string& template_text);

  ChatFormat format() const { return format_; }
  const char* name() const { return format_ == ChatFormat::kChatMl ? "chatml" : "llama3"; }
  // The system prompt the template inserts when the conversation has none ("" if none).
  const std::string& default_system() const { return default_system_; }

  // Renders the conversation; special tokens appear as text. continue_final: the last message
  // (an assistant's) is left open, without its end marker, so that generation continues it;
  // add_generation_prompt is then ignored.
  StatusOr<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                               bool continue_final = false) const;

  // The same text, with the byte ranges that are the template's own markup (turn markers, role
  // headers), the only places where special tokens may be parsed (Tokenizer::EncodeMarked): a
  // message's content that spells "<|im_end|>" stays text and cannot open a turn of its own.
  struct Rendered {
    std::string text;
    std::vector<TextRange> markup;  // sorted, not overlapping
  };
  StatusOr<Rendered> RenderMarked(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt, bool continue_final = false) const;

 private:
  ChatFormat format_ = ChatFormat::kChatMl;
  std::string default_system_;
};

}  // namespace frugal
