#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode_util.h"

namespace frugal {

using tokenizer_internal::kTypeControl;
using tokenizer_internal::kTypeNormal;
using tokenizer_internal::kTypeUserDefined;

Tokenizer::Tokenizer(TokenizerSpec spec) : spec_(std::move(spec)) {
  token_to_id_.reserve(spec_.tokens.size());
  for (size_t i = 0; i < spec_.tokens.size(); ++i) {
    if (spec_.tokens[i].empty()) continue;  // holes in a sparse vocabulary
    token_to_id_[spec_.tokens[i]] = static_cast<int32_t>(i);
  }
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  if (id < 0) return false;
  return id == spec_.eos_id ||
         std::find(spec_.eog_ids.begin(), spec_.eog_ids.end(), id) != spec_.eog_ids.end();
}

bool Tokenizer::IsSpecial(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= spec_.token_types.size()) return false;
  const int32_t type = spec_.token_types[id];
  return type == kTypeControl || type == kTypeUserDefined;
}

std::optional<int32_t> Tokenizer::TokenId(std::string_view token) const {
  auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerSpec spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return InvalidArgument("tokenizer: empty vocabulary");
  if (n > static_cast<size_t>(INT32_MAX)) return InvalidArgument("tokenizer: vocabulary too large");
  if (!spec.scores.empty() && spec.scores.size() != n) {
    return InvalidArgument("tokenizer: " + std::to_string(spec.scores.size()) + " scores for " +
                           std::to_string(n) + " tokens");
  }
  if (!spec.token_types.empty() && spec.token_types.size() != n) {
    return InvalidArgument("tokenizer: " + std::to_string(spec.token_types.size()) +
                           " token types for " + std::to_string(n) + " tokens");
  }
  for (auto [name, id] : {std::pair<const char*, int32_t>{"bos", spec.bos_id},
                          {"eos", spec.eos_id},
                          {"unk", spec.unk_id},
                          {"pad", spec.pad_id},
                          {"cls", spec.cls_id},
                          {"sep", spec.sep_id}}) {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return InvalidArgument(std::string("tokenizer: ") + name + " id " + std::to_string(id) +
                             " outside the vocabulary of " + std::to_string(n));
    }
  }
  for (int32_t id : spec.eog_ids) {
    if (id < 0 || id >= static_cast<int32_t>(n)) {
      return InvalidArgument("tokenizer: end-of-generation id " + std::to_string(id) +
                             " outside the vocabulary");
    }
  }
  // Without types every token is normal, except those listed as special: they are control
  // tokens (matched only with parse_special, dropped by skip_special).
  if (spec.token_types.empty()) {
    spec.token_types.assign(n, kTypeNormal);
    std::unordered_map<std::string_view, int32_t> index;
    for (size_t i = 0; i < n; ++i) index[spec.tokens[i]] = static_cast<int32_t>(i);
    for (const std::string& s : spec.special_tokens) {
      auto it = index.find(s);
      if (it != index.end()) spec.token_types[it->second] = kTypeControl;
    }
  }
  switch (spec.kind) {
    case TokenizerKind::kByteLevelBpe:
    case TokenizerKind::kSentencePieceBpe:
      return tokenizer_internal::CreateBpeTokenizer(std::move(spec));
    case TokenizerKind::kWordPiece:
      return tokenizer_internal::CreateWordPieceTokenizer(std::move(spec));
    case TokenizerKind::kSentencePieceUnigram:
      return tokenizer_internal::CreateUnigramTokenizer(std::move(spec));
  }
  return Unimplemented("tokenizer: unknown kind");
}

namespace tokenizer_internal {

SpecialMatcher::SpecialMatcher(
    const TokenizerSpec& spec,
    const std::function<std::optional<int32_t>(std::string_view)>& lookup) {
  for (const std::string& text : spec.special_tokens) {
    if (text.empty()) continue;
    std::optional<int32_t> id = lookup(text);
    if (!id) continue;  // listed but not in the vocabulary: nothing to produce
    const bool always = static_cast<size_t>(*id) < spec.token_types.size() &&
                        spec.token_types[*id] == kTypeUserDefined;
    auto& bucket = by_first_byte_[static_cast<uint8_t>(text[0])];
    bool duplicate = false;
    for (const Entry& e : bucket) duplicate = duplicate || e.text == text;
    if (!duplicate) bucket.push_back({text, *id, always});
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
  }
}

void SpecialMatcher::Split(std::string_view text, std::span<const TextRange> markup,
                           std::vector<Segment>* out) const {
  size_t seg_start = 0;
  size_t i = 0;
  size_t r = 0;  // the first markup range that ends after i
  while (i < text.size()) {
    const auto& bucket = by_first_byte_[static_cast<uint8_t>(text[i])];
    const Entry* hit = nullptr;
    while (r < markup.size() && markup[r].end <= i) ++r;
    const bool in_markup = r < markup.size() && markup[r].begin <= i;
    for (const Entry& e : bucket) {
      const bool allowed = e.always || (in_markup && i + e.text.size() <= markup[r].end);
      if (allowed && text.substr(i, e.text.size()) == e.text) {
        hit = &e;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > seg_start) out->push_back({text.substr(seg_start, i - seg_start), -1, seg_start});
    out->push_back({text.substr(i, hit->text.size()), hit->id, i});
    i += hit->text.size();
    seg_start = i;
  }
  if (seg_start < text.size()) out->push_back({text.substr(seg_start), -1, seg_start});
}

}  // namespace tokenizer_internal

std::string Utf8StreamDecoder::Push(std::string_view piece) {
  using tokenizer_internal::DecodeUtf8;
  using tokenizer_internal::Utf8Status;
  pending_.append(piece);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    tokenizer_internal::Utf8Char c = DecodeUtf8(pending_, i);
    if (c.status == Utf8Status::kIncomplete) break;  // wait for the rest of the character
    if (c.status == Utf8Status::kComplete) {
      out.append(pending_, i, c.len);
    } else {
      out.append("\xEF\xBF\xBD");  // can never become valid: replace now
    }
    i += c.len;
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8StreamDecoder::Flush() {
  std::string out = tokenizer_internal::ToValidUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace frugal
