#include "quant/hf_export.h"

#include <cstring>

#include "tokenizer/regex_split.h"

namespace frugal {

StatusOr<std::vector<NamedTensor>> GgufNamedTensors(const ModelSource& src) {
  std::vector<NamedTensor> out;
  for (const TensorView* t : src.AllTensors()) {
    if (src.is_gguf()) {
      out.push_back({t->name, t});
      continue;
    }
    const std::string g = LlamaGgufTensorName(t->name);
    if (g.empty()) {
      if (t->name.ends_with("rotary_emb.inv_freq")) continue;
      return Unimplemented(src.path() + ": tensor '" + t->name +
                           "' has no GGUF name (not a Llama-family tensor)");
    }
    out.push_back({g, t});
  }
  return out;
}

StatusOr<std::string> GgufArchForHf(const std::string& model_type) {
  if (model_type == "llama" || model_type == "mistral") return std::string("llama");
  if (model_type == "qwen2") return std::string("qwen2");
  return Unimplemented("model_type '" + model_type +
                       "' cannot be written as GGUF (supported: llama, mistral, qwen2)");
}

bool PermutesQk(const std::string& gguf_arch) { return gguf_arch == "llama"; }

void SetHfModelMetadata(const std::string& arch, const std::string& name, const LlamaHParams& hp,
                        GgufWriter* w) {
  const std::string a = arch + ".";
  w->SetString("general.architecture", arch);
  w->SetString("general.name", name);
  w->SetUint32(a + "context_length", static_cast<uint32_t>(hp.n_ctx_train));
  w->SetUint32(a + "embedding_length", static_cast<uint32_t>(hp.n_embd));
  w->SetUint32(a + "block_count", static_cast<uint32_t>(hp.n_layer));
  w->SetUint32(a + "feed_forward_length", static_cast<uint32_t>(hp.n_ff));
  w->SetUint32(a + "attention.head_count", static_cast<uint32_t>(hp.n_head));
  w->SetUint32(a + "attention.head_count_kv", static_cast<uint32_t>(hp.n_head_kv));
  if (hp.head_dim != hp.n_embd / hp.n_head) {
    w->SetUint32(a + "attention.key_length", static_cast<uint32_t>(hp.head_dim));
    w->SetUint32(a + "attention.value_length", static_cast<uint32_t>(hp.head_dim));
  }
  w->SetUint32(a + "rope.dimension_count", static_cast<uint32_t>(hp.n_rot));
  w->SetFloat32(a + "rope.freq_base", hp.rope_base);
  w->SetFloat32(a + "attention.layer_norm_rms_epsilon", hp.rms_eps);
  w->SetUint32(a + "vocab_size", static_cast<uint32_t>(hp.n_vocab));
  if (hp.rope_linear_scale != 1.0f) {
    w->SetString(a + "rope.scaling.type", "linear");
    w->SetFloat32(a + "rope.scaling.factor", hp.rope_linear_scale);
  }
  // Llama 3 rope scaling travels as the rope_freqs.weight tensor (added by the caller).
}

Status SetTokenizerMetadata(const TokenizerSpec& spec, const std::string& chat_template,
                            GgufWriter* w) {
  if (spec.kind != TokenizerKind::kByteLevelBpe) {
    return Unimplemented(
        "only byte-level BPE tokenizers (GPT-2 family) can be written to GGUF so far");
  }
  if (spec.byte_level_prefix_space || !spec.unicode_normalization.empty()) {
    return Unimplemented(
        "tokenizer.json: ByteLevel add_prefix_space or a Unicode normalizer has no GGUF "
        "equivalent");
  }
  // The pre-tokenizer by the name llama.cpp gives it: the first preset with the same regexes.
  std::string pre;
  for (const char* name :
       {"gpt2", "smollm", "llama-bpe", "dbrx", "qwen2", "tekken", "gpt-4o", "bloom", "viking"}) {
    auto p = tokenizer_internal::PresetForName(name);
    if (p.ok() && p->patterns == spec.pre_regexes && p->ignore_merges == spec.ignore_merges) {
      pre = name;
      break;
    }
  }
  if (pre.empty()) {
    std::string list;
    for (const std::string& r : spec.pre_regexes) list += (list.empty() ? "" : ", ") + r;
    return Unimplemented("tokenizer.json: no GGUF pre-tokenizer name has these split regexes: " +
                         list);
  }
  w->SetString("tokenizer.ggml.model", "gpt2");
  w->SetString("tokenizer.ggml.pre", pre);
  w->SetStringArray("tokenizer.ggml.tokens", spec.tokens);
  std::vector<int32_t> types = spec.token_types;
  types.resize(spec.tokens.size(), 1);
  w->SetInt32Array("tokenizer.ggml.token_type", types);
  std::vector<std::string> merges;
  merges.reserve(spec.merges.size());
  for (const auto& [l, r] : spec.merges) {
    std::string m = l;
    m += ' ';
    m += r;
    merges.push_back(std::move(m));
  }
  w->SetStringArray("tokenizer.ggml.merges", std::move(merges));
  auto id = [&](const char* key, int32_t v) {
    if (v >= 0) w->SetUint32(key, static_cast<uint32_t>(v));
  };
  id("tokenizer.ggml.bos_token_id", spec.bos_id);
  id("tokenizer.ggml.eos_token_id", spec.eos_id);
  id("tokenizer.ggml.unknown_token_id", spec.unk_id);
  id("tokenizer.ggml.padding_token_id", spec.pad_id);
  for (int32_t e : spec.eog_ids) {
    if (e != spec.eos_id) {
      id("tokenizer.ggml.eot_token_id", e);
      break;
    }
  }
  w->SetBool("tokenizer.ggml.add_bos_token", spec.add_bos);
  w->SetBool("tokenizer.ggml.add_eos_token", spec.add_eos);
  if (!chat_template.empty()) w->SetString("tokenizer.chat_template", chat_template);
  return Status::Ok();
}

StatusOr<std::vector<int64_t>> QkRowOrder(int64_t rows, int64_t n_head) {
  if (rows <= 0 || n_head <= 0 || rows % n_head != 0 || (rows / n_head) % 2 != 0) {
    return InvalidArgument("Q/K rows (" + std::to_string(rows) + ") do not split into " +
                           std::to_string(n_head) + " heads of an even size");
  }
  const int64_t hd = rows / n_head, half = hd / 2;
  std::vector<int64_t> from(static_cast<size_t>(rows));
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t s = 0; s < 2; ++s) {
      for (int64_t j = 0; j < half; ++j)
        from[static_cast<size_t>(h * hd + 2 * j + s)] = h * hd + s * half + j;
    }
  }
  return from;
}

StatusOr<std::vector<uint8_t>> PermuteQkRows(std::span<const uint8_t> data, int64_t rows,
                                             int64_t n_head) {
  FRUGAL_ASSIGN_OR_RETURN(const std::vector<int64_t> from, QkRowOrder(rows, n_head));
  if (data.size() % static_cast<size_t>(rows) != 0)
    return InvalidArgument("Q/K data is not a whole number of rows");
  const size_t row_bytes = data.size() / static_cast<size_t>(rows);
  std::vector<uint8_t> out(data.size());
  for (size_t to = 0; to < from.size(); ++to) {
    std::memcpy(out.data() + to * row_bytes,
                data.data() + static_cast<size_t>(from[to]) * row_bytes, row_bytes);
  }
  return out;
}

}  // namespace frugal
