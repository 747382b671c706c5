// Model-free tests of the tokenizers: tiny hand-made vocabularies for each kind.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/mmap_file.h"
#include "formats/gguf.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/tokenize_jsonl.h"
#include "tokenizer/unicode_util.h"

namespace frugal {
namespace {

using tokenizer_internal::ByteToUnicode;
using tokenizer_internal::kGpt2Pattern;
using tokenizer_internal::RegexSplitter;

using Pieces = std::vector<std::string>;

Pieces ToPieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  Pieces out;
  for (int32_t id : ids) out.push_back(tok.spec().tokens.at(id));
  return out;
}

std::unique_ptr<Tokenizer> MustCreate(TokenizerSpec spec) {
  auto tok = Tokenizer::Create(std::move(spec));
  if (!tok.ok()) {  // every caller needs the tokenizer: stop here, loudly
    ADD_FAILURE() << tok.status().ToString();
    std::abort();
  }
  return std::move(tok).value();
}

// ----------------------------------------------------------------------------------------------
// Byte-level BPE

// 256 byte characters, then one token per merge, then three control tokens.
TokenizerSpec ByteLevelSpec(const std::vector<std::pair<std::string, std::string>>& merges) {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kByteLevelBpe;
  const auto& bytes = ByteToUnicode();
  spec.tokens.assign(bytes.begin(), bytes.end());
  for (const auto& [a, b] : merges) spec.tokens.push_back(a + b);
  spec.token_types.assign(spec.tokens.size(), 1);
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    spec.tokens.push_back(s);
    spec.token_types.push_back(3);
    spec.special_tokens.push_back(s);
  }
  spec.merges = merges;
  spec.pre_regexes = {kGpt2Pattern};
  spec.eos_id = static_cast<int32_t>(spec.tokens.size()) - 3;
  return spec;
}

TEST(ByteLevelBpeTest, LowestRankMergesFirst) {
  // "abc": with (b,c) ranked first the result is a|bc; with (a,b) first it is ab|c.
  auto bc_first = MustCreate(ByteLevelSpec({{"b", "c"}, {"a", "b"}}));
  auto ab_first = MustCreate(ByteLevelSpec({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(ToPieces(*bc_first, bc_first->Encode("abc", false, false)), (Pieces{"a", "bc"}));
  EXPECT_EQ(ToPieces(*ab_first, ab_first->Encode("abc", false, false)), (Pieces{"ab", "c"}));
}

TEST(ByteLevelBpeTest, ChainedMergesAndLeftmostTie) {
  auto tok = MustCreate(
      ByteLevelSpec({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"a", "a"}}));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("hello world", false, false)),
            (Pieces{"hello", "Ġw", "o", "r", "l", "d"}));
  // Equal ranks: the leftmost pair merges first.
  EXPECT_EQ(ToPieces(*tok, tok->Encode("aaa", false, false)), (Pieces{"aa", "a"}));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("aaaa", false, false)), (Pieces{"aa", "aa"}));
}

TEST(ByteLevelBpeTest, PreTokenizerKeepsWordsApart) {
  // "o Ġ" must not merge across the GPT-2 split of "o" and " w".
  auto tok = MustCreate(ByteLevelSpec({{"o", "Ġ"}, {"Ġ", "w"}}));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("o w", false, false)), (Pieces{"o", "Ġw"}));
}

