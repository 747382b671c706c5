// Internals shared by the tokenizer implementations (not part of the public interface).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace frugal::tokenizer_internal {

// A run of input text, or one special token found in it.
struct Segment {
  std::string_view text;  // the input text (also set for special tokens)
  int32_t id = -1;        // >= 0: a special token
  size_t offset = 0;      // byte offset in the input
};

// Finds special / added tokens in text, leftmost-longest (as Hugging Face's added-vocabulary
// matcher does). User-defined tokens (type 4, HF's non-special added tokens) are matched
// always, as llama.cpp and HF do; the others (control, unknown) only inside `markup`
// (Tokenizer::EncodeMarked). Immutable; thread-safe.
class SpecialMatcher {
 public:
  SpecialMatcher(const TokenizerSpec& spec,
                 const std::function<std::optional<int32_t>(std::string_view)>& lookup);
  void Split(std::string_view text, std::span<const TextRange> markup,
             std::vector<Segment>* out) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool always;  // matched even when parse_special is false
  };
  std::array<std::vector<Entry>, 256> by_first_byte_;  // each sorted longest first
};

StatusOr<std::unique_ptr<Tokenizer>> CreateBpeTokenizer(TokenizerSpec spec);
StatusOr<std::unique_ptr<Tokenizer>> CreateWordPieceTokenizer(TokenizerSpec spec);
StatusOr<std::unique_ptr<Tokenizer>> CreateUnigramTokenizer(TokenizerSpec spec);

// GGUF token types.
inline constexpr int32_t kTypeNormal = 1;
inline constexpr int32_t kTypeUnknown = 2;
inline constexpr int32_t kTypeControl = 3;
inline constexpr int32_t kTypeUserDefined = 4;
inline constexpr int32_t kTypeUnused = 5;
inline constexpr int32_t kTypeByte = 6;

// What Decode(skip_special=true) drops: control tokens and the unknown token (HF drops every
// special added token, <unk> included); user-defined tokens are text and stay.
inline bool IsSkippedSpecial(int32_t type) { return type == kTypeControl || type == kTypeUnknown; }

}  // namespace frugal::tokenizer_internal
