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
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop)
      : tok_(tokenizer), stop_(std::move(stop)) {}

  // Adds one generated token; returns the text that became safe to show. Sets *stopped when a
  // stop string completed: the text ends before it and nothing more will be shown.
  std::string Push(int32_t token, bool* stopped);
  // At the end of generation (not after a stop string): the text held back so far.
  std::string Finish();
  const std::string& text() const { return text_; }

 private:
  std::string TakeUpTo(size_t end);

  const Tokenizer& tok_;
  std::vector<std::string> stop_;
  Utf8StreamDecoder utf8_;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace frugal