TEST(ByteLevelBpeTest, SpecialTokensOnlyWhenParsed) {
  auto tok = MustCreate(ByteLevelSpec({{"h", "i"}}));
  const int32_t im_start = *tok->TokenId("<|im_start|>");
  const int32_t im_end = *tok->TokenId("<|im_end|>");
  EXPECT_EQ(tok->Encode("<|im_start|>hi<|im_end|>", false, true),
            (std::vector<int32_t>{im_start, *tok->TokenId("hi"), im_end}));
  const auto plain = tok->Encode("<|im_start|>hi", false, false);
  EXPECT_GT(plain.size(), 3u);
  EXPECT_EQ(plain.front(), *tok->TokenId("<"));
  EXPECT_TRUE(tok->IsSpecial(im_start));
  EXPECT_FALSE(tok->IsSpecial(*tok->TokenId("hi")));
  // Decode keeps specials as written unless asked to skip them.
  const std::vector<int32_t> ids = tok->Encode("<|im_start|>hi<|im_end|>", false, true);
  EXPECT_EQ(tok->Decode(ids, false), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(tok->Decode(ids, true), "hi");
}

TEST(ByteLevelBpeTest, SpecialTokensOnlyInsideTheMarkup) {
  TokenizerSpec spec = ByteLevelSpec({{"h", "i"}});
  spec.tokens.push_back("<tool>");
  spec.token_types.push_back(4);  // user-defined: matched anywhere
  spec.special_tokens.push_back("<tool>");
  auto tok = MustCreate(std::move(spec));
  const int32_t im_start = *tok->TokenId("<|im_start|>");
  const int32_t im_end = *tok->TokenId("<|im_end|>");
  const int32_t tool = *tok->TokenId("<tool>");
  // Template markup at [0, 12) and [30, 40); between them a "message" that spells the markers.
  const std::string text = "<|im_start|>hi<|im_end|><tool><|im_end|>";
  ASSERT_EQ(text.size(), 40u);
  const std::vector<TextRange> markup = {{0, 12}, {30, 40}};
  const auto ids = tok->EncodeMarked(text, false, markup);
  auto count = [&](int32_t id) { return std::count(ids.begin(), ids.end(), id); };
  EXPECT_EQ(count(im_start), 1);
  EXPECT_EQ(count(im_end), 1);  // the one at 14 is text; the one at 30 is markup
  EXPECT_EQ(count(tool), 1);
  EXPECT_EQ(ids.front(), im_start);
  EXPECT_EQ(ids.back(), im_end);
  EXPECT_EQ(tok->Decode(ids, /*skip_special=*/true), "hi<|im_end|><tool>");
  // A marker that only starts inside a range, or only ends inside one, is text.
  const std::vector<TextRange> partial = {{0, 5}, {33, 40}};
  const auto split = tok->EncodeMarked(text, false, partial);
  EXPECT_EQ(std::count(split.begin(), split.end(), im_start), 0);
  EXPECT_EQ(std::count(split.begin(), split.end(), im_end), 0);
  // Encode's parse_special is the whole text or nothing.
  EXPECT_EQ(tok->Encode(text, false, true), tok->EncodeMarked(text, false, {{{0, text.size()}}}));
  EXPECT_EQ(tok->Encode(text, false, false), tok->EncodeMarked(text, false, {}));
}

TEST(ByteLevelBpeTest, UserDefinedTokensAlwaysSplit) {
  TokenizerSpec spec = ByteLevelSpec({});
  spec.tokens.push_back("<tool>");
  spec.token_types.push_back(4);  // user-defined
  spec.special_tokens.push_back("<tool>");
  auto tok = MustCreate(std::move(spec));
  const int32_t tool = *tok->TokenId("<tool>");
  const auto ids = tok->Encode("a<tool>b", false, /*parse_special=*/false);
  EXPECT_EQ(ToPieces(*tok, ids), (Pieces{"a", "<tool>", "b"}));
  EXPECT_EQ(tok->Decode(ids, /*skip_special=*/true), "a<tool>b");  // text, not control
  EXPECT_TRUE(tok->IsSpecial(tool));
}

TEST(ByteLevelBpeTest, LongestSpecialWins) {
  TokenizerSpec spec = ByteLevelSpec({});
  spec.tokens.push_back("<|im");
  spec.token_types.push_back(3);
  spec.special_tokens.push_back("<|im");
  auto tok = MustCreate(std::move(spec));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("<|im_end|><|im", false, true)),
            (Pieces{"<|im_end|>", "<|im"}));
}

TEST(ByteLevelBpeTest, IgnoreMerges) {
  TokenizerSpec spec = ByteLevelSpec({{"Ġ", "x"}});
  spec.tokens.push_back("Ġxyz");  // no merge builds it
  spec.token_types.push_back(1);
  TokenizerSpec with = spec;
  with.ignore_merges = true;
  auto plain = MustCreate(std::move(spec));
  auto ignoring = MustCreate(std::move(with));
  EXPECT_EQ(ToPieces(*plain, plain->Encode(" xyz", false, false)), (Pieces{"Ġx", "y", "z"}));
  EXPECT_EQ(ToPieces(*ignoring, ignoring->Encode(" xyz", false, false)), (Pieces{"Ġxyz"}));
}

TEST(ByteLevelBpeTest, BosEosAndEndOfGeneration) {
  TokenizerSpec spec = ByteLevelSpec({});
  spec.bos_id = spec.eos_id - 1;  // <|endoftext|> stands in for BOS here
  spec.add_bos = true;
  spec.eog_ids = {spec.eos_id + 1};
  const int32_t bos = spec.bos_id, eos = spec.eos_id;
  auto tok = MustCreate(std::move(spec));
  EXPECT_EQ(tok->Encode("a", true, false).front(), bos);
  EXPECT_EQ(tok->Encode("a", false, false).front(), *tok->TokenId("a"));
  EXPECT_EQ(tok->Encode("", true, false), (std::vector<int32_t>{bos}));
  EXPECT_TRUE(tok->IsEndOfGeneration(eos));
  EXPECT_TRUE(tok->IsEndOfGeneration(eos + 1));
  EXPECT_FALSE(tok->IsEndOfGeneration(bos));
}

TEST(ByteLevelBpeTest, RoundTripsAnyBytes) {
  auto tok = MustCreate(ByteLevelSpec({{"h", "e"}, {"Ġ", "w"}, {"ä", "½"}}));
  const std::string texts[] = {
      "hello world",
      "  two  spaces\n\n\ttab",
      "你好，世界",
      "emoji 👨‍👩‍👧‍👦 ZWJ",
      "digits 1299 $1,234.56 3.14159",
      std::string("nul\0inside", 10),
      "x\xC2\x85y",
  };
  for (const std::string& text : texts) {
    const auto ids = tok->Encode(text, false, false);
    EXPECT_EQ(tok->Decode(ids, false), text) << text;
  }
  // Invalid UTF-8 is still encoded byte by byte; the pieces give the bytes back, Decode
  // replaces what is not UTF-8.
  const std::string invalid = "a\xFF\xFE b\xE4\xBD";
  const auto ids = tok->Encode(invalid, false, false);
  std::string bytes;
  for (int32_t id : ids) bytes += tok->TokenToPiece(id);
  EXPECT_EQ(bytes, invalid);
  EXPECT_EQ(tok->Decode(ids, false), "a\xEF\xBF\xBD\xEF\xBF\xBD b\xEF\xBF\xBD");
}

