// `frugal quantize --target vllm`: a quantized Hugging Face Llama-family checkpoint written back as
// a Hugging Face folder in GPTQ's v1 checkpoint layout (AutoGPTQ's and GPTQModel's "gptq"
// format), which vLLM and transformers load (docs/quantization.md, "--target vllm").
//
// Frugal's group formats hold exactly GPTQ's values, so the quantization is Frugal's own (RTN,
// GPTQ, AWQ) and only the layout changes:
//   - INT8 (value q * d, q in [-127, 127]) is GPTQ 8-bit symmetric: stored q + 128, zero 128;
//   - INT4 symmetric (value (q - 8) * d) is GPTQ 4-bit symmetric: stored q, zero 8;
//   - INT4 asymmetric quantized on integer zero points (QuantFormat::integer_zero, value
//     q * d + m with m = -z * d) is GPTQ 4-bit asymmetric: stored q, zero z.
// Per-channel INT8 (a float scale per row) has no GPTQ equivalent (fp16 scales) and is refused.
// Thread-compatible: plain functions over immutable inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/tensor_types.h"
#include "frugal/status.h"
#include "quant/quantizer.h"

namespace frugal {

// A quantized Linear's scheme in GPTQ's terms.
struct GptqScheme {
  int bits = 4;
  int64_t group = 128;  // inputs per scale
  bool sym = false;

  auto operator<=>(const GptqScheme&) const = default;
  // "gptq int4 g128 asym"
  std::string Name() const;
};

// The scheme that holds exactly the values of a Frugal type; InvalidArgument for the per-channel
// INT8 type and for non-Frugal types.
StatusOr<GptqScheme> GptqSchemeOf(TensorType type);

// One Linear in GPTQ's v1 layout. Integers are packed 32 / bits to an int32, the first element
// in the lowest bits.
struct GptqLinear {
  GptqScheme scheme;
  int64_t in = 0, out = 0;
  std::vector<int32_t> qweight;  // [in / (32 / bits)][out]: packed along the inputs
  std::vector<int32_t> qzeros;   // [in / group][out / (32 / bits)]: z - 1 (v1), packed along outs
  std::vector<uint16_t> scales;  // [in / group][out], fp16
  std::vector<int32_t> g_idx;    // [in]: i / group (groups stay contiguous: no act-order shuffle)
};

// A matrix of Frugal type `type`, rows = output features and cols = inputs, as UnpackRows gives
// it (q[r * cols + c], scale and, for I4A, offset [r * groups + g]), in GPTQ's layout. Every
// weight keeps its value: scales * (stored - z) == Frugal's value, bit for bit in float32.
// InvalidArgument for an I4A group not on integer zero points (quantized for another target)
// and for shapes GPTQ cannot pack (outputs not a multiple of 32 / bits).
StatusOr<GptqLinear> PackGptq(TensorType type, int64_t rows, int64_t cols, const int8_t* q,
                              const float* scale, const float* offset);

struct GptqExportOptions {
  std::string source_dir;  // the Hugging Face folder that was quantized (-m)
  std::string output_dir;  // written as output_dir + ".tmp", then renamed
  // Recorded in quantization_config.meta (how the model was made).
  std::string method;     // rtn | gptq | awq | awq+gptq
  std::string scale_fit;  // search | minmax
  double damp = 0.01;     // GPTQ's damping (quantization_config.damp_percent)
  // Most tensor bytes per safetensors shard (--shard-size; Hugging Face's default, 5 GB): more
  // and the weights are model-0000N-of-0000M.safetensors with model.safetensors.index.json;
  // within it, one model.safetensors. A tensor larger than this gets a shard of its own.
  size_t shard_bytes = 5'000'000'000;
};

// What was written.
struct GptqExportReport {
  GptqScheme base;                             // quantization_config's bits / group_size / sym
  std::map<std::string, std::string> dynamic;  // the "dynamic" overrides: pattern -> scheme
  // Every Linear of the layers (HF module name) -> its scheme's name, or "unquantized (F16)"...
  std::map<std::string, std::string> modules;
  std::map<std::string, int> formats;  // scheme name -> Linears
  std::vector<std::string> notes;      // e.g. a tensor written as F32 where the source was BF16
  size_t safetensors_bytes = 0;        // every shard file's size, headers included
  size_t shards = 0;                // 1: model.safetensors; more: model-0000N-of-0000M.safetensors
  std::string quantization_config;  // the JSON object, as written into config.json
};

// Fails (InvalidArgument) when `dir` cannot become the output folder: it exists and is not an
// empty directory, or its parent is not writable. Checked before the work.
Status CheckGptqOutputDir(const std::string& dir);

// Writes the folder: the weights (model.safetensors, or shards of at most o.shard_bytes with
// model.safetensors.index.json, made one tensor at a time as they are written: each quantized
// Linear as .qweight, .qzeros, .scales and .g_idx; every other tensor as the source has it, under
// its source name and dtype: a tensor the method changed, e.g. an AWQ-rescaled norm, keeps the
// source dtype when that is exact and is F32 otherwise), config.json with quantization_config (and
// torch_dtype float16, the type GPTQ kernels compute in), quantize_config.json, and the source's
// other files (tokenizer, generation config, chat template, ...) unchanged. `m` must come from that
// source with QuantizeOptions::integer_zero. q/k/v and gate/up (which vLLM fuses into one layer)
// must share a scheme. The base scheme is the one with the most weights (among the asymmetric ones
// when there are any: vLLM picks its kernels from the base fields alone); the others become
// "dynamic" overrides, unquantized Linears negative ones. Nothing is left behind on failure.
StatusOr<GptqExportReport> WriteGptqFolder(const QuantizedModel& m, const Raise& raise,
                                           const GptqExportOptions& o);

}  // namespace frugal
