// Turns generated tokens into the text a client sees: complete UTF-8 only, never text that
// might still turn out to be part of a stop string, and nothing from a stop string on.
// Shared by Engine::Generate and the continuous-batching scheduler. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace frugal {

class TextStream {
 public:
  // Empty stop strings are ignored.
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop);

  // Adds one generated token; returns the text that became safe to show. Sets *stopped when a
  // stop string completed: the text ends before it and nothing more will be shown.
  std::string Push(int32_t token, bool* stopped);
  // At the end of generation (not after a stop string): the text held back so far.
  std::string Finish();
  const std::string& text() const { return text_; }

 private:
  std::string TakeUpTo(size_t end);

  // One matcher per stop string (Knuth-Morris-Pratt): the longest prefix of the stop string that
  // ends the text so far, updated byte by byte as text arrives, so a token costs time linear in
  // its own bytes whatever the stop strings' lengths.
  struct StopMatcher {
    std::string s;
    std::vector<size_t> fail;  // fail[i]: the longest proper border of s[0..i]
    size_t state = 0;          // s[0..state) ends the text
  };

  const Tokenizer& tok_;
  std::vector<StopMatcher> stop_;
  Utf8StreamDecoder utf8_;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace frugal
