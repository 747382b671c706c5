// Byte-level BPE (GPT-2 family) and SentencePiece-style BPE (Llama 2 family).
//
// Both reduce a pre-token to symbols (bytes mapped to characters, or UTF-8 characters) and merge
// adjacent pairs, lowest merge rank first (ties: leftmost), using a heap with lazy invalidation,
// so a piece of n symbols costs O(n log n) rather than a rescan per merge. SentencePiece models
// from GGUF without merges use llama.cpp's score-driven variant (highest score first).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode_util.h"

namespace frugal::tokenizer_internal {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁"
constexpr size_t kMaxCachedPiece = 128;  // longer pieces rarely repeat; not worth caching

struct MergeResult {
  int32_t rank;
  int32_t id;
};

class BpeTokenizer final : public Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Make(TokenizerSpec spec) {
    std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(spec)));
    FRUGAL_RETURN_IF_ERROR(t->Init());
    return std::unique_ptr<Tokenizer>(std::move(t));
  }

  std::vector<int32_t> EncodeMarked(std::string_view text, bool add_special,
                                    std::span<const TextRange> markup) const override;
  std::string Decode(std::span<const int32_t> ids, bool skip_special) const override;
  std::string TokenToPiece(int32_t id) const override;

 private:
  using Cache = std::unordered_map<std::string_view, std::vector<int32_t>>;

  explicit BpeTokenizer(TokenizerSpec spec) : Tokenizer(std::move(spec)) {}
  Status Init();

  void EncodeSegment(std::string_view text, bool at_input_start, Cache* cache,
                     std::vector<int32_t>* out) const;
  void EncodeBytePiece(std::string_view piece, std::vector<int32_t>* out) const;
  void EncodeSpmPieceByRank(std::string_view piece, std::vector<int32_t>* out) const;
  void EncodeSpmPieceByScore(std::string_view piece, std::vector<int32_t>* out) const;
  // Merges adjacent symbols in place by rank.
  void MergeByRank(std::vector<int32_t>* symbols) const;
  std::optional<MergeResult> FindMerge(int32_t left, int32_t right) const {
    auto it = merges_.find(PairKey(left, right));
    if (it == merges_.end()) return std::nullopt;
    return it->second;
  }
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  int32_t Lookup(std::string_view s) const {
    auto it = token_to_id_.find(s);
    return it == token_to_id_.end() ? -1 : it->second;
  }

  bool byte_level_ = true;
  bool use_scores_ = false;  // SentencePiece without merges: llama.cpp's score-driven merging
  NormalForm normal_form_ = NormalForm::kNone;
  std::unique_ptr<RegexSplitter> splitter_;
  std::unique_ptr<SpecialMatcher> specials_;
  std::unordered_map<uint64_t, MergeResult> merges_;  // (left id, right id) -> rank, merged id
  std::array<int32_t, 256> byte_ids_{};  // byte-level: each byte's character; SPM: <0xNN>
  std::vector<std::string> pieces_;      // id -> bytes it decodes to
};

