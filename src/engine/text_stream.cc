#include "engine/text_stream.h"

#include <algorithm>

namespace frugal {
namespace {

// Length of the longest suffix of `text` (starting at or after `from`) that is a proper prefix
// of some stop string: that much must be held back until the next token decides.
size_t StopHoldback(const std::string& text, size_t from, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops) {
    for (size_t len = std::min(s.size() - 1, text.size() - from); len > hold; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

}  // namespace

std::string TextStream::TakeUpTo(size_t end) {
  if (end <= emitted_) return {};
  std::string out = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return out;
}

std::string TextStream::Push(int32_t token, bool* stopped) {
  *stopped = stopped_;
  if (stopped_) return {};
  if (!tok_.IsSpecial(token)) text_ += utf8_.Push(tok_.TokenToPiece(token));
  // The earliest stop string ends the text; it can only start in text not yet shown.
  size_t cut = std::string::npos;
  for (const auto& s : stop_) {
    const size_t search_from = emitted_ >= s.size() ? emitted_ - s.size() + 1 : 0;
    cut = std::min(cut, text_.find(s, search_from));
  }
  if (cut != std::string::npos) {
    text_.resize(cut);
    stopped_ = *stopped = true;
    return TakeUpTo(text_.size());
  }
  return TakeUpTo(text_.size() - StopHoldback(text_, emitted_, stop_));
}

std::string TextStream::Finish() {
  if (stopped_) return {};
  text_ += utf8_.Flush();  // a dangling partial character, if any
  return TakeUpTo(text_.size());
}

}  // namespace frugal