TEST(ByteLevelBpeTest, LongPieceIsFast) {
  // One 200k-symbol piece: the heap keeps it O(n log n).
  auto tok = MustCreate(ByteLevelSpec({{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}}));
  const std::string text(200000, 'a');
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(ids.size(), 200000u / 8);
}

TEST(ByteLevelBpeTest, PreNamesResolve) {
  for (const char* name : {"gpt2", "smollm", "llama3", "llama-bpe", "qwen2", "default", ""}) {
    TokenizerSpec spec = ByteLevelSpec({});
    spec.pre_regexes.clear();
    spec.pre_name = name;
    EXPECT_TRUE(Tokenizer::Create(std::move(spec)).ok()) << name;
  }
  TokenizerSpec spec = ByteLevelSpec({});
  spec.pre_regexes.clear();
  spec.pre_name = "no-such-pre";
  auto tok = Tokenizer::Create(std::move(spec));
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("no-such-pre"), std::string::npos);
}

// ----------------------------------------------------------------------------------------------
// Regex pre-tokenisation

std::vector<std::string> SplitWith(const std::vector<std::string>& patterns,
                                   std::string_view text) {
  auto splitter = RegexSplitter::Create(patterns);
  EXPECT_TRUE(splitter.ok()) << splitter.status().ToString();
  std::vector<std::string_view> pieces;
  (*splitter)->Split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

TEST(RegexSplitTest, Gpt2Pattern) {
  // "\n\n" before a letter: \s+(?!\S) backs off to one "\n", then \s+ takes the other.
  EXPECT_EQ(SplitWith({kGpt2Pattern}, "Hello world's  test 123!!\n\nok  "),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " test", " 123", "!!", "\n",
                                      "\n", "ok", "  "}));
  // U+0085 counts as whitespace, as in the reference's regex engine.
  EXPECT_EQ(SplitWith({kGpt2Pattern}, "a \xC2\x85 b"),
            (std::vector<std::string>{"a", " \xC2\x85", " b"}));
}

TEST(RegexSplitTest, SequenceAndDigits) {
  // SmolLM: every digit alone, then GPT-2.
  EXPECT_EQ(SplitWith({R"(\p{N})", kGpt2Pattern}, "ab 1299"),
            (std::vector<std::string>{"ab", " ", "1", "2", "9", "9"}));
}

TEST(RegexSplitTest, Llama3PatternAndCaseInsensitiveContractions) {
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(SplitWith({llama3}, "I'LL pay 12345."),
            (std::vector<std::string>{"I", "'LL", " pay", " ", "123", "45", "."}));
}

TEST(RegexSplitTest, EmptyMatchesSplitAndGapsAreKept) {
  // A lookahead-only pattern matches empty strings: they mark split points.
  EXPECT_EQ(SplitWith({R"((?=b))"}, "aabab"), (std::vector<std::string>{"aa", "ba", "b"}));
  // Text no pattern matches survives as gap pieces.
  EXPECT_EQ(SplitWith({"x"}, "axbx"), (std::vector<std::string>{"a", "x", "b", "x"}));
  // Invalid UTF-8 does not stop the split.
  EXPECT_EQ(SplitWith({kGpt2Pattern}, "a\xFF b"), (std::vector<std::string>{"a", "\xFF", " b"}));
}

TEST(RegexSplitTest, BadPatternIsUnimplemented) {
  auto splitter = RegexSplitter::Create({"(unclosed"});
  ASSERT_FALSE(splitter.ok());
  EXPECT_EQ(splitter.status().code(), StatusCode::kUnimplemented);
}

// ----------------------------------------------------------------------------------------------
// SentencePiece-style BPE

// <unk> <s> </s> <0x00>..<0xFF> then pieces; merges (by rank) or scores (-rank).
TokenizerSpec SpmSpec(bool with_merges) {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePieceBpe;
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.token_types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    spec.tokens.push_back(name);
    spec.token_types.push_back(6);
  }
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"▁", "h"}, {"e", "l"}, {"▁h", "el"}, {"l", "o"}, {"▁hel", "lo"},
      {"▁", "w"}, {"o", "r"}, {"▁w", "or"}, {"l", "d"}, {"▁wor", "ld"}};
  for (const char* c : {"▁", "h", "e", "l", "o", "w", "r", "d"}) {
    spec.tokens.push_back(c);
    spec.token_types.push_back(1);
  }
  for (const auto& [a, b] : merges) {
    spec.tokens.push_back(a + b);
    spec.token_types.push_back(1);
  }
  if (with_merges) {
    spec.merges = merges;
  } else {
    spec.scores.assign(spec.tokens.size(), 0.0f);
    for (size_t r = 0; r < merges.size(); ++r) {
      const std::string merged = merges[r].first + merges[r].second;
      for (size_t i = 0; i < spec.tokens.size(); ++i) {
        if (spec.tokens[i] == merged) spec.scores[i] = -static_cast<float>(r);
      }
    }
  }
  spec.special_tokens = {"<unk>", "<s>", "</s>"};
  spec.unk_id = 0;
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.add_bos = true;
  spec.add_space_prefix = true;
  return spec;
}

