// Tokenizer::FromTokenizerJson: a Hugging Face tokenizer.json (+ tokenizer_config.json) ->
// TokenizerSpec. Only the component types used by the supported model families are accepted;
// anything else is Unimplemented with its name, so a tokenizer is never silently wrong.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/regex_split.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

namespace frugal {
namespace {

using json = nlohmann::json;
using tokenizer_internal::kTypeByte;
using tokenizer_internal::kTypeControl;
using tokenizer_internal::kTypeNormal;
using tokenizer_internal::kTypeUnknown;
using tokenizer_internal::kTypeUserDefined;

constexpr char kSpaceMarker[] = "\xE2\x96\x81";  // "▁"
constexpr int64_t kMaxVocab = 1 << 24;           // far above any real vocabulary
constexpr int kMaxNesting = 16;                  // Sequence inside Sequence ...

// What the normalizer / pre_tokenizer / decoder / post_processor sections amount to.
struct Pipeline {
  // normalizer
  std::string normal_form;
  bool prepend_space_marker = false;  // Prepend("▁")
  bool replace_space = false;         // Replace(" ", "▁")
  bool bert_normalizer = false;
  bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;
  std::string precompiled_charsmap;  // Precompiled (raw bytes)
  bool has_precompiled = false;
  bool strip_left = false, strip_right = false;  // Strip
  bool collapse_spaces = false;                  // Replace(Regex(" {2,}"), collapse_to)
  std::string collapse_to;
  bool whitespace_split = false;  // pre_tokenizer WhitespaceSplit
  // pre_tokenizer
  std::vector<std::string> patterns;
  bool byte_level = false;
  bool byte_level_prefix_space = false;
  bool metaspace = false;
  std::string metaspace_scheme = "always";
  bool metaspace_split = true;
  bool bert_pre_tokenizer = false;
  // decoder
  bool decode_cleanup = true;
  // post_processor: special ids around a single sequence
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;
};

bool IsNull(const json& j, const char* key) { return !j.contains(key) || j.at(key).is_null(); }

StatusOr<std::string> DecodeBase64(std::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else if (c == '=' || c == '\n' || c == '\r') {
      continue;
    } else {
      return InvalidArgument("tokenizer.json: precompiled_charsmap is not base64");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

StatusOr<std::string> TypeOf(const json& j, const char* what) {
  if (!j.is_object() || !j.contains("type") || !j.at("type").is_string()) {
    return InvalidArgument(std::string("tokenizer.json: ") + what + " without a type");
  }
  return j.at("type").get<std::string>();
}

Status ParseNormalizer(const json& n, Pipeline* p, int depth = 0) {
  if (depth > kMaxNesting) return InvalidArgument("tokenizer.json: sequences nested too deeply");
  FRUGAL_ASSIGN_OR_RETURN(const std::string type, TypeOf(n, "normalizer"));
  if (type == "Sequence") {
    for (const json& child : n.at("normalizers"))
      FRUGAL_RETURN_IF_ERROR(ParseNormalizer(child, p, depth + 1));
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    if (!p->normal_form.empty() && p->normal_form != type) {
      return Unimplemented("tokenizer.json: two unicode normalizers");
    }
    p->normal_form = type;
  } else if (type == "Prepend") {
    if (n.at("prepend").get<std::string>() != kSpaceMarker) {
      return Unimplemented("tokenizer.json: Prepend normalizer with a string other than \"▁\"");
    }
    p->prepend_space_marker = true;
  } else if (type == "Replace") {
    const json& pattern = n.at("pattern");
    const std::string content = n.at("content").get<std::string>();
    if (pattern.contains("String") && pattern.at("String").get<std::string>() == " " &&
        content == kSpaceMarker) {
      p->replace_space = true;
    } else if (pattern.contains("Regex") && pattern.at("Regex").get<std::string>() == " {2,}" &&
               (content == " " || content == kSpaceMarker)) {
      p->collapse_spaces = true;  // SentencePiece's remove_extra_whitespaces, as HF converts it
      p->collapse_to = content;
    } else {
      return Unimplemented(
          "tokenizer.json: only the Replace(\" \", \"▁\") and Replace(\" {2,}\", ...) normalizers "
          "are supported");
    }
  } else if (type == "Precompiled") {
    p->has_precompiled = true;
    if (!IsNull(n, "precompiled_charsmap")) {
      FRUGAL_ASSIGN_OR_RETURN(p->precompiled_charsmap,
                              DecodeBase64(n.at("precompiled_charsmap").get<std::string>()));
    }
  } else if (type == "Strip") {
    p->strip_left = n.value("strip_left", false);
    p->strip_right = n.value("strip_right", false);
  } else if (type == "BertNormalizer") {
    p->bert_normalizer = true;
    p->clean_text = n.value("clean_text", true);
    p->handle_chinese_chars = n.value("handle_chinese_chars", true);
    p->lowercase = n.value("lowercase", true);
    // strip_accents: null means "same as lowercase".
    p->strip_accents =
        IsNull(n, "strip_accents") ? p->lowercase : n.at("strip_accents").get<bool>();
  } else {
    return Unimplemented("tokenizer.json: normalizer '" + type + "' is not supported");
  }
  return Status::Ok();
}

Status ParsePreTokenizer(const json& t, Pipeline* p, int depth = 0) {
  if (depth > kMaxNesting) return InvalidArgument("tokenizer.json: sequences nested too deeply");
  FRUGAL_ASSIGN_OR_RETURN(const std::string type, TypeOf(t, "pre_tokenizer"));
  if (type == "Sequence") {
    for (const json& child : t.at("pretokenizers"))
      FRUGAL_RETURN_IF_ERROR(ParsePreTokenizer(child, p, depth + 1));
  } else if (type == "ByteLevel") {
    p->byte_level = true;
    p->byte_level_prefix_space = t.value("add_prefix_space", false);
    if (t.value("use_regex", true)) p->patterns.push_back(tokenizer_internal::kGpt2Pattern);
  } else if (type == "Split" || type == "Digits") {
    // Our splits run on the raw text; after ByteLevel they would see mapped characters.
    if (p->byte_level) return Unimplemented("tokenizer.json: a " + type + " after ByteLevel");
    if (type == "Digits") {
      p->patterns.push_back(t.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
      return Status::Ok();
    }
    const std::string behavior = t.value("behavior", "");
    if (behavior != "Isolated" || t.value("invert", false)) {
      return Unimplemented("tokenizer.json: Split with behavior '" + behavior +
                           "' (only Isolated, not inverted, is supported)");
    }
    const json& pattern = t.at("pattern");
    if (pattern.contains("Regex")) {
      p->patterns.push_back(pattern.at("Regex").get<std::string>());
    } else {
      p->patterns.push_back("\\Q" + pattern.at("String").get<std::string>() + "\\E");
    }
  } else if (type == "Metaspace") {
    if (t.value("replacement", std::string(kSpaceMarker)) != kSpaceMarker) {
      return Unimplemented("tokenizer.json: Metaspace with a replacement other than \"▁\"");
    }
    p->metaspace = true;
    if (!IsNull(t, "prepend_scheme")) {
      p->metaspace_scheme = t.at("prepend_scheme").get<std::string>();
    } else if (t.contains("add_prefix_space")) {  // older files
      p->metaspace_scheme = t.at("add_prefix_space").get<bool>() ? "always" : "never";
    }
    p->metaspace_split = t.value("split", true);
    if (p->metaspace_scheme != "always" && p->metaspace_scheme != "first" &&
        p->metaspace_scheme != "never") {
      return Unimplemented("tokenizer.json: Metaspace prepend_scheme '" + p->metaspace_scheme +
                           "'");
    }
  } else if (type == "BertPreTokenizer") {
    p->bert_pre_tokenizer = true;
  } else if (type == "WhitespaceSplit") {
    if (p->metaspace) return Unimplemented("tokenizer.json: WhitespaceSplit after Metaspace");
    p->whitespace_split = true;
  } else {
    return Unimplemented("tokenizer.json: pre_tokenizer '" + type + "' is not supported");
  }
  return Status::Ok();
}

Status ParseDecoder(const json& d, Pipeline* p, int depth = 0) {
  if (depth > kMaxNesting) return InvalidArgument("tokenizer.json: sequences nested too deeply");
  FRUGAL_ASSIGN_OR_RETURN(const std::string type, TypeOf(d, "decoder"));
  if (type == "Sequence") {
    for (const json& child : d.at("decoders"))
      FRUGAL_RETURN_IF_ERROR(ParseDecoder(child, p, depth + 1));
  } else if (type == "WordPiece") {
    p->decode_cleanup = d.value("cleanup", true);
  } else if (type != "ByteLevel" && type != "Metaspace" && type != "Replace" &&
             type != "ByteFallback" && type != "Fuse" && type != "Strip") {
    // The kinds decode by their own rules; these are the decoders those rules implement.
    return Unimplemented("tokenizer.json: decoder '" + type + "' is not supported");
  }
  return Status::Ok();
}

Status ParsePostProcessor(const json& pp, Pipeline* p, int depth = 0) {
  if (depth > kMaxNesting) return InvalidArgument("tokenizer.json: sequences nested too deeply");
  FRUGAL_ASSIGN_OR_RETURN(const std::string type, TypeOf(pp, "post_processor"));
  if (type == "Sequence") {
    for (const json& child : pp.at("processors"))
      FRUGAL_RETURN_IF_ERROR(ParsePostProcessor(child, p, depth + 1));
  } else if (type == "ByteLevel") {
    // Offsets only.
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    p->prefix_ids = {pp.at("cls").at(1).get<int32_t>()};
    p->suffix_ids = {pp.at("sep").at(1).get<int32_t>()};
  } else if (type == "TemplateProcessing") {
    p->prefix_ids.clear();
    p->suffix_ids.clear();
    bool seen_sequence = false;
    const json specials = IsNull(pp, "special_tokens") ? json::object() : pp.at("special_tokens");
    for (const json& item : pp.at("single")) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const std::string name = item.at("SpecialToken").at("id").get<std::string>();
      if (!specials.contains(name)) {
        return InvalidArgument("tokenizer.json: template token '" + name + "' has no ids");
      }
      for (const json& id : specials.at(name).at("ids")) {
        (seen_sequence ? p->suffix_ids : p->prefix_ids).push_back(id.get<int32_t>());
      }
    }
  } else {
    return Unimplemented("tokenizer.json: post_processor '" + type + "' is not supported");
  }
  return Status::Ok();
}

// BPE and Unigram: the post-processor's token before the text is BOS, the one after EOS.
void TemplateIsBosEos(const Pipeline& p, TokenizerSpec* spec) {
  if (!p.prefix_ids.empty()) {
    spec->bos_id = p.prefix_ids[0];
    spec->add_bos = true;
  }
  if (!p.suffix_ids.empty()) {
    spec->eos_id = p.suffix_ids[0];
    spec->add_eos = true;
  }
}

// tokenizer_config.json names tokens as a string or as {"content": ...}.
std::optional<std::string> ConfigToken(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) {
    return v.at("content").get<std::string>();
  }
  return std::nullopt;
}

StatusOr<std::unique_ptr<Tokenizer>> Load(std::string_view tokenizer_json,
                                          std::string_view config_json) {
  const json root = json::parse(tokenizer_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return InvalidArgument("tokenizer.json: not a JSON object");
  }
  json config = json::object();
  if (!config_json.empty()) {
    config = json::parse(config_json, nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      return InvalidArgument("tokenizer_config.json: not a JSON object");
    }
  }
  if (!root.contains("model") || !root.at("model").is_object()) {
    return InvalidArgument("tokenizer.json: no model section");
  }
  const json& model = root.at("model");
  std::string model_type = model.value("type", "");
  if (model_type.empty()) {  // old files omit the type
    model_type = model.contains("merges")                     ? "BPE"
                 : model.contains("max_input_chars_per_word") ? "WordPiece"
                                                              : "";
  }
  if (model_type != "BPE" && model_type != "WordPiece" && model_type != "Unigram") {
    return Unimplemented("tokenizer.json: model type '" + model_type +
                         "' is not supported (supported: BPE, WordPiece, Unigram)");
  }
  const bool unigram = model_type == "Unigram";

  // Vocabulary and added tokens (which may extend it). Unigram's is a list of [piece, score].
  const json& vocab = model.at("vocab");
  if (!unigram && !vocab.is_object())
    return InvalidArgument("tokenizer.json: model.vocab is not an object");
  if (unigram && !vocab.is_array())
    return InvalidArgument("tokenizer.json: Unigram model.vocab is not an array");
  int64_t max_id = -1;
  auto check_id = [&max_id](int64_t id) -> Status {
    if (id < 0 || id >= kMaxVocab) {
      return InvalidArgument("tokenizer.json: token id " + std::to_string(id) + " out of range");
    }
    max_id = std::max(max_id, id);
    return Status::Ok();
  };
  if (unigram) {
    FRUGAL_RETURN_IF_ERROR(check_id(static_cast<int64_t>(vocab.size()) - 1));
  } else {
    for (const auto& [text, id] : vocab.items())
      FRUGAL_RETURN_IF_ERROR(check_id(id.get<int64_t>()));
  }
  const json added = IsNull(root, "added_tokens") ? json::array() : root.at("added_tokens");
  if (!added.is_array()) return InvalidArgument("tokenizer.json: added_tokens is not an array");
  for (const json& a : added) FRUGAL_RETURN_IF_ERROR(check_id(a.at("id").get<int64_t>()));
  if (max_id < 0) return InvalidArgument("tokenizer.json: empty vocabulary");

  TokenizerSpec spec;
  spec.tokens.resize(static_cast<size_t>(max_id) + 1);
  spec.token_types.assign(spec.tokens.size(), kTypeNormal);
  if (unigram) {
    spec.piece_scores.assign(spec.tokens.size(), 0.0);
    for (size_t i = 0; i < vocab.size(); ++i) {
      const json& e = vocab.at(i);
      if (!e.is_array() || e.size() != 2 || !e.at(0).is_string() || !e.at(1).is_number()) {
        return InvalidArgument("tokenizer.json: Unigram vocab entry " + std::to_string(i) +
                               " is not [piece, score]");
      }
      spec.tokens[i] = e.at(0).get<std::string>();
      spec.piece_scores[i] = e.at(1).get<double>();
    }
  } else {
    for (const auto& [text, id] : vocab.items()) spec.tokens[id.get<int64_t>()] = text;
  }
  for (const json& a : added) {
    const auto id = a.at("id").get<int64_t>();
    spec.tokens[id] = a.at("content").get<std::string>();
    spec.token_types[id] = a.value("special", false) ? kTypeControl : kTypeUserDefined;
    spec.special_tokens.push_back(spec.tokens[id]);
  }
  auto find_id = [&spec](std::string_view text) -> int32_t {
    for (size_t i = spec.tokens.size(); i-- > 0;) {  // highest id wins, as in the tokenizer
      if (spec.tokens[i] == text) return static_cast<int32_t>(i);
    }
    return -1;
  };

  Pipeline p;
  if (!IsNull(root, "normalizer"))
    FRUGAL_RETURN_IF_ERROR(ParseNormalizer(root.at("normalizer"), &p));
  if (!IsNull(root, "pre_tokenizer")) {
    FRUGAL_RETURN_IF_ERROR(ParsePreTokenizer(root.at("pre_tokenizer"), &p));
  }
  if (!IsNull(root, "decoder")) FRUGAL_RETURN_IF_ERROR(ParseDecoder(root.at("decoder"), &p));
  if (!IsNull(root, "post_processor")) {
    FRUGAL_RETURN_IF_ERROR(ParsePostProcessor(root.at("post_processor"), &p));
  }
  if (p.prefix_ids.size() > 1 || p.suffix_ids.size() > 1) {
    return Unimplemented(
        "tokenizer.json: templates with more than one token before or after the text");
  }
  for (int32_t id : p.prefix_ids) FRUGAL_RETURN_IF_ERROR(check_id(id));
  for (int32_t id : p.suffix_ids) FRUGAL_RETURN_IF_ERROR(check_id(id));
  if (max_id >= static_cast<int64_t>(spec.tokens.size())) {
    return InvalidArgument("tokenizer.json: post_processor id outside the vocabulary");
  }

  const bool unigram_parts =
      p.has_precompiled || p.strip_left || p.strip_right || p.collapse_spaces || p.whitespace_split;
  if (unigram_parts && !unigram) {
    return Unimplemented(
        "tokenizer.json: Precompiled, Strip, Replace(\" {2,}\") and WhitespaceSplit are supported "
        "with Unigram models only");
  }
  if (unigram) {
    spec.kind = TokenizerKind::kSentencePieceUnigram;
    if (p.byte_level || p.bert_pre_tokenizer || p.bert_normalizer || !p.patterns.empty() ||
        p.replace_space || p.prepend_space_marker) {
      return Unimplemented(
          "tokenizer.json: a Unigram model with other normalizers or pre-tokenizers than "
          "Precompiled / NFKC / Strip / Replace(\" {2,}\") and WhitespaceSplit / Metaspace");
    }
    if (!p.metaspace)
      return Unimplemented("tokenizer.json: a Unigram model without a Metaspace pre-tokenizer");
    if (p.has_precompiled && !p.normal_form.empty()) {
      return Unimplemented("tokenizer.json: both a Precompiled and a unicode normalizer");
    }
    spec.precompiled_charsmap = std::move(p.precompiled_charsmap);
    spec.unicode_normalization = p.normal_form;
    spec.strip_left = p.strip_left;
    spec.strip_right = p.strip_right;
    spec.collapse_spaces = p.collapse_spaces;
    if (p.collapse_spaces)
      spec.collapse_spaces_to = p.collapse_to == kSpaceMarker ? " " : p.collapse_to;
    spec.whitespace_split = p.whitespace_split;
    spec.metaspace_split = p.metaspace_split;
    spec.add_space_prefix = p.metaspace_scheme != "never";
    spec.space_prefix_mode = p.metaspace_scheme == "first"
                                 ? TokenizerSpec::SpacePrefix::kFirstUnlessSpace
                                 : TokenizerSpec::SpacePrefix::kAlwaysUnlessSpace;
    spec.byte_fallback = model.value("byte_fallback", false);
    if (!IsNull(model, "unk_id")) {
      const auto unk = model.at("unk_id").get<int64_t>();
      if (unk < 0 || unk >= static_cast<int64_t>(spec.tokens.size())) {
        return InvalidArgument("tokenizer.json: Unigram unk_id outside the vocabulary");
      }
      spec.unk_id = static_cast<int32_t>(unk);
    }
    TemplateIsBosEos(p, &spec);
  } else if (model_type == "WordPiece") {
    spec.kind = TokenizerKind::kWordPiece;
    if (!p.patterns.empty() || p.byte_level || p.metaspace || p.replace_space ||
        p.prepend_space_marker || !p.normal_form.empty()) {
      return Unimplemented(
          "tokenizer.json: WordPiece supports only BertNormalizer and BertPreTokenizer");
    }
    if (!p.bert_pre_tokenizer) {
      return Unimplemented("tokenizer.json: WordPiece without BertPreTokenizer is not supported");
    }
    if (!p.clean_text) return Unimplemented("tokenizer.json: BertNormalizer with clean_text=false");
    if (!p.bert_normalizer) {  // no normalizer at all: leave the text as it is
      p.lowercase = p.strip_accents = p.handle_chinese_chars = false;
    }
    spec.lowercase = p.lowercase;
    spec.strip_accents = p.strip_accents;
    spec.handle_chinese_chars = p.handle_chinese_chars;
    spec.continuing_prefix = model.value("continuing_subword_prefix", "##");
    spec.max_input_chars_per_word = model.value("max_input_chars_per_word", 100);
    spec.decode_cleanup = p.decode_cleanup;
    spec.unk_id = find_id(model.value("unk_token", "[UNK]"));
    spec.cls_id = p.prefix_ids.empty() ? -1 : p.prefix_ids[0];
    spec.sep_id = p.suffix_ids.empty() ? -1 : p.suffix_ids[0];
  } else {
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (!IsNull(model, key) && !model.at(key).get<std::string>().empty()) {
        return Unimplemented(std::string("tokenizer.json: BPE with ") + key);
      }
    }
    if (!IsNull(model, "dropout") && model.at("dropout").get<double>() > 0) {
      return Unimplemented("tokenizer.json: BPE dropout");
    }
    const json merges = IsNull(model, "merges") ? json::array() : model.at("merges");
    if (!merges.is_array()) return InvalidArgument("tokenizer.json: merges is not an array");
    spec.merges.reserve(merges.size());
    for (const json& m : merges) {
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
          return InvalidArgument("tokenizer.json: malformed merge '" + s + "'");
        }
        spec.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2) {
        spec.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      } else {
        return InvalidArgument("tokenizer.json: malformed merge " + m.dump());
      }
    }
    spec.ignore_merges = model.value("ignore_merges", false);
    spec.byte_fallback = model.value("byte_fallback", false);
    if (!IsNull(model, "unk_token"))
      spec.unk_id = find_id(model.at("unk_token").get<std::string>());
    spec.unicode_normalization = p.normal_form;
    if (p.byte_level) {
      if (p.metaspace || p.replace_space || p.prepend_space_marker) {
        return Unimplemented("tokenizer.json: ByteLevel mixed with \"▁\" space handling");
      }
      spec.kind = TokenizerKind::kByteLevelBpe;
      spec.pre_regexes = p.patterns;
      spec.byte_level_prefix_space = p.byte_level_prefix_space;
      if (spec.pre_regexes.empty()) {
        spec.pre_regexes.push_back("(?s).+");  // ByteLevel(use_regex=false) alone: no split
      }
    } else if (p.metaspace || p.replace_space) {
      spec.kind = TokenizerKind::kSentencePieceBpe;
      if (!p.patterns.empty() || p.bert_pre_tokenizer) {
        return Unimplemented("tokenizer.json: SentencePiece BPE with extra pre-tokenizers");
      }
      if (p.metaspace) {
        spec.add_space_prefix = p.metaspace_scheme != "never" || p.prepend_space_marker;
        spec.space_prefix_mode = p.prepend_space_marker ? TokenizerSpec::SpacePrefix::kEverySegment
                                 : p.metaspace_scheme == "first"
                                     ? TokenizerSpec::SpacePrefix::kFirstUnlessSpace
                                     : TokenizerSpec::SpacePrefix::kAlwaysUnlessSpace;
        // split=true cuts before every "▁", which stays at the front of the next piece.
        if (p.metaspace_split)
          spec.pre_regexes.push_back("[^\xE2\x96\x81]+|\xE2\x96\x81[^\xE2\x96\x81]*");
      } else {
        spec.add_space_prefix = p.prepend_space_marker;
        spec.space_prefix_mode = TokenizerSpec::SpacePrefix::kEverySegment;
      }
      for (size_t i = 0; i < spec.tokens.size(); ++i) {
        const std::string& t = spec.tokens[i];
        if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>' &&
            spec.token_types[i] == kTypeNormal) {
          spec.token_types[i] = kTypeByte;
        }
      }
    } else {
      return Unimplemented(
          "tokenizer.json: BPE needs a ByteLevel pre-tokenizer or \"▁\" space handling "
          "(Metaspace, or Replace(\" \", \"▁\"))");
    }
    TemplateIsBosEos(p, &spec);
  }
  if (spec.unk_id >= 0 && spec.token_types[spec.unk_id] == kTypeNormal) {
    spec.token_types[spec.unk_id] = kTypeUnknown;
  }

  // tokenizer_config.json overrides what the template implied.
  if (auto bos = ConfigToken(config, "bos_token")) {
    if (int32_t id = find_id(*bos); id >= 0) spec.bos_id = id;
  }
  if (auto eos = ConfigToken(config, "eos_token")) {
    if (int32_t id = find_id(*eos); id >= 0) {
      if (spec.add_eos && spec.eos_id != id && spec.kind != TokenizerKind::kWordPiece) {
        return Unimplemented("tokenizer.json: the template appends a token other than eos_token");
      }
      spec.eos_id = id;
    }
  }
  if (auto pad = ConfigToken(config, "pad_token")) spec.pad_id = find_id(*pad);
  if (spec.pad_id < 0 && root.contains("padding") && root.at("padding").is_object()) {
    spec.pad_id = root.at("padding").value("pad_id", -1);
  }
  if (config.contains("add_bos_token") && config.at("add_bos_token").is_boolean()) {
    spec.add_bos = config.at("add_bos_token").get<bool>();
  }
  if (config.contains("add_eos_token") && config.at("add_eos_token").is_boolean()) {
    spec.add_eos = config.at("add_eos_token").get<bool>();
  }
  if (spec.eos_id < 0) {  // no config: the usual names
    for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>"}) {
      if (int32_t id = find_id(name); id >= 0) {
        spec.eos_id = id;
        break;
      }
    }
  }
  if (spec.kind == TokenizerKind::kWordPiece) {
    if (spec.cls_id < 0) spec.cls_id = find_id("[CLS]");
    if (spec.sep_id < 0) spec.sep_id = find_id("[SEP]");
  }
  if ((spec.add_bos && spec.bos_id < 0) || (spec.add_eos && spec.eos_id < 0)) {
    return InvalidArgument(
        "tokenizer.json: BOS/EOS requested but the token is not in the vocabulary");
  }
  for (const char* name : {"<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>"}) {
    if (int32_t id = find_id(name); id >= 0 && id != spec.eos_id) spec.eog_ids.push_back(id);
  }
  return Tokenizer::Create(std::move(spec));
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromTokenizerJson(
    std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  // nlohmann::json reports wrong types and missing keys by throwing; none of that may leave
  // this API, and all of it means the file is malformed.
  try {
    return Load(tokenizer_json, tokenizer_config_json);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("tokenizer.json: ") + e.what());
  }
}

}  // namespace frugal
