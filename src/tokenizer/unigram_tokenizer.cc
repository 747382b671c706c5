// SentencePiece Unigram (XLM-R, bge-m3, multilingual-e5, paraphrase-multilingual-MiniLM, T5) as
// Hugging Face's tokenizers runs it from a tokenizer.json:
//
//  1. Added tokens are cut out first (SpecialMatcher).
//  2. Normalizers, in order: the Precompiled charsmap (SentencePiece's own normalisation rules,
//     e.g. nmt_nfkc, compiled into a double-array trie) or a Unicode normal form; Strip; runs
//     of two or more spaces collapsed (Replace(" {2,}", ...)).
//  3. Pre-tokenizer: optionally WhitespaceSplit, then Metaspace: spaces become "▁", a "▁" is
//     prepended (scheme always / first) and the text is cut before every "▁".
//  4. The model: the Viterbi path of highest total log-probability over the vocabulary's pieces.
//     A character no piece covers is an unknown node scored (lowest score - 10); adjacent
//     unknowns fuse into one <unk> (or, with byte_fallback, become <0xNN> tokens).
//  5. The post-processor's template (<s> ... </s>).
//
// Every choice copies HF's (tokenizers/src/models/unigram, spm_precompiled) so the ids are
// equal, including its quirks: a grapheme cluster shorter than 6 bytes is replaced as a whole by
// the charsmap's first (shortest) prefix match.
#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode_util.h"

namespace frugal::tokenizer_internal {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁"
constexpr double kUnknownPenalty = 10.0;                   // HF's K_UNK_PENALTY

class UnigramTokenizer final : public Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Make(TokenizerSpec spec) {
    std::unique_ptr<UnigramTokenizer> t(new UnigramTokenizer(std::move(spec)));
    FRUGAL_RETURN_IF_ERROR(t->Init());
    return std::unique_ptr<Tokenizer>(std::move(t));
  }