class SpmTest : public ::testing::TestWithParam<bool> {};

TEST_P(SpmTest, MergesSpacesAndBos) {
  auto tok = MustCreate(SpmSpec(GetParam()));
  const auto ids = tok->Encode("hello world", true, false);
  EXPECT_EQ(ToPieces(*tok, ids), (Pieces{"<s>", "▁hello", "▁world"}));
  EXPECT_EQ(tok->Decode(ids, true), "hello world");
  EXPECT_EQ(tok->Decode(ids, false), "<s> hello world");
}

TEST_P(SpmTest, ByteFallback) {
  auto tok = MustCreate(SpmSpec(GetParam()));
  const auto ids = tok->Encode("h你\n", false, false);
  EXPECT_EQ(ToPieces(*tok, ids), (Pieces{"▁h", "<0xE4>", "<0xBD>", "<0xA0>", "<0x0A>"}));
  EXPECT_EQ(tok->Decode(ids, false), "h你\n");
  // Pieces for streaming: the byte tokens are raw bytes, "▁" is a space.
  EXPECT_EQ(tok->TokenToPiece(ids[1]), "\xE4");
  EXPECT_EQ(tok->TokenToPiece(ids[0]), " h");
}

TEST_P(SpmTest, SpecialTokensAndPrefixAfterThem) {
  auto tok = MustCreate(SpmSpec(GetParam()));
  // Every text segment gets the space prefix, also after a special token (llama.cpp, HF legacy).
  EXPECT_EQ(ToPieces(*tok, tok->Encode("hello</s>world", false, true)),
            (Pieces{"▁hello", "</s>", "▁world"}));
  // Not parsed: "<s>" is text (unknown characters fall back to bytes).
  EXPECT_EQ(ToPieces(*tok, tok->Encode("<s>", false, false)),
            (Pieces{"▁", "<0x3C>", "<0x73>", "<0x3E>"}));
}

INSTANTIATE_TEST_SUITE_P(RankAndScore, SpmTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Merges" : "Scores"; });

TEST(SpmTest, WithoutByteFallbackUnknownsFuse) {
  TokenizerSpec spec = SpmSpec(true);
  spec.byte_fallback = false;
  auto tok = MustCreate(std::move(spec));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("h你好", false, false)), (Pieces{"▁h", "<unk>"}));
}

TEST(SpmTest, MetaspaceFirstOnlyPrefixesTheStart) {
  TokenizerSpec spec = SpmSpec(true);
  spec.space_prefix_mode = TokenizerSpec::SpacePrefix::kFirstUnlessSpace;
  auto tok = MustCreate(std::move(spec));
  EXPECT_EQ(ToPieces(*tok, tok->Encode("hello</s>world", false, true)),
            (Pieces{"▁hello", "</s>", "w", "or", "ld"}));
  EXPECT_EQ(ToPieces(*tok, tok->Encode(" hello", false, false)), (Pieces{"▁hello"}));
}

// ----------------------------------------------------------------------------------------------
// WordPiece

TokenizerSpec WordPieceSpec() {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kWordPiece;
  spec.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello",
                 "world", "##s",   ",",     "!",     "cafe",   "你", "好",    "a",      "##b"};
  spec.token_types.assign(spec.tokens.size(), 1);
  for (int i = 0; i < 5; ++i) spec.token_types[i] = 3;
  spec.special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  spec.unk_id = 1;
  spec.cls_id = 2;
  spec.sep_id = 3;
  spec.pad_id = 0;
  spec.max_input_chars_per_word = 10;
  return spec;
}

TEST(WordPieceTest, GreedyLongestMatchWithContinuations) {
  auto tok = MustCreate(WordPieceSpec());
  const auto ids = tok->Encode("Unaffable hello, Worlds!", true, false);
  EXPECT_EQ(ToPieces(*tok, ids),
            (Pieces{"[CLS]", "un", "##aff", "##able", "hello", ",", "world", "##s", "!", "[SEP]"}));
  EXPECT_EQ(tok->Decode(ids, true), "unaffable hello, worlds!");
  EXPECT_EQ(tok->Decode(ids, false), "[CLS] unaffable hello, worlds! [SEP]");
}

