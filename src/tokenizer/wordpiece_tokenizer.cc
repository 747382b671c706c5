// WordPiece (BERT): BertNormalizer, BertPreTokenizer, greedy longest-match-first with a
// continuation prefix, [CLS] ... [SEP] around the text. Mirrors Hugging Face tokenizers.
#include <algorithm>

#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode_util.h"

namespace frugal::tokenizer_internal {
namespace {

bool IsChineseChar(uint32_t cp) {
  // The ranges of HF's BertNormalizer, including its 0x2B920 (BERT's Python has 0x2B820).
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool IsBertPunctuation(uint32_t cp) {
  const bool ascii_punct = (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
                           (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  return ascii_punct || IsPunctuation(cp);
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = s->find(from, pos)) != std::string::npos; pos += to.size()) {
    s->replace(pos, from.size(), to);
  }
}

class WordPieceTokenizer final : public Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Make(TokenizerSpec spec) {
    std::unique_ptr<WordPieceTokenizer> t(new WordPieceTokenizer(std::move(spec)));
    if (t->spec_.unk_id < 0) return InvalidArgument("tokenizer: WordPiece needs an unknown token");
    t->specials_ = std::make_unique<SpecialMatcher>(
        t->spec_, [p = t.get()](std::string_view s) { return p->TokenId(s); });
    return std::unique_ptr<Tokenizer>(std::move(t));
  }

  std::vector<int32_t> EncodeMarked(std::string_view text, bool add_special,
                                    std::span<const TextRange> markup) const override {
    std::vector<int32_t> out;
    if (add_special && spec_.cls_id >= 0) out.push_back(spec_.cls_id);
    std::vector<Segment> segments;
    specials_->Split(text, markup, &segments);
    for (const Segment& seg : segments) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
        continue;
      }
      const std::string normalized = NormalizeText(seg.text);
      ForEachWord(normalized, [&](std::string_view word) { EncodeWord(word, &out); });
    }
    if (add_special && spec_.sep_id >= 0) out.push_back(spec_.sep_id);
    return out;
  }

  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override {
    // HF's WordPiece decoder, token by token: continuation pieces join, others get a space,
    // and cleanup removes the space before punctuation.
    std::string out;
    std::string token;
    bool first = true;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (skip_special && IsSkippedSpecial(spec_.token_types[id])) continue;
      const std::string& text = spec_.tokens[id];
      token.clear();
      if (!first && text.starts_with(spec_.continuing_prefix)) {
        token.append(text, spec_.continuing_prefix.size());
      } else {
        if (!first) token.push_back(' ');
        token.append(text);
      }
      first = false;
      if (spec_.decode_cleanup) Cleanup(&token);
      out.append(token);
    }
    return ToValidUtf8(out);
  }

  std::string TokenToPiece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    const std::string& text = spec_.tokens[id];
    if (text.starts_with(spec_.continuing_prefix))
      return text.substr(spec_.continuing_prefix.size());
    return text;
  }

 private:
  explicit WordPieceTokenizer(TokenizerSpec spec) : Tokenizer(std::move(spec)) {}

  static void Cleanup(std::string* s) {
    static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (const auto& [from, to] : kRules) ReplaceAll(s, from, to);
  }

  // BertNormalizer: clean text, space out CJK ideographs, strip accents, lowercase.
  std::string NormalizeText(std::string_view raw) const {
    const std::string text = ToValidUtf8(raw);
    std::string s;
    s.reserve(text.size() + 8);
    for (size_t i = 0; i < text.size();) {
      Utf8Char c = DecodeUtf8(text, i);
      i += c.len;
      const uint32_t cp = c.cp;
      const bool tab_or_newline = cp == '\t' || cp == '\n' || cp == '\r';
      if (cp == 0 || cp == 0xFFFD || (!tab_or_newline && IsOtherControl(cp))) continue;
      if (IsWhitespace(cp)) {
        s.push_back(' ');
      } else if (spec_.handle_chinese_chars && IsChineseChar(cp)) {
        s.push_back(' ');
        AppendUtf8(cp, &s);
        s.push_back(' ');
      } else {
        AppendUtf8(cp, &s);
      }
    }
    if (spec_.strip_accents) {
      const std::string nfd = Normalize(s, NormalForm::kNfd);
      s.clear();
      for (size_t i = 0; i < nfd.size();) {
        Utf8Char c = DecodeUtf8(nfd, i);
        if (!IsNonspacingMark(c.cp)) s.append(nfd, i, c.len);
        i += c.len;
      }
    }
    if (spec_.lowercase) {
      std::string lower;
      lower.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        Utf8Char c = DecodeUtf8(s, i);
        AppendLower(c.cp, &lower);
        i += c.len;
      }
      s.swap(lower);
    }
    return s;
  }

  // BertPreTokenizer: whitespace separates words and is dropped; punctuation is its own word.
  template <typename Fn>
  static void ForEachWord(std::string_view s, Fn&& fn) {
    size_t word_start = 0;
    for (size_t i = 0; i < s.size();) {
      Utf8Char c = DecodeUtf8(s, i);
      const size_t len = c.status == Utf8Status::kComplete ? c.len : 1;
      const bool space = IsWhitespace(c.cp);
      if (space || IsBertPunctuation(c.cp)) {
        if (i > word_start) fn(s.substr(word_start, i - word_start));
        if (!space) fn(s.substr(i, len));
        word_start = i + len;
      }
      i += len;
    }
    if (word_start < s.size()) fn(s.substr(word_start));
  }

  void EncodeWord(std::string_view word, std::vector<int32_t>* out) const {
    size_t chars = 0;
    for (size_t i = 0; i < word.size(); i += Utf8CharLen(word, i)) ++chars;
    if (chars > static_cast<size_t>(std::max(spec_.max_input_chars_per_word, 0))) {
      out->push_back(spec_.unk_id);
      return;
    }
    const size_t mark = out->size();
    std::string candidate;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      int32_t found = -1;
      while (end > start) {
        candidate.clear();
        if (start > 0) candidate.append(spec_.continuing_prefix);
        candidate.append(word.substr(start, end - start));
        auto it = token_to_id_.find(candidate);
        if (it != token_to_id_.end()) {
          found = it->second;
          break;
        }
        do {  // back off by one character
          --end;
        } while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
      }
      if (found < 0) {  // some part has no piece: the whole word is unknown
        out->resize(mark);
        out->push_back(spec_.unk_id);
        return;
      }
      out->push_back(found);
      start = end;
    }
  }

  std::unique_ptr<SpecialMatcher> specials_;
};

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> CreateWordPieceTokenizer(TokenizerSpec spec) {
  return WordPieceTokenizer::Make(std::move(spec));
}

}  // namespace frugal::tokenizer_internal