Status BpeTokenizer::Init() {
  byte_level_ = spec_.kind == TokenizerKind::kByteLevelBpe;
  normal_form_ = ParseNormalForm(spec_.unicode_normalization);
  if (normal_form_ == NormalForm::kNone && !spec_.unicode_normalization.empty()) {
    return Unimplemented("tokenizer: unknown unicode normalization '" +
                         spec_.unicode_normalization + "'");
  }

  // Pre-tokenizer.
  std::vector<std::string> patterns = spec_.pre_regexes;
  if (patterns.empty() && byte_level_) {
    FRUGAL_ASSIGN_OR_RETURN(PreTokenizerPreset preset, PresetForName(spec_.pre_name));
    patterns = std::move(preset.patterns);
  }
  if (!patterns.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(splitter_, RegexSplitter::Create(patterns));
  }

  // Byte symbols.
  const auto& byte_chars = ByteToUnicode();
  for (int b = 0; b < 256; ++b) {
    if (byte_level_) {
      byte_ids_[b] = Lookup(byte_chars[b]);
    } else {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_ids_[b] = Lookup(name);
    }
  }

  // Merges. The first occurrence of a pair keeps its rank (llama.cpp); merges whose parts or
  // result are not in the vocabulary can never apply and are skipped.
  if (!spec_.merges.empty()) {
    merges_.reserve(spec_.merges.size());
    std::string joined;
    for (size_t r = 0; r < spec_.merges.size(); ++r) {
      const auto& [a, b] = spec_.merges[r];
      const int32_t ia = Lookup(a), ib = Lookup(b);
      joined.assign(a).append(b);
      const int32_t ij = Lookup(joined);
      if (ia < 0 || ib < 0 || ij < 0) continue;
      merges_.emplace(PairKey(ia, ib), MergeResult{static_cast<int32_t>(r), ij});
    }
  } else if (!byte_level_ && !spec_.scores.empty()) {
    use_scores_ = true;
  }
  // No merges and no scores: every symbol stays as it is (a character- or byte-level vocabulary).

  specials_ = std::make_unique<SpecialMatcher>(
      spec_, [this](std::string_view s) -> std::optional<int32_t> { return TokenId(s); });

  // Decoded bytes of every token, so Decode and TokenToPiece are lookups.
  pieces_.resize(spec_.tokens.size());
  std::unordered_map<int32_t, int> byte_token_value;
  if (!byte_level_) {
    for (int b = 0; b < 256; ++b) {
      if (byte_ids_[b] >= 0) byte_token_value[byte_ids_[b]] = b;
    }
  }
  for (size_t id = 0; id < spec_.tokens.size(); ++id) {
    const std::string& text = spec_.tokens[id];
    const int32_t type = spec_.token_types[id];
    std::string& piece = pieces_[id];
    if (type == kTypeControl || (byte_level_ && type == kTypeUserDefined)) {
      piece = text;  // special tokens read as written
      continue;
    }
    if (byte_level_) {
      bool ok = true;
      for (size_t i = 0; i < text.size() && ok;) {
        Utf8Char c = DecodeUtf8(text, i);
        const int b = c.status == Utf8Status::kComplete ? UnicodeToByte(c.cp) : -1;
        if (b < 0) {
          ok = false;
        } else {
          piece.push_back(static_cast<char>(b));
          i += c.len;
        }
      }
      if (!ok) piece = text;  // not a byte-level string (HF's ByteLevel decoder keeps it as is)
    } else {
      auto bt = byte_token_value.find(static_cast<int32_t>(id));
      if (bt != byte_token_value.end()) {
        piece.assign(1, static_cast<char>(bt->second));
        continue;
      }
      for (size_t pos = 0;;) {
        size_t hit = text.find(kSpaceMarker, pos);
        piece.append(text, pos, hit == std::string::npos ? std::string::npos : hit - pos);
        if (hit == std::string::npos) break;
        piece.push_back(' ');
        pos = hit + kSpaceMarker.size();
      }
    }
  }
  return Status::Ok();
}

std::vector<int32_t> BpeTokenizer::EncodeMarked(std::string_view text, bool add_special,
                                                std::span<const TextRange> markup) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && spec_.add_bos && spec_.bos_id >= 0) out.push_back(spec_.bos_id);
  std::vector<Segment> segments;
  specials_->Split(text, markup, &segments);
  Cache cache;
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
    } else {
      EncodeSegment(seg.text, seg.offset == 0, &cache, &out);
    }
  }
  if (add_special && spec_.add_eos && spec_.eos_id >= 0) out.push_back(spec_.eos_id);
  return out;
}

