// Regex pre-tokenisation: a sequence of PCRE2 patterns, each splitting every piece from the
// previous step into its matches and the gaps between them (Hugging Face's Split with the
// "Isolated" behaviour; llama.cpp's unicode_regex_split). Immutable after Create; Split is
// thread-safe (match data is per call).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/status.h"

namespace frugal::tokenizer_internal {

// GPT-2's pattern, as Hugging Face's ByteLevel(use_regex=true) applies it.
extern const char kGpt2Pattern[];

class RegexSplitter {
 public:
  static StatusOr<std::unique_ptr<RegexSplitter>> Create(const std::vector<std::string>& patterns);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` to `pieces`: non-empty substrings of `text`, in order,
  // together covering all of it.
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  struct Compiled;
  RegexSplitter() = default;
  void SplitOne(const Compiled& re, std::string_view text,
                std::vector<std::string_view>* pieces) const;
  std::vector<std::unique_ptr<Compiled>> compiled_;
};

// The regexes llama.cpp uses for a GGUF `tokenizer.ggml.pre` name, written as the original
// tokenizer.json has them. Unimplemented for names outside the table.
struct PreTokenizerPreset {
  std::vector<std::string> patterns;
  bool ignore_merges = false;  // llama.cpp sets it for the Llama 3 family
};
StatusOr<PreTokenizerPreset> PresetForName(std::string_view name);

}  // namespace frugal::tokenizer_internal
