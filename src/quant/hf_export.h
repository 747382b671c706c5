// What writing a Hugging Face Llama-family checkpoint (llama, mistral, qwen2) as GGUF takes, for
// `frugal quantize` on a checkpoint folder: GGUF tensor names, the hyper-parameters and the
// tokenizer as GGUF metadata, and llama.cpp's Q/K row order for arch llama.
//
// The output follows llama.cpp's converter: llama and mistral become arch "llama", whose rotary
// embedding turns adjacent pairs, so the rows of Q and K (weights and biases) are permuted per
// head from transformers' rotate-half order; qwen2 stays "qwen2" (half-split pairs, no
// permutation).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/gguf_writer.h"
#include "frugal/status.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "tokenizer/tokenizer.h"

namespace frugal {

struct NamedTensor {
  std::string name;  // GGUF name
  const TensorView* tensor = nullptr;
};

// Every tensor of the source under its GGUF name, in the source's order. An HF tensor without a
// GGUF name is refused, except rotary_emb.inv_freq (the frequencies follow from the config).
StatusOr<std::vector<NamedTensor>> GgufNamedTensors(const ModelSource& src);

// The GGUF architecture an HF model type is written as ("llama" for llama and mistral).
StatusOr<std::string> GgufArchForHf(const std::string& model_type);
bool PermutesQk(const std::string& gguf_arch);

// general.* and the {arch}.* hyper-parameters, from the loaded model's `hp` (HF source).
void SetHfModelMetadata(const std::string& gguf_arch, const std::string& name,
                        const LlamaHParams& hp, GgufWriter* w);

// tokenizer.ggml.* for a byte-level BPE tokenizer (the GPT-2 family: SmolLM, Llama 3, Qwen2,
// ...), its pre-tokenizer named as llama.cpp names it. Other kinds, and pre-tokenizers that have
// no GGUF name, are Unimplemented.
Status SetTokenizerMetadata(const TokenizerSpec& spec, const std::string& chat_template,
                            GgufWriter* w);

// llama.cpp's Q/K row order per head, from transformers' rotate-half order: output row
// h*hd + 2j + s is input row h*hd + s*hd/2 + j; from[output row] = input row.
StatusOr<std::vector<int64_t>> QkRowOrder(int64_t rows, int64_t n_head);
// That order applied to a row-major matrix or bias (F32/F16/BF16: rows are contiguous bytes;
// Frugal's tiled types are permuted before packing instead).
StatusOr<std::vector<uint8_t>> PermuteQkRows(std::span<const uint8_t> data, int64_t rows,
                                             int64_t n_head);

}  // namespace frugal
