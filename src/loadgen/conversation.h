// Conversations for `frugal loadgen --conversations`: the traffic of a support bot, where every
// request carries the shop's system prompt and, from the second turn on, the conversation so far
// (issue 46). What a prefix cache and prefix-aware routing exist for.
//
// Arrivals stay open-loop (the schedule of loadgen.h); what an arrival sends is decided when it
// leaves: it goes on with a conversation whose last turn has been answered (the one that has
// waited longest, as a customer reading the answer and typing the next question), or starts a new
// conversation with probability `new_share`, or when none is ready. A conversation ends after
// `max_turns` turns or at a failed turn.
//
// Thread safety: ConversationBook is safe to call from any thread (the load generator's sender
// and its HTTP callbacks).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"

namespace frugal::loadgen {

struct ConversationMix {
  bool enabled = false;    // off: every request is a single user message
  int max_turns = 3;       // user turns per conversation
  double new_share = 0.3;  // of arrivals when a conversation could go on: start a new one
  std::string system;      // the system prompt of every conversation (empty: none)
};

// One chat message, as the OpenAI API names its fields.
struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class ConversationBook {
 public:
  explicit ConversationBook(ConversationMix mix) : mix_(std::move(mix)) {}

  struct Turn {
    int64_t conversation = 0;
    int turn = 1;                       // 1 = the conversation's first user message
    std::vector<ChatMessage> messages;  // system, earlier turns, then `question`
  };
  // The next request: goes on with the ready conversation that has waited longest unless
  // u < new_share (u uniform in [0, 1)) or none is ready; else starts a new conversation.
  Turn Next(double u, const std::string& question);
  // The end of a turn: with its answer (ok), the conversation may go on; a failed turn, or its
  // last, ends it.
  void Answered(int64_t conversation, bool ok, const std::string& answer);

  int64_t started() const;  // conversations begun so far

 private:
  struct Open {
    std::vector<ChatMessage> messages;  // what the next turn sends before its question
    int turns = 0;                      // user turns sent
  };
  const ConversationMix mix_;
  mutable Mutex mu_;
  std::vector<Open> all_ FRUGAL_GUARDED_BY(mu_);      // by conversation id
  std::deque<int64_t> ready_ FRUGAL_GUARDED_BY(mu_);  // answered, turns left; oldest first
};

}  // namespace frugal::loadgen