TEST(WordPieceTest, UnknownAndTooLongWords) {
  auto tok = MustCreate(WordPieceSpec());
  // "unx": "un" matches but "##x" does not, so the whole word is [UNK].
  EXPECT_EQ(ToPieces(*tok, tok->Encode("unx hello", false, false)), (Pieces{"[UNK]", "hello"}));
  // Eleven characters > max_input_chars_per_word (10), although "ab..." would match.
  EXPECT_EQ(ToPieces(*tok, tok->Encode("abbbbbbbbbb abbbbbbbbb", false, false)),
            (Pieces{"[UNK]", "a", "##b", "##b", "##b", "##b", "##b", "##b", "##b", "##b", "##b"}));
}

TEST(WordPieceTest, BertNormalizer) {
  auto tok = MustCreate(WordPieceSpec());
  // Accents stripped (NFD, drop Mn), lowercased, CJK ideographs split, controls dropped.
  EXPECT_EQ(ToPieces(*tok, tok->Encode("CAFÉ\tcafe\xCC\x81 你好\x07!", false, false)),
            (Pieces{"cafe", "cafe", "你", "好", "!"}));
}

TEST(WordPieceTest, SpecialsInText) {
  auto tok = MustCreate(WordPieceSpec());
  EXPECT_EQ(ToPieces(*tok, tok->Encode("hello [MASK]", false, true)), (Pieces{"hello", "[MASK]"}));
  // Not parsed: normalised and split like any text ("[", "mask", "]" are unknown here).
  EXPECT_EQ(ToPieces(*tok, tok->Encode("hello [MASK]", false, false)),
            (Pieces{"hello", "[UNK]", "[UNK]", "[UNK]"}));
}

// ----------------------------------------------------------------------------------------------
// Streaming UTF-8

TEST(Utf8StreamDecoderTest, HoldsSplitCharacters) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.Push("a\xE4"), "a");
  EXPECT_EQ(d.Push("\xBD"), "");
  EXPECT_EQ(d.Push("\xA0!"), "你!");
  // A 4-byte emoji in single bytes.
  EXPECT_EQ(d.Push("\xF0"), "");
  EXPECT_EQ(d.Push("\x9F"), "");
  EXPECT_EQ(d.Push("\x98"), "");
  EXPECT_EQ(d.Push("\x80"), "😀");
  EXPECT_EQ(d.Flush(), "");
}

TEST(Utf8StreamDecoderTest, InvalidBytesBecomeReplacementCharacters) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.Push("\xFF"
                   "a"),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(d.Push("\xE4\x41"),
            "\xEF\xBF\xBD"
            "A");  // cut-off sequence, then a valid byte
  EXPECT_EQ(d.Push("\xE4\xBD"), "");
  EXPECT_EQ(d.Flush(), "\xEF\xBF\xBD");  // an unfinished character at the end
  EXPECT_EQ(d.Flush(), "");
}

// ----------------------------------------------------------------------------------------------
// Validation and loaders

TEST(TokenizerCreateTest, RejectsInconsistentSpecs) {
  TokenizerSpec empty;
  EXPECT_EQ(Tokenizer::Create(empty).status().code(), StatusCode::kInvalidArgument);
  TokenizerSpec bad_id = ByteLevelSpec({});
  bad_id.bos_id = 1 << 20;
  EXPECT_EQ(Tokenizer::Create(bad_id).status().code(), StatusCode::kInvalidArgument);
  TokenizerSpec bad_scores = SpmSpec(false);
  bad_scores.scores.pop_back();
  EXPECT_EQ(Tokenizer::Create(bad_scores).status().code(), StatusCode::kInvalidArgument);
  TokenizerSpec bad_types = ByteLevelSpec({});
  bad_types.token_types.resize(3);
  EXPECT_EQ(Tokenizer::Create(bad_types).status().code(), StatusCode::kInvalidArgument);
}

// A byte-level tokenizer.json: 256 byte tokens, merges in both forms, one special.
std::string TinyByteLevelJson(const std::string& extra_model = "") {
  std::string vocab;
  const auto& bytes = ByteToUnicode();
  for (int b = 0; b < 256; ++b) {
    std::string t = bytes[b] == "\"" ? "\\\"" : bytes[b] == "\\" ? "\\\\" : bytes[b];
    vocab += "\"" + t + "\": " + std::to_string(b) + ", ";
  }
  vocab += R"("he": 256, "Ġw": 257, "<|bos|>": 258)";
  return R"({"version": "1.0", "added_tokens": [{"id": 258, "content": "<|bos|>", "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [258], "tokens": ["<|bos|>"]}}},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": false,
              "merges": ["h e", ["Ġ", "w"]], "vocab": {)" +
         vocab + "}" + extra_model + "}}";
}

