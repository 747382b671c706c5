#include "loadgen/conversation.h"

#include <algorithm>

#include "common/check.h"
#include "loadgen/loadgen.h"

namespace frugal::loadgen {

ConversationBook::Turn ConversationBook::Next(double u, const std::string& question) {
  MutexLock lock(mu_);
  Turn t;
  if (!ready_.empty() && u >= mix_.new_share) {
    t.conversation = ready_.front();
    ready_.pop_front();
  } else {
    t.conversation = static_cast<int64_t>(all_.size());
    Open fresh;
    if (!mix_.system.empty()) fresh.messages.push_back({"system", mix_.system});
    all_.push_back(std::move(fresh));
  }
  Open& c = all_[static_cast<size_t>(t.conversation)];
  c.messages.push_back({"user", question});
  t.turn = ++c.turns;
  t.messages = c.messages;
  return t;
}

void ConversationBook::Answered(int64_t conversation, bool ok, const std::string& answer) {
  MutexLock lock(mu_);
  FRUGAL_CHECK(conversation >= 0 && conversation < static_cast<int64_t>(all_.size()));
  Open& c = all_[static_cast<size_t>(conversation)];
  if (!ok) {
    c.messages.clear();  // ended: nothing more is sent in it
    return;
  }
  c.messages.push_back({"assistant", answer});
  if (c.turns < mix_.max_turns) ready_.push_back(conversation);
}

int64_t ConversationBook::started() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(all_.size());
}

std::vector<PhaseStats::Turn> TurnStats(const std::vector<const RequestRecord*>& records) {
  constexpr int kLastTurnRow = 3;  // turns 3, 4, ... report together
  std::vector<PhaseStats::Turn> out;
  for (int row = 1; row <= kLastTurnRow; ++row) {
    PhaseStats::Turn t;
    t.turn = row;
    std::vector<double> ttft, lat;
    for (const RequestRecord* r : records) {
      if (r->turn <= 0 || std::min(r->turn, kLastTurnRow) != row) continue;
      ++t.requests;
      if (!r->ok()) {
        ++t.errors;
        continue;
      }
      lat.push_back(r->latency_ms);
      if (r->ttft_ms >= 0) ttft.push_back(r->ttft_ms);
    }
    if (t.requests == 0) continue;
    t.ttft_p50_ms = Percentile(ttft, 50);
    t.ttft_p95_ms = Percentile(ttft, 95);
    t.latency_p50_ms = Percentile(lat, 50);
    out.push_back(t);
  }
  return out;
}

}  // namespace frugal::loadgen