void BpeTokenizer::EncodeSegment(std::string_view text, bool at_input_start, Cache* cache,
                                 std::vector<int32_t>* out) const {
  // `work` holds the transformed text; cache keys point into it, so it must not be modified
  // while the cache is in use for it. The cache is cleared per segment for that reason.
  std::string work;
  if (normal_form_ != NormalForm::kNone) {
    work = Normalize(text, normal_form_);
  } else {
    work.assign(text);
  }
  if (byte_level_) {
    if (spec_.byte_level_prefix_space && !work.empty() && work[0] != ' ') work.insert(0, 1, ' ');
  } else {
    if (spec_.add_space_prefix && !work.empty()) {
      const bool starts_with_space = work[0] == ' ' || work.starts_with(kSpaceMarker);
      bool prefix = false;
      switch (spec_.space_prefix_mode) {
        case TokenizerSpec::SpacePrefix::kEverySegment:
          prefix = true;
          break;
        case TokenizerSpec::SpacePrefix::kAlwaysUnlessSpace:
          prefix = !starts_with_space;
          break;
        case TokenizerSpec::SpacePrefix::kFirstUnlessSpace:
          prefix = at_input_start && !starts_with_space;
          break;
      }
      if (prefix) work.insert(0, 1, ' ');
    }
    std::string escaped;
    escaped.reserve(work.size() + work.size() / 4);
    for (char c : work) {
      if (c == ' ') {
        escaped.append(kSpaceMarker);
      } else {
        escaped.push_back(c);
      }
    }
    work.swap(escaped);
  }

  std::vector<std::string_view> pieces;
  if (splitter_) {
    splitter_->Split(work, &pieces);
  } else if (!work.empty()) {
    pieces.push_back(work);
  }
  cache->clear();
  std::vector<int32_t> ids;
  for (std::string_view piece : pieces) {
    const bool cacheable = piece.size() <= kMaxCachedPiece;
    if (cacheable) {
      auto it = cache->find(piece);
      if (it != cache->end()) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        continue;
      }
    }
    ids.clear();
    if (byte_level_) {
      EncodeBytePiece(piece, &ids);
    } else if (use_scores_) {
      EncodeSpmPieceByScore(piece, &ids);
    } else {
      EncodeSpmPieceByRank(piece, &ids);
    }
    out->insert(out->end(), ids.begin(), ids.end());
    if (cacheable) cache->emplace(piece, ids);
  }
  cache->clear();
}

void BpeTokenizer::EncodeBytePiece(std::string_view piece, std::vector<int32_t>* out) const {
  const auto& byte_chars = ByteToUnicode();
  if (spec_.ignore_merges) {
    std::string mapped;
    mapped.reserve(piece.size() * 2);
    for (char c : piece) mapped.append(byte_chars[static_cast<uint8_t>(c)]);
    const int32_t id = Lookup(mapped);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (char c : piece) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) {
      symbols.push_back(id);
    } else if (spec_.unk_id >= 0) {
      symbols.push_back(spec_.unk_id);  // a vocabulary without this byte: nothing better to say
    }
  }
  MergeByRank(&symbols);
  out->insert(out->end(), symbols.begin(), symbols.end());
}

void BpeTokenizer::EncodeSpmPieceByRank(std::string_view piece, std::vector<int32_t>* out) const {
  if (spec_.ignore_merges) {
    const int32_t id = Lookup(piece);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  bool last_was_unk = false;
  for (size_t i = 0; i < piece.size();) {
    const size_t len = Utf8CharLen(piece, i);
    const std::string_view ch = piece.substr(i, len);
    i += len;
    const int32_t id = Lookup(ch);
    if (id >= 0) {
      symbols.push_back(id);
      last_was_unk = false;
      continue;
    }
    if (spec_.byte_fallback) {
      bool all = true;
      for (char c : ch) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : ch) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        last_was_unk = false;
        continue;
      }
    }
    // Consecutive unknown characters fuse into one unk (fuse_unk, as Llama 2 sets it).
    if (spec_.unk_id >= 0 && !last_was_unk) symbols.push_back(spec_.unk_id);
    last_was_unk = true;
  }
  MergeByRank(&symbols);
  out->insert(out->end(), symbols.begin(), symbols.end());
}