std::string Replaced(std::string s, std::string_view from, std::string_view to) {
  const size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(TokenizerJsonTest, LoadsByteLevelBpe) {
  auto tok = Tokenizer::FromTokenizerJson(TinyByteLevelJson(), "");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const auto ids = (*tok)->Encode("he who", true, false);
  EXPECT_EQ(ToPieces(**tok, ids), (Pieces{"<|bos|>", "he", "Ġw", "h", "o"}));
  EXPECT_EQ((*tok)->Decode(ids, true), "he who");
  EXPECT_EQ((*tok)->bos_id(), 258);
  // tokenizer_config.json can turn BOS off.
  auto no_bos = Tokenizer::FromTokenizerJson(TinyByteLevelJson(), R"({"add_bos_token": false})");
  ASSERT_TRUE(no_bos.ok()) << no_bos.status().ToString();
  EXPECT_EQ(ToPieces(**no_bos, (*no_bos)->Encode("he", true, false)), (Pieces{"he"}));
}

TEST(TokenizerJsonTest, MalformedIsInvalidArgument) {
  for (const char* text : {"", "{", "[1, 2]", R"({"model": 3})", R"({"model": {"type": "BPE"}})",
                           R"({"model": {"type": "BPE", "vocab": [1, 2], "merges": []}})",
                           R"({"model": {"type": "BPE", "vocab": {"a": -4}, "merges": []}})",
                           R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})"}) {
    auto tok = Tokenizer::FromTokenizerJson(text, "");
    ASSERT_FALSE(tok.ok()) << text;
    EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument)
        << text << ": " << tok.status().ToString();
  }
  auto bad_config = Tokenizer::FromTokenizerJson(TinyByteLevelJson(), "{not json");
  EXPECT_EQ(bad_config.status().code(), StatusCode::kInvalidArgument);
  const std::string bad_merge = Replaced(TinyByteLevelJson(), "\"h e\"", "\"he\"");
  EXPECT_EQ(Tokenizer::FromTokenizerJson(bad_merge, "").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TokenizerJsonTest, UnsupportedIsUnimplemented) {
  auto word_level =
      Tokenizer::FromTokenizerJson(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}}})", "");
  EXPECT_EQ(word_level.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(word_level.status().message().find("WordLevel"), std::string::npos);
  // Unigram without Metaspace: nothing would mark the spaces.
  auto unigram = Tokenizer::FromTokenizerJson(
      R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]}})", "");
  EXPECT_EQ(unigram.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(unigram.status().message().find("Metaspace"), std::string::npos);
  const std::string split = Replaced(
      TinyByteLevelJson(), R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})",
      R"({"type": "Sequence", "pretokenizers": [)"
      R"({"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Removed", "invert": false},)"
      R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  auto removed = Tokenizer::FromTokenizerJson(split, "");
  EXPECT_EQ(removed.status().code(), StatusCode::kUnimplemented) << removed.status().ToString();
  EXPECT_NE(removed.status().message().find("Removed"), std::string::npos);
  const std::string lower = Replaced(TinyByteLevelJson(), R"("normalizer": null)",
                                     R"("normalizer": {"type": "Lowercase"})");
  EXPECT_EQ(Tokenizer::FromTokenizerJson(lower, "").status().code(), StatusCode::kUnimplemented);
}

// An XLM-R-style Unigram tokenizer.json: <s> <pad> </s> <unk>, then the pieces with their
// log-probabilities; `normalizer` is spliced in as given.
std::string TinyUnigramJson(
    const std::string& normalizer =
        R"({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})") {
  return R"({"version": "1.0",
    "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true},
                     {"id": 3, "content": "<unk>", "special": true}],
    "normalizer": )" +
         normalizer + R"(,
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
    "post_processor": {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "</s>", "type_id": 0}}],
       "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                          "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
    "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"},
    "model": {"type": "Unigram", "unk_id": 3, "byte_fallback": false, "vocab": [
      ["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581", -2.0], ["\u2581a", -3.0],
      ["\u2581ab", -4.0], ["a", -3.0], ["b", -3.0], ["c", -3.0], ["\u2581abc", -20.0], ["bc", -2.0]]}})";
}

TEST(TokenizerJsonTest, UnigramTakesTheMostProbableSegmentation) {
  auto tok = Tokenizer::FromTokenizerJson(TinyUnigramJson(), "");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "▁abc": ▁a + bc = -5 beats ▁ab + c = -7, ▁ + a + bc = -7 and ▁abc = -20.
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("abc", true, false)),
            (Pieces{"<s>", "\u2581a", "bc", "</s>"}));
  // Unknown characters (score: lowest - 10 = -30) fuse into one <unk>.
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("ab dd", false, false)),
            (Pieces{"\u2581ab", "\u2581", "<unk>"}));
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("ab d\xC3\xA9", false, false)),
            (Pieces{"\u2581ab", "\u2581", "<unk>"}));
  // Runs of spaces collapse to one before Metaspace.
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("a    b", false, false)),
            (Pieces{"\u2581a", "\u2581", "b"}));
  EXPECT_EQ((*tok)->Decode((*tok)->Encode("abc  a", true, false), true), "abc a");
  EXPECT_TRUE((*tok)->Encode("", false, false).empty());
}

