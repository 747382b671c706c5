#include "engine/text_stream.h"

#include <algorithm>
#include <utility>

namespace frugal {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop)
    : tok_(tokenizer) {
  for (auto& s : stop) {
    if (s.empty()) continue;
    StopMatcher m;
    m.fail.assign(s.size(), 0);
    for (size_t i = 1, k = 0; i < s.size(); ++i) {
      while (k > 0 && s[i] != s[k]) k = m.fail[k - 1];
      if (s[i] == s[k]) ++k;
      m.fail[i] = k;
    }
    m.s = std::move(s);
    stop_.push_back(std::move(m));
  }
}

std::string TextStream::TakeUpTo(size_t end) {
  if (end <= emitted_) return {};
  std::string out = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return out;
}

std::string TextStream::Push(int32_t token, bool* stopped) {
  *stopped = stopped_;
  if (stopped_) return {};
  const size_t from = text_.size();
  if (!tok_.IsSpecial(token)) text_ += utf8_.Push(tok_.TokenToPiece(token));
  // Each matcher reads the new bytes; the earliest-starting stop string completed ends the text.
  size_t cut = std::string::npos, hold = 0;
  for (auto& m : stop_) {
    for (size_t i = from; i < text_.size(); ++i) {
      const char c = text_[i];
      while (m.state > 0 && m.s[m.state] != c) m.state = m.fail[m.state - 1];
      if (m.s[m.state] == c) ++m.state;
      if (m.state == m.s.size()) {
        cut = std::min(cut, i + 1 - m.s.size());
        break;  // this one's first completion; later ones start later
      }
    }
    hold = std::max(hold, m.state);
  }
  if (cut != std::string::npos) {
    text_.resize(cut);
    stopped_ = *stopped = true;
    return TakeUpTo(text_.size());
  }
  // The longest partial stop string that ends the text is held back until the next token
  // decides; it never reaches into text already shown.
  return TakeUpTo(text_.size() - std::min(hold, text_.size() - emitted_));
}

std::string TextStream::Finish() {
  if (stopped_) return {};
  text_ += utf8_.Flush();  // a dangling partial character, if any
  return TakeUpTo(text_.size());
}

}  // namespace frugal
