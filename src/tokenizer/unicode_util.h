// UTF-8 and Unicode helpers shared by the tokenizers: tolerant decoding (invalid bytes are
// reported, never trusted), the GPT-2 byte <-> unicode table, normalisation forms via utf8proc,
// and the character classes the Hugging Face tokenizers use. All functions are thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace frugal::tokenizer_internal {

inline constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFFu;

// What starts at s[pos]: a complete character, the valid start of one cut off by the end of
// `s`, or an invalid sequence (`len` is then the maximal subpart to replace with one U+FFFD).
enum class Utf8Status { kComplete, kIncomplete, kInvalid };
struct Utf8Char {
  Utf8Status status;
  uint32_t cp;  // kInvalidCodepoint unless complete
  size_t len;   // >= 1 for kComplete / kInvalid; bytes available for kIncomplete
};
Utf8Char DecodeUtf8(std::string_view s, size_t pos);

// Length of the character at s[pos]: its byte count when valid, else 1 (an invalid byte is
// its own unit, so byte-level tokenizers can still encode it).
inline size_t Utf8CharLen(std::string_view s, size_t pos) {
  Utf8Char c = DecodeUtf8(s, pos);
  return c.status == Utf8Status::kComplete ? c.len : 1;
}

void AppendUtf8(uint32_t cp, std::string* out);
// Invalid or truncated sequences become U+FFFD.
std::string ToValidUtf8(std::string_view s);

// GPT-2's reversible byte -> printable character table, as UTF-8 strings.
const std::array<std::string, 256>& ByteToUnicode();
// Inverse of ByteToUnicode: the byte for a code point, or -1.
int UnicodeToByte(uint32_t cp);

enum class NormalForm { kNone, kNfc, kNfd, kNfkc, kNfkd };
// "NFC", "NFD", "NFKC", "NFKD" -> the form; anything else -> kNone.
NormalForm ParseNormalForm(std::string_view name);
// Applies the form to each valid UTF-8 run; invalid bytes pass through unchanged.
std::string Normalize(std::string_view s, NormalForm form);

// Unicode White_Space (what Rust's char::is_whitespace and the HF regex engine's \s accept).
bool IsWhitespace(uint32_t cp);
// Categories via utf8proc.
bool IsPunctuation(uint32_t cp);     // P*
bool IsNonspacingMark(uint32_t cp);  // Mn
bool IsOtherControl(uint32_t cp);    // Cc, Cf, Co, Cs (BertNormalizer's clean_text)
// Simple lowercase mapping; "İ" (U+0130) -> "i̇" as Rust's char::to_lowercase does.
void AppendLower(uint32_t cp, std::string* out);

}  // namespace frugal::tokenizer_internal