  std::vector<int32_t> EncodeMarked(std::string_view text, bool add_special,
                                    std::span<const TextRange> markup) const override {
    std::vector<int32_t> out;
    if (add_special && spec_.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
    std::vector<Segment> segments;
    specials_->Split(text, markup, &segments);
    for (const Segment& seg : segments) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
      } else {
        EncodeSegment(seg.text, seg.offset == 0, &out);
      }
    }
    if (add_special && spec_.add_eos && spec_.eos_id >= 0) out.push_back(spec_.eos_id);
    return out;
  }

  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (skip_special && IsSkippedSpecial(spec_.token_types[id])) continue;
      out.append(pieces_[id]);
    }
    // HF's Metaspace decoder drops the space the encoder put in front.
    if (spec_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return ToValidUtf8(out);
  }

  std::string TokenToPiece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return pieces_[id];
  }

 private:
  explicit UnigramTokenizer(TokenizerSpec spec) : Tokenizer(std::move(spec)) {}

  Status Init() {
    if (spec_.piece_scores.size() != spec_.tokens.size()) {
      return InvalidArgument("tokenizer: a Unigram model needs one score per token");
    }
    if (spec_.unk_id < 0)
      return InvalidArgument("tokenizer: a Unigram model needs an unknown token");
    normal_form_ = ParseNormalForm(spec_.unicode_normalization);
    if (normal_form_ == NormalForm::kNone && !spec_.unicode_normalization.empty()) {
      return Unimplemented("tokenizer: unknown unicode normalization '" +
                           spec_.unicode_normalization + "'");
    }
    if (!spec_.precompiled_charsmap.empty())
      FRUGAL_RETURN_IF_ERROR(ParseCharsmap(spec_.precompiled_charsmap));
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t id = 0; id < spec_.tokens.size(); ++id) {
      min_score = std::min(min_score, spec_.piece_scores[id]);
      // Pieces are matched at character boundaries; the longest bounds the search.
      max_piece_bytes_ = std::max(max_piece_bytes_, spec_.tokens[id].size());
    }
    unk_score_ = min_score - kUnknownPenalty;
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_ids_[static_cast<size_t>(b)] = Lookup(name);
    }
    specials_ = std::make_unique<SpecialMatcher>(
        spec_, [this](std::string_view s) -> std::optional<int32_t> { return TokenId(s); });
    pieces_.resize(spec_.tokens.size());
    for (size_t id = 0; id < spec_.tokens.size(); ++id) {
      const std::string& text = spec_.tokens[id];
      std::string& piece = pieces_[id];
      const int b = ByteTokenValue(text);
      if (spec_.byte_fallback && b >= 0) {
        piece.assign(1, static_cast<char>(b));
        continue;
      }
      if (spec_.token_types[id] == kTypeControl) {
        piece = text;
        continue;
      }
      for (size_t pos = 0;;) {
        const size_t hit = text.find(kSpaceMarker, pos);
        piece.append(text, pos, hit == std::string::npos ? std::string::npos : hit - pos);
        if (hit == std::string::npos) break;
        piece.push_back(' ');
        pos = hit + kSpaceMarker.size();
      }
    }
    return Status::Ok();
  }

  static int ByteTokenValue(std::string_view t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return -1;
    int v = 0;
    for (char c : t.substr(3, 2)) {
      v *= 16;
      if (c >= '0' && c <= '9') {
        v += c - '0';
      } else if (c >= 'A' && c <= 'F') {
        v += c - 'A' + 10;
      } else {
        return -1;
      }
    }
    return v;
  }

  int32_t Lookup(std::string_view s) const {
    auto it = token_to_id_.find(s);
    return it == token_to_id_.end() ? -1 : it->second;
  }

  // --- The Precompiled charsmap: [u32 trie bytes][darts-clone double array][normalized strings].

  Status ParseCharsmap(std::string_view blob) {
    if (blob.size() < 4) return InvalidArgument("tokenizer: precompiled_charsmap is truncated");
    uint32_t trie_bytes = 0;
    for (int i = 3; i >= 0; --i)
      trie_bytes = (trie_bytes << 8) | static_cast<uint8_t>(blob[static_cast<size_t>(i)]);
    if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) {
      return InvalidArgument("tokenizer: precompiled_charsmap has a bad trie size");
    }
    units_.resize(trie_bytes / 4);
    for (size_t i = 0; i < units_.size(); ++i) {
      uint32_t u = 0;
      for (int k = 3; k >= 0; --k)
        u = (u << 8) | static_cast<uint8_t>(blob[4 + i * 4 + static_cast<size_t>(k)]);
      units_[i] = u;
    }
    normalized_.assign(blob.substr(4 + trie_bytes));
    return Status::Ok();
  }

  // The replacement for the shortest key that prefixes `chunk`, as spm_precompiled's
  // transform (results[0] of the common-prefix search) gives it; nullopt when none.
  std::optional<std::string_view> Transform(std::string_view chunk) const {
    if (units_.empty()) return std::nullopt;
    auto offset = [](uint32_t u) -> size_t { return (u >> 10) << ((u & (1u << 9)) >> 6); };
    auto label = [](uint32_t u) { return u & ((1u << 31) | 0xFFu); };
    size_t node = offset(units_[0]);
    for (char ch : chunk) {
      const auto c = static_cast<uint8_t>(ch);
      if (c == 0) break;
      node ^= c;
      if (node >= units_.size()) return std::nullopt;
      const uint32_t unit = units_[node];
      if (label(unit) != c) return std::nullopt;
      node ^= offset(unit);
      if ((unit >> 8) & 1u) {  // has a leaf: a key ends here
        if (node >= units_.size()) return std::nullopt;
        const size_t at = units_[node] & ((1u << 31) - 1);
        if (at >= normalized_.size()) return std::nullopt;
        const size_t end = normalized_.find('\0', at);
        return std::string_view(normalized_)
            .substr(at, end == std::string::npos ? std::string::npos : end - at);
      }
    }
    return std::nullopt;
  }

  // HF's Precompiled normalizer: per extended grapheme cluster, the cluster's replacement when
  // it is under 6 bytes and has one, else each character's replacement or the character.
  // Invalid bytes pass through unchanged.
  std::string ApplyCharsmap(std::string_view s) const {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
      const Utf8Char first = DecodeUtf8(s, pos);
      if (first.status != Utf8Status::kComplete) {
        out.append(s.substr(pos, first.len));
        pos += first.len;
        continue;
      }
      // The cluster: characters up to the next grapheme break.
      size_t end = pos + first.len;
      utf8proc_int32_t state = 0;
      auto prev = static_cast<utf8proc_int32_t>(first.cp);
      while (end < s.size()) {
        const Utf8Char c = DecodeUtf8(s, end);
        if (c.status != Utf8Status::kComplete) break;
        if (utf8proc_grapheme_break_stateful(prev, static_cast<utf8proc_int32_t>(c.cp), &state))
          break;
        prev = static_cast<utf8proc_int32_t>(c.cp);
        end += c.len;
      }
      const std::string_view cluster = s.substr(pos, end - pos);
      if (cluster.size() < 6) {
        if (auto norm = Transform(cluster)) {
          out.append(*norm);
          pos = end;
          continue;
        }
      }
      for (size_t i = 0; i < cluster.size();) {
        const size_t len = Utf8CharLen(cluster, i);
        const std::string_view ch = cluster.substr(i, len);
        if (auto norm = Transform(ch)) {
          out.append(*norm);
        } else {
          out.append(ch);
        }
        i += len;
      }
      pos = end;
    }
    return out;
  }

  // --- Normalizers and pre-tokenizer.

  // The code point map: each character's replacement or the character; invalid bytes pass.
  std::string ApplyCodepointMap(std::string_view s) const {
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
      const Utf8Char c = DecodeUtf8(s, pos);
      if (c.status == Utf8Status::kComplete) {
        if (auto it = spec_.codepoint_map.find(c.cp); it != spec_.codepoint_map.end()) {
          out.append(it->second);
          pos += c.len;
          continue;
        }
      }
      out.append(s.substr(pos, c.len));
      pos += c.len;
    }
    return out;
  }

  std::string NormalizeSegment(std::string_view text) const {
    std::string s = !units_.empty()                ? ApplyCharsmap(text)
                    : !spec_.codepoint_map.empty() ? ApplyCodepointMap(text)
                                                   : std::string(text);
    if (normal_form_ != NormalForm::kNone) s = Normalize(s, normal_form_);
    if (spec_.strip_left || spec_.strip_right) {
      size_t b = 0, e = s.size();
      if (spec_.strip_left) {
        while (b < e) {
          const Utf8Char c = DecodeUtf8(s, b);
          if (c.status != Utf8Status::kComplete || !IsWhitespace(c.cp)) break;
          b += c.len;
        }
      }
      if (spec_.strip_right) {
        while (e > b) {
          size_t start = e - 1;
          while (start > b && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
          const Utf8Char c = DecodeUtf8(s, start);
          if (c.status != Utf8Status::kComplete || start + c.len != e || !IsWhitespace(c.cp)) break;
          e = start;
        }
      }
      s = s.substr(b, e - b);
    }
    if (spec_.collapse_spaces) {  // Replace(Regex(" {2,}"), content)
      std::string c;
      c.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (s[i] != ' ') {
          c.push_back(s[i++]);
          continue;
        }
        size_t j = i;
        while (j < s.size() && s[j] == ' ') ++j;
        if (j - i >= 2) {
          c.append(spec_.collapse_spaces_to);
        } else {
          c.push_back(' ');
        }
        i = j;
      }
      s.swap(c);
    }
    return s;
  }

  // Metaspace on one pre-token: spaces -> "▁", the prefix, and the cut before each "▁".
  void EncodeWord(std::string_view word, bool first, std::vector<int32_t>* out) const {
    std::string w;
    w.reserve(word.size() + 8);
    if (spec_.add_space_prefix) {
      const bool starts = word.starts_with(' ') || word.starts_with(kSpaceMarker);
      const bool prefix = spec_.space_prefix_mode == TokenizerSpec::SpacePrefix::kFirstUnlessSpace
                              ? first && !starts
                              : !starts;
      if (prefix) w.append(kSpaceMarker);
    }
    for (char c : word) {
      if (c == ' ') {
        w.append(kSpaceMarker);
      } else {
        w.push_back(c);
      }
    }
    if (!spec_.metaspace_split) {
      Viterbi(w, out);
      return;
    }
    // Cut before every "▁" (MergedWithNext): the marker starts the next pre-token.
    const std::string_view v = w;
    size_t start = 0;
    for (size_t pos = 1; pos < v.size(); ++pos) {
      if (v.substr(pos).starts_with(kSpaceMarker)) {
        Viterbi(v.substr(start, pos - start), out);
        start = pos;
        pos += kSpaceMarker.size() - 1;
      }
    }
    if (start < v.size()) Viterbi(v.substr(start), out);
  }

  void EncodeSegment(std::string_view text, bool at_input_start, std::vector<int32_t>* out) const {
    const std::string s = NormalizeSegment(text);
    if (!spec_.whitespace_split) {
      if (!s.empty()) EncodeWord(s, at_input_start, out);
      return;
    }
    // WhitespaceSplit: the words between Unicode whitespace, each its own pre-token.
    bool first = at_input_start;
    size_t i = 0;
    while (i < s.size()) {
      size_t b = i;
      while (b < s.size()) {
        const Utf8Char c = DecodeUtf8(s, b);
        if (c.status != Utf8Status::kComplete || !IsWhitespace(c.cp)) break;
        b += c.len;
      }
      size_t e = b;
      while (e < s.size()) {
        const Utf8Char c = DecodeUtf8(s, e);
        if (c.status == Utf8Status::kComplete && IsWhitespace(c.cp)) break;
        e += c.status == Utf8Status::kComplete ? c.len : 1;
      }
      if (e > b) EncodeWord(std::string_view(s).substr(b, e - b), first, out);
      first = false;
      i = e;
    }
  }

  // --- The model.

  void Viterbi(std::string_view piece, std::vector<int32_t>* out) const {
    const size_t n = piece.size();
    struct Node {
      double score = 0;
      size_t start = 0;
      int32_t id = -1;
      bool set = false;
    };
    std::vector<Node> best(n + 1);
    best[0].set = true;
    for (size_t pos = 0; pos < n;) {
      const size_t char_len = Utf8CharLen(piece, pos);
      const double here = best[pos].score;
      bool has_single = false;
      // Every piece starting here, shortest first (the order HF's trie yields them).
      for (size_t len = char_len; pos + len <= n && len <= max_piece_bytes_;) {
        const int32_t id = Lookup(piece.substr(pos, len));
        if (id >= 0) {
          const double cand = here + spec_.piece_scores[static_cast<size_t>(id)];
          Node& t = best[pos + len];
          if (!t.set || cand > t.score) t = {cand, pos, id, true};
          if (len == char_len) has_single = true;
        }
        if (pos + len >= n) break;
        len += Utf8CharLen(piece, pos + len);
      }
      if (!has_single) {
        const double cand = here + unk_score_;
        Node& t = best[pos + char_len];
        if (!t.set || cand > t.score) t = {cand, pos, spec_.unk_id, true};
      }
      pos += char_len;
    }
    // Back from the end; adjacent unknowns fuse into one.
    std::vector<std::pair<size_t, size_t>> spans;  // [start, end) in order
    std::vector<bool> unknown;
    for (size_t end = n; end > 0;) {
      const Node& node = best[end];
      const bool unk = node.id == spec_.unk_id;
      if (unk && !unknown.empty() && unknown.back()) {
        spans.back().first = node.start;
      } else {
        spans.emplace_back(node.start, end);
        unknown.push_back(unk);
      }
      end = node.start;
    }
    for (size_t k = spans.size(); k-- > 0;) {
      const std::string_view s = piece.substr(spans[k].first, spans[k].second - spans[k].first);
      const int32_t id = Lookup(s);
      if (id >= 0) {
        out->push_back(id);
        continue;
      }
      if (spec_.byte_fallback) {
        bool all = true;
        for (char c : s) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
        if (all) {
          for (char c : s) out->push_back(byte_ids_[static_cast<uint8_t>(c)]);
          continue;
        }
      }
      out->push_back(spec_.unk_id);
    }
  }

  NormalForm normal_form_ = NormalForm::kNone;
  std::vector<uint32_t> units_;  // the charsmap's double array
  std::string normalized_;       // its replacement strings, NUL-separated
  double unk_score_ = 0;
  size_t max_piece_bytes_ = 0;
  std::array<int32_t, 256> byte_ids_{};
  std::unique_ptr<SpecialMatcher> specials_;
  std::vector<std::string> pieces_;  // id -> text it decodes to
};

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> CreateUnigramTokenizer(TokenizerSpec spec) {
  return UnigramTokenizer::Make(std::move(spec));
}

}  // namespace frugal::tokenizer_internal
