#include "tokenizer/regex_split.h"

#include <algorithm>
#include <array>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/unicode_util.h"

namespace frugal::tokenizer_internal {

const char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

constexpr char kLlama3Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kQwen2Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kTekkenPattern[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kGpt4oPattern[] =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kBloomPattern[] = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

// The HF regex engine's \s is Unicode White_Space, which includes U+0085 (NEL, a control
// character); PCRE2's UCP \s covers only Z and the ASCII spaces. Widen \s (and narrow \S)
// so the splits agree on NEL.
std::string WidenWhitespace(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[i + 1];
      if (d == 'Q') {  // \Q...\E quotes: copy verbatim
        size_t end = p.find("\\E", i + 2);
        end = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, end - i));
        i = end;
        continue;
      }
      if (d == 's') {
        out.append(in_class ? "\\s\\x{85}" : "[\\s\\x{85}]");
      } else if (d == 'S' && !in_class) {
        out.append("[^\\s\\x{85}]");
      } else {
        out.append(p.substr(i, 2));
      }
      i += 2;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      if (i < p.size() && p[i] == '^') out.push_back(p[i++]);
      if (i < p.size() && p[i] == ']') out.push_back(p[i++]);  // a leading ']' is literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      size_t end = p.find(":]", i + 2);
      end = end == std::string_view::npos ? p.size() : end + 2;
      out.append(p.substr(i, end - i));
      i = end;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
    ++i;
  }
  return out;
}

}  // namespace

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::~RegexSplitter() = default;

StatusOr<std::unique_ptr<RegexSplitter>> RegexSplitter::Create(
    const std::vector<std::string>& patterns) {
  std::unique_ptr<RegexSplitter> splitter(new RegexSplitter());
  for (const std::string& pattern : patterns) {
    const std::string widened = WidenWhitespace(pattern);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto compiled = std::make_unique<Compiled>();
    // MATCH_INVALID_UTF: text is client input and may not be valid UTF-8; invalid bytes simply
    // never match and end up in gap pieces, which byte-level BPE still encodes losslessly.
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(widened.data()), widened.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error,
                                   &error_offset, nullptr);
    if (compiled->code == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      return Unimplemented("pre-tokenizer regex '" + pattern + "' does not compile at offset " +
                           std::to_string(error_offset) + ": " +
                           reinterpret_cast<const char*>(message.data()));
    }
    // JIT is an optimisation only: without it (unsupported CPU, no executable memory) the
    // interpreter gives the same matches.
    (void)pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);
    splitter->compiled_.push_back(std::move(compiled));
  }
  return splitter;
}

void RegexSplitter::SplitOne(const Compiled& re, std::string_view text,
                             std::vector<std::string_view>* pieces) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(re.code, nullptr), &pcre2_match_data_free);
  if (md == nullptr) {  // out of memory: keep the text whole rather than lose it
    pieces->push_back(text);
    return;
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t last = 0;   // end of what has been emitted
  size_t start = 0;  // where the next search begins
  while (start <= text.size()) {
    int rc = pcre2_match(re.code, subject, text.size(), start, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Long runs with backtracking can outgrow the JIT stack; the interpreter uses the heap.
      rc = pcre2_match(re.code, subject, text.size(), start, PCRE2_NO_JIT, md.get(), nullptr);
    }
    if (rc < 0) break;  // no match (or a resource limit): the rest is one gap piece
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t ms = ov[0], me = ov[1];
    if (ms > last) pieces->push_back(text.substr(last, ms - last));
    if (me > ms) {
      pieces->push_back(text.substr(ms, me - ms));
      last = me;
      start = me;
    } else {
      // An empty match only marks a split point; step over one character to make progress.
      last = ms;
      if (ms >= text.size()) break;
      start = ms + Utf8CharLen(text, ms);
    }
  }
  if (last < text.size()) pieces->push_back(text.substr(last));
}

void RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  if (text.empty()) return;
  if (compiled_.empty()) {
    pieces->push_back(text);
    return;
  }
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (size_t r = 0; r < compiled_.size(); ++r) {
    const bool last_step = r + 1 == compiled_.size();
    std::vector<std::string_view>* dst = last_step ? pieces : &next;
    for (std::string_view piece : current) SplitOne(*compiled_[r], piece, dst);
    if (!last_step) {
      current.swap(next);
      next.clear();
    }
  }
}

StatusOr<PreTokenizerPreset> PresetForName(std::string_view name) {
  auto is_any = [name](std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  PreTokenizerPreset p;
  // Missing and "default" follow llama.cpp's default list.
  if (name.empty() || name == "default") {
    p.patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Pattern, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  } else if (is_any({"gpt2", "gpt-2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de",
                     "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe",
                     "gigachat", "exaone4", "trillion"})) {
    p.patterns = {kGpt2Pattern};
  } else if (is_any({"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                     "minerva-7b"})) {
    // Digits(individual_digits=true) before ByteLevel's GPT-2 regex.
    p.patterns = {R"(\p{N})", kGpt2Pattern};
  } else if (is_any({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                     "midm-2.0", "lfm2"})) {
    p.patterns = {kLlama3Pattern};
    p.ignore_merges = true;
  } else if (is_any({"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})) {
    p.patterns = {kLlama3Pattern};
  } else if (is_any({"qwen2", "deepseek-r1-qwen", "kormo", "stablelm2", "megrez", "hunyuan",
                     "grok-2"})) {
    p.patterns = {kQwen2Pattern};
  } else if (name == "tekken") {
    p.patterns = {kTekkenPattern};
    p.ignore_merges = true;
  } else if (is_any({"gpt-4o", "llama4", "minimax-m2"})) {
    p.patterns = {kGpt4oPattern};
  } else if (is_any({"poro-chat", "bloom", "gpt3-finnish"})) {
    p.patterns = {kBloomPattern};
  } else if (name == "viking") {
    p.patterns = {kBloomPattern, R"(\p{N})"};
  } else {
    return Unimplemented("unsupported pre-tokenizer '" + std::string(name) +
                         "' (tokenizer.ggml.pre); supported: gpt2, smollm, llama3/llama-bpe, "
                         "qwen2, tekken, gpt-4o and their aliases");
  }
  return p;
}

}  // namespace frugal::tokenizer_internal