void BpeTokenizer::MergeByRank(std::vector<int32_t>* symbols) const {
  const int32_t n = static_cast<int32_t>(symbols->size());
  if (n < 2 || merges_.empty()) return;
  struct Sym {
    int32_t id;
    int32_t prev;
    int32_t next;
    int32_t len;  // initial symbols covered; 0 once merged away
  };
  struct Cand {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t len;  // combined length when queued: detects stale entries
    int32_t id;
  };
  auto worse = [](const Cand& a, const Cand& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  std::vector<Sym> syms(n);
  for (int32_t i = 0; i < n; ++i) syms[i] = {(*symbols)[i], i - 1, i + 1 < n ? i + 1 : -1, 1};
  std::vector<Cand> heap_storage;
  heap_storage.reserve(n);
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> heap(worse,
                                                                     std::move(heap_storage));
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    if (auto m = FindMerge(syms[left].id, syms[right].id)) {
      heap.push({m->rank, left, right, syms[left].len + syms[right].len, m->id});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_add(i, i + 1);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = syms[c.left];
    Sym& r = syms[c.right];
    // Lengths only grow, so an unchanged sum means neither side was merged since queuing.
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.id = c.id;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }
  symbols->clear();
  for (int32_t i = 0; i >= 0; i = syms[i].next) symbols->push_back(syms[i].id);
}

// llama.cpp's SentencePiece algorithm: repeatedly merge the adjacent pair whose concatenation
// is the highest-scoring token (ties: leftmost); characters left without a token become
// <0xNN> byte tokens.
void BpeTokenizer::EncodeSpmPieceByScore(std::string_view piece, std::vector<int32_t>* out) const {
  struct Sym {
    int32_t prev;
    int32_t next;
    size_t offset;
    size_t len;  // 0 once merged away
  };
  struct Cand {
    float score;
    int32_t left;
    int32_t right;
    size_t len;
  };
  auto worse = [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  std::vector<Sym> syms;
  for (size_t i = 0; i < piece.size();) {
    const size_t len = Utf8CharLen(piece, i);
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({idx - 1, -1, i, len});
    if (idx > 0) syms[idx - 1].next = idx;
    i += len;
  }
  if (syms.empty()) return;
  std::priority_queue<Cand, std::vector<Cand>, decltype(worse)> heap(worse);
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t len = syms[left].len + syms[right].len;
    const int32_t id = Lookup(piece.substr(syms[left].offset, len));
    // Control tokens (<s>, </s>) must not arise from user text.
    if (id < 0 || spec_.token_types[id] == kTypeControl) return;
    heap.push({spec_.scores[id], left, right, len});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) try_add(i, i + 1);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = syms[c.left];
    Sym& r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) {
    const std::string_view text = piece.substr(syms[i].offset, syms[i].len);
    const int32_t id = Lookup(text);
    if (id >= 0 && spec_.token_types[id] != kTypeControl) {
      out->push_back(id);
      continue;
    }
    for (char c : text) {
      const int32_t b = byte_ids_[static_cast<uint8_t>(c)];
      if (b >= 0) {
        out->push_back(b);
      } else if (spec_.unk_id >= 0) {
        out->push_back(spec_.unk_id);
      }
    }
  }
}

std::string BpeTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special && IsSkippedSpecial(spec_.token_types[id])) continue;
    out.append(pieces_[id]);
  }
  // The space the encoder put in front of the text is not part of it (HF's Strip / Metaspace
  // decoders do the same).
  if (!byte_level_ && spec_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return ToValidUtf8(out);
}

std::string BpeTokenizer::TokenToPiece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return pieces_[id];
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> CreateBpeTokenizer(TokenizerSpec spec) {
  return BpeTokenizer::Make(std::move(spec));
}

}  // namespace frugal::tokenizer_internal