TEST(TokenizerJsonTest, UnigramRefusesBadInput) {
  auto scoreless =
      Tokenizer::FromTokenizerJson(Replaced(TinyUnigramJson(), R"(["bc", -2.0])", R"(["bc"])"), "");
  EXPECT_EQ(scoreless.status().code(), StatusCode::kInvalidArgument);
  auto unk = Tokenizer::FromTokenizerJson(
      Replaced(TinyUnigramJson(), R"("unk_id": 3)", R"("unk_id": 99)"), "");
  EXPECT_EQ(unk.status().code(), StatusCode::kInvalidArgument);
  auto no_unk = Tokenizer::FromTokenizerJson(
      Replaced(TinyUnigramJson(), R"("unk_id": 3)", R"("unk_id": null)"), "");
  EXPECT_EQ(no_unk.status().code(), StatusCode::kInvalidArgument);
  auto not_base64 = Tokenizer::FromTokenizerJson(
      TinyUnigramJson(R"({"type": "Precompiled", "precompiled_charsmap": "!!"})"), "");
  EXPECT_EQ(not_base64.status().code(), StatusCode::kInvalidArgument);
  // A trie size beyond the blob.
  auto too_big = Tokenizer::FromTokenizerJson(
      TinyUnigramJson(R"({"type": "Precompiled", "precompiled_charsmap": "/////w=="})"), "");
  EXPECT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
}

std::string Base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(k[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(k[(acc << (6 - bits)) & 63]);
  while (out.size() % 4 != 0) out.push_back('=');
  return out;
}

// Random charsmaps whose header fits: loading may succeed, and encoding must then stay inside
// the arrays whatever the trie says (ASan checks this in CI).
TEST(TokenizerJsonTest, UnigramSurvivesGarbageCharsmaps) {
  std::mt19937 rng(5);
  int loaded = 0;
  for (int round = 0; round < 300; ++round) {
    const uint32_t units = rng() % 64;
    std::string blob(4 + units * 4 + rng() % 40, '\0');
    const uint32_t trie_bytes = units * 4;
    std::memcpy(blob.data(), &trie_bytes, 4);  // little-endian hosts (x86-64)
    for (size_t i = 4; i < blob.size(); ++i) blob[i] = static_cast<char>(rng());
    if (units > 0 && round % 2 == 0) {  // a root that leads somewhere: offset field small
      const uint32_t root = (rng() % 4) << 10;
      std::memcpy(blob.data() + 4, &root, 4);
    }
    auto tok = Tokenizer::FromTokenizerJson(
        TinyUnigramJson(
            R"({"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": ")" +
            Base64(blob) + R"("}]})"),
        "");
    if (!tok.ok()) continue;
    ++loaded;
    for (const char* text :
         {"abc", "\xEF\xBC\xA1\xE2\x91\xA0 a\xCC\x88", "\x01\x02\xFF bad utf8", ""}) {
      (void)(*tok)->Encode(text, true, false);
    }
  }
  EXPECT_GT(loaded, 100);
}

// A minimal GGUF writer for the metadata FromGguf reads.
class MetaWriter {
 public:
  void Str(const std::string& key, const std::string& v) { Key(key, 8), S(v); }
  void U32(const std::string& key, uint32_t v) { Key(key, 4), Put(&v, 4); }
  void Bool(const std::string& key, bool v) {
    Key(key, 7);
    const uint8_t b = v;
    Put(&b, 1);
  }
  void Strings(const std::string& key, const std::vector<std::string>& v) {
    Array(key, 8, v.size());
    for (const auto& s : v) S(s);
  }
  void I32s(const std::string& key, const std::vector<int32_t>& v) {
    Array(key, 5, v.size());
    Put(v.data(), v.size() * 4);
  }
  void F32s(const std::string& key, const std::vector<float>& v) {
    Array(key, 6, v.size());
    Put(v.data(), v.size() * 4);
  }
  std::vector<uint8_t> Build() const {
    MetaWriter header;
    const uint32_t magic = 0x46554747, version = 3;
    const uint64_t n_tensors = 0;
    header.Put(&magic, 4);
    header.Put(&version, 4);
    header.Put(&n_tensors, 8);
    header.Put(&n_kv_, 8);
    header.Put(kv_.data(), kv_.size());
    std::vector<uint8_t> out = header.kv_;
    out.resize((out.size() + 31) / 32 * 32, 0);
    return out;
  }

 private:
  void Put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    kv_.insert(kv_.end(), b, b + n);
  }
  void S(const std::string& s) {
    const uint64_t n = s.size();
    Put(&n, 8);
    Put(s.data(), s.size());
  }
  void Key(const std::string& key, uint32_t type) {
    S(key);
    Put(&type, 4);
    ++n_kv_;
  }
  void Array(const std::string& key, uint32_t elem, uint64_t n) {
    Key(key, 9);
    Put(&elem, 4);
    Put(&n, 8);
  }
  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
};

StatusOr<std::unique_ptr<Tokenizer>> FromGgufImage(const std::vector<uint8_t>& image) {
  auto gguf = GgufFile::Parse(MappedFile::FromBuffer(image.data(), image.size(), "t.gguf"));
  if (!gguf.ok()) return gguf.status();
  return Tokenizer::FromGguf(**gguf);
}

