// One turn of a conversation, as the chat template renders it. Plain data.
#pragma once

#include <string>

namespace frugal {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

}  // namespace frugal
