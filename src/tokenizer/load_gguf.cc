// Tokenizer::FromGguf: the llama.cpp tokenizer metadata (tokenizer.ggml.*) -> TokenizerSpec.
#include <algorithm>

#include "formats/gguf.h"
#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

namespace frugal {
namespace {

using tokenizer_internal::kTypeControl;
using tokenizer_internal::kTypeUserDefined;

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // "▁"

StatusOr<const GgufValue*> FindArray(const GgufFile& gguf, std::string_view key, bool want_strings,
                                     bool required) {
  const GgufValue* v = gguf.Find(key);
  if (v == nullptr) {
    if (required) return NotFound("GGUF tokenizer: missing " + std::string(key));
    return static_cast<const GgufValue*>(nullptr);
  }
  const bool is_string = v->elem_type == GgufValueType::kString;
  if (v->type != GgufValueType::kArray || is_string != want_strings ||
      (want_strings ? v->strings.size() : v->numbers.size()) != v->count) {
    return InvalidArgument("GGUF tokenizer: " + std::string(key) + " is not an array of " +
                           (want_strings ? "strings" : "numbers"));
  }
  return v;
}

// A token id from the metadata. Ids outside the vocabulary (converters write 0xFFFFFFFF for
// "none") mean no such token, as llama.cpp reads them, rather than a broken file.
int32_t IdOr(const GgufFile& gguf, std::string_view key, size_t n_vocab, int32_t fallback) {
  const GgufValue* v = gguf.Find(key);
  if (v == nullptr || v->type == GgufValueType::kArray || v->type == GgufValueType::kString) {
    return fallback;
  }
  if (v->integer < 0 || static_cast<uint64_t>(v->integer) >= n_vocab) return -1;
  return static_cast<int32_t>(v->integer);
}

// llama.cpp's converter stores BERT vocabularies with a "phantom space": word-initial pieces
// get "▁", continuation pieces lose "##", [BRACKETED] specials stay. Undo it so the HF
// WordPiece algorithm applies unchanged.
void UndoPhantomSpace(std::vector<std::string>* tokens) {
  size_t marked = 0;
  for (const std::string& t : *tokens) marked += t.starts_with(kSpaceMarker) ? 1 : 0;
  if (marked * 4 < tokens->size()) return;  // not in phantom form
  for (std::string& t : *tokens) {
    if (t.starts_with(kSpaceMarker)) {
      t.erase(0, kSpaceMarker.size());
    } else if (!(t.size() >= 2 && t.front() == '[' && t.back() == ']')) {
      t.insert(0, "##");
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& gguf) {
  const GgufValue* model_v = gguf.Find("tokenizer.ggml.model");
  if (model_v == nullptr || model_v->type != GgufValueType::kString) {
    return NotFound("GGUF tokenizer: missing tokenizer.ggml.model");
  }
  const std::string model(model_v->str);
  TokenizerSpec spec;
  if (model == "gpt2") {
    spec.kind = TokenizerKind::kByteLevelBpe;
  } else if (model == "llama") {
    spec.kind = TokenizerKind::kSentencePieceBpe;
  } else if (model == "bert") {
    spec.kind = TokenizerKind::kWordPiece;
  } else {
    return Unimplemented("GGUF tokenizer model '" + model +
                         "' is not supported (supported: gpt2, llama, bert)");
  }

  FRUGAL_ASSIGN_OR_RETURN(const GgufValue* tokens,
                          FindArray(gguf, "tokenizer.ggml.tokens", true, true));
  spec.tokens.assign(tokens->strings.begin(), tokens->strings.end());
  const size_t n = spec.tokens.size();

  FRUGAL_ASSIGN_OR_RETURN(const GgufValue* scores,
                          FindArray(gguf, "tokenizer.ggml.scores", false, false));
  if (scores != nullptr) {
    if (scores->count != n) return InvalidArgument("GGUF tokenizer: scores/tokens size mismatch");
    spec.scores.assign(scores->numbers.begin(), scores->numbers.end());
  }
  FRUGAL_ASSIGN_OR_RETURN(const GgufValue* types,
                          FindArray(gguf, "tokenizer.ggml.token_type", false, false));
  if (types != nullptr) {
    if (types->count != n)
      return InvalidArgument("GGUF tokenizer: token_type/tokens size mismatch");
    spec.token_types.reserve(n);
    for (double t : types->numbers) spec.token_types.push_back(static_cast<int32_t>(t));
  } else {
    spec.token_types.assign(n, tokenizer_internal::kTypeNormal);
  }
  FRUGAL_ASSIGN_OR_RETURN(const GgufValue* merges,
                          FindArray(gguf, "tokenizer.ggml.merges", true, false));
  if (merges != nullptr) {
    spec.merges.reserve(merges->strings.size());
    for (std::string_view m : merges->strings) {
      // Search from 1 so that a first part that is itself " " survives (llama.cpp does the same).
      const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
      if (space == std::string_view::npos) {
        return InvalidArgument("GGUF tokenizer: malformed merge '" + std::string(m) + "'");
      }
      spec.merges.emplace_back(std::string(m.substr(0, space)), std::string(m.substr(space + 1)));
    }
  }

  spec.bos_id = IdOr(gguf, "tokenizer.ggml.bos_token_id", n, -1);
  spec.eos_id = IdOr(gguf, "tokenizer.ggml.eos_token_id", n, -1);
  spec.unk_id = IdOr(gguf, "tokenizer.ggml.unknown_token_id", n, -1);
  spec.pad_id = IdOr(gguf, "tokenizer.ggml.padding_token_id", n, -1);
  bool default_add_bos = false;
  if (spec.kind == TokenizerKind::kByteLevelBpe) {
    spec.pre_name = gguf.GetStringOr("tokenizer.ggml.pre", "");
    FRUGAL_ASSIGN_OR_RETURN(auto preset, tokenizer_internal::PresetForName(spec.pre_name));
    spec.pre_regexes = std::move(preset.patterns);
    spec.ignore_merges = preset.ignore_merges;
    default_add_bos = preset.ignore_merges;  // llama.cpp adds BOS for the Llama 3 family
    // Qwen2's tokenizer.json normalises to NFC before splitting; llama.cpp skips it, HF does not.
    if (spec.pre_name == "qwen2" || spec.pre_name == "deepseek-r1-qwen") {
      spec.unicode_normalization = "NFC";
    }
    if (merges == nullptr) return InvalidArgument("GGUF tokenizer: gpt2 model without merges");
  } else if (spec.kind == TokenizerKind::kSentencePieceBpe) {
    default_add_bos = true;
    spec.add_space_prefix = gguf.GetBoolOr("tokenizer.ggml.add_space_prefix", true);
    spec.space_prefix_mode = TokenizerSpec::SpacePrefix::kEverySegment;
    if (merges == nullptr && scores == nullptr) {
      return InvalidArgument("GGUF tokenizer: llama model without scores or merges");
    }
  } else {
    default_add_bos = true;
    spec.cls_id = IdOr(gguf, "tokenizer.ggml.cls_token_id", n, spec.bos_id);
    spec.sep_id = IdOr(gguf, "tokenizer.ggml.seperator_token_id", n,  // sic: llama.cpp's key
                       IdOr(gguf, "tokenizer.ggml.separator_token_id", n, spec.eos_id));
    UndoPhantomSpace(&spec.tokens);
  }
  if (spec.kind != TokenizerKind::kSentencePieceBpe) {
    spec.add_space_prefix = gguf.GetBoolOr("tokenizer.ggml.add_space_prefix", false);
    if (spec.add_space_prefix) {
      return Unimplemented("GGUF tokenizer: add_space_prefix is only supported for llama models");
    }
  }
  spec.add_bos = gguf.GetBoolOr("tokenizer.ggml.add_bos_token", default_add_bos);
  spec.add_eos = gguf.GetBoolOr("tokenizer.ggml.add_eos_token", false);

  // Matched in text before splitting: control and unknown tokens with parse_special (as
  // llama.cpp does), user-defined ones always.
  for (size_t i = 0; i < n; ++i) {
    const int32_t type = spec.token_types[i];
    if (type == kTypeControl || type == kTypeUserDefined ||
        type == tokenizer_internal::kTypeUnknown) {
      spec.special_tokens.push_back(spec.tokens[i]);
    }
  }
  // End of generation: EOS, the explicit EOT/EOM ids, and the chat-format terminators.
  auto add_eog = [&spec, n](int32_t id) {
    if (id >= 0 && static_cast<size_t>(id) < n && id != spec.eos_id &&
        std::find(spec.eog_ids.begin(), spec.eog_ids.end(), id) == spec.eog_ids.end()) {
      spec.eog_ids.push_back(id);
    }
  };
  add_eog(IdOr(gguf, "tokenizer.ggml.eot_token_id", n, -1));
  add_eog(IdOr(gguf, "tokenizer.ggml.eom_token_id", n, -1));
  for (const char* name : {"<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>"}) {
    for (size_t i = 0; i < n; ++i) {
      if (spec.tokens[i] == name) add_eog(static_cast<int32_t>(i));
    }
  }
  return Create(std::move(spec));
}

}  // namespace frugal