TEST(TokenizerGgufTest, LlamaScoresModel) {
  const TokenizerSpec spm = SpmSpec(false);
  MetaWriter w;
  w.Str("tokenizer.ggml.model", "llama");
  w.Strings("tokenizer.ggml.tokens", spm.tokens);
  w.F32s("tokenizer.ggml.scores", spm.scores);
  w.I32s("tokenizer.ggml.token_type", spm.token_types);
  w.U32("tokenizer.ggml.bos_token_id", 1);
  w.U32("tokenizer.ggml.eos_token_id", 2);
  w.U32("tokenizer.ggml.unknown_token_id", 0);
  const auto image = w.Build();
  auto tok = FromGgufImage(image);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // Defaults as llama.cpp: BOS added, space prefix on.
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("hello world你", true, false)),
            (Pieces{"<s>", "▁hello", "▁world", "<0xE4>", "<0xBD>", "<0xA0>"}));
  EXPECT_TRUE((*tok)->IsEndOfGeneration(2));
}

TEST(TokenizerGgufTest, Gpt2ModelWithNamedPreTokenizer) {
  const TokenizerSpec spec = ByteLevelSpec({{"h", "i"}, {"Ġ", "hi"}});
  MetaWriter w;
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", "smollm");
  w.Strings("tokenizer.ggml.tokens", spec.tokens);
  w.I32s("tokenizer.ggml.token_type", spec.token_types);
  w.Strings("tokenizer.ggml.merges", {"h i", "Ġ hi"});
  w.U32("tokenizer.ggml.eos_token_id", spec.eos_id);
  w.Bool("tokenizer.ggml.add_bos_token", false);
  const auto image = w.Build();
  auto tok = FromGgufImage(image);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("hi hi 42<|im_end|>", true, true)),
            (Pieces{"hi", "Ġhi", "Ġ", "4", "2", "<|im_end|>"}));
  // <|im_end|> and <|endoftext|> end generation.
  EXPECT_TRUE((*tok)->IsEndOfGeneration(*(*tok)->TokenId("<|im_end|>")));
  EXPECT_TRUE((*tok)->IsEndOfGeneration(*(*tok)->TokenId("<|endoftext|>")));
  EXPECT_FALSE((*tok)->IsEndOfGeneration(*(*tok)->TokenId("<|im_start|>")));
}

TEST(TokenizerGgufTest, BertPhantomSpaceVocabulary) {
  MetaWriter w;
  w.Str("tokenizer.ggml.model", "bert");
  w.Strings("tokenizer.ggml.tokens", {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81un", "aff",
                                      "able", "\xE2\x96\x81hello", "\xE2\x96\x81!"});
  w.I32s("tokenizer.ggml.token_type", {3, 3, 3, 3, 1, 1, 1, 1, 1});
  w.U32("tokenizer.ggml.unknown_token_id", 1);
  w.U32("tokenizer.ggml.cls_token_id", 2);
  w.U32("tokenizer.ggml.seperator_token_id", 3);
  const auto image = w.Build();
  auto tok = FromGgufImage(image);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(ToPieces(**tok, (*tok)->Encode("Unaffable hello!", true, false)),
            (Pieces{"[CLS]", "un", "##aff", "##able", "hello", "!", "[SEP]"}));
}

TEST(TokenizerGgufTest, Errors) {
  {
    MetaWriter w;  // no tokenizer at all
    w.Str("general.architecture", "llama");
    EXPECT_EQ(FromGgufImage(w.Build()).status().code(), StatusCode::kNotFound);
  }
  {
    MetaWriter w;
    w.Str("tokenizer.ggml.model", "t5");
    w.Strings("tokenizer.ggml.tokens", {"a"});
    EXPECT_EQ(FromGgufImage(w.Build()).status().code(), StatusCode::kUnimplemented);
  }
  {
    MetaWriter w;  // token types of the wrong length
    w.Str("tokenizer.ggml.model", "llama");
    w.Strings("tokenizer.ggml.tokens", {"a", "b"});
    w.I32s("tokenizer.ggml.token_type", {1});
    w.F32s("tokenizer.ggml.scores", {0, 0});
    EXPECT_EQ(FromGgufImage(w.Build()).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(TokenizeJsonlTest, OneArrayPerLine) {
  auto tok = MustCreate(ByteLevelSpec({{"h", "i"}}));
  std::istringstream in("\"hi\"\n\n\"h\\u00e9\"\n");
  std::ostringstream out;
  ASSERT_TRUE(TokenizeJsonl(*tok, in, out, true, false).ok());
  const std::string hi = std::to_string(*tok->TokenId("hi"));
  EXPECT_EQ(out.str(), "[" + hi + "]\n[" + std::to_string(*tok->TokenId("h")) + "," +
                           std::to_string(*tok->TokenId("Ã")) + "," +
                           std::to_string(*tok->TokenId("©")) + "]\n");
  std::istringstream bad("\"ok\"\n{\"text\": 1}\n");
  std::ostringstream sink;
  const Status st = TokenizeJsonl(*tok, bad, sink, true, false);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("line 2"), std::string::npos);
  std::istringstream ids("[" + hi + "]\n");
  std::ostringstream text;
  ASSERT_TRUE(DecodeJsonl(*tok, ids, text, false).ok());
  EXPECT_EQ(text.str(), "\"hi\"\n");
}

TEST(LoadTokenizerTest, MissingPathIsNotFound) {
  EXPECT_EQ(LoadTokenizer("/nonexistent/tokenizer.json").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace frugal
