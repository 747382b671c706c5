// ApplyQuantTarget: what each reader of the output asks of the recipe (quantizer.h).
#include <filesystem>
#include <string>

#include "quant/quantizer.h"

namespace frugal {
namespace {

// llama.cpp's block types with Frugal's values: 32 inputs per scale (Q8_0, Q4_0, Q4_1).
Status FitLlamaCpp(QuantizeOptions& o, int group_size) {
  if (group_size != 0 && group_size != 32) {
    return InvalidArgument("--target llama.cpp stores groups of 32 (Q8_0 / Q4_0 / Q4_1), not " +
                           std::to_string(group_size));
  }
  OverrideGroupSize(o.recipe, 32);
  for (const RecipeRule& r : o.recipe.rules) {
    if (r.kind.is_int() && r.group_size != 32) {
      return InvalidArgument("--target llama.cpp: rule '" + r.match +
                             "' has one INT8 scale per row, which llama.cpp has no type for");
    }
  }
  return Status::Ok();
}

// --target vllm: a Hugging Face folder in, a Hugging Face folder in GPTQ's layout out. Only the
// layers' Linears are quantized (embeddings and output head stay as the source has them, as
// GPTQ checkpoints keep them), with group scales, and INT4 asymmetric on integer zero points.
Status FitVllm(QuantizeOptions& o) {
  if (!std::filesystem::is_directory(o.input)) {
    return InvalidArgument(
        "--target vllm needs a Hugging Face checkpoint folder as -m (it writes "
        "the folder back in GPTQ's layout), not the file " +
        o.input);
  }
  for (const RecipeRule& r : o.recipe.rules) {
    if (r.kind.is_gguf()) {
      return InvalidArgument("--target vllm: rule '" + r.match + "' asks for " +
                             TypeName(r.kind.gguf) +
                             ", a GGUF block type that GPTQ checkpoints cannot hold (int8, int4 "
                             "or int4_sym)");
    }
    if (r.kind.is_int() && r.group_size == 0) {
      return InvalidArgument("--target vllm: rule '" + r.match +
                             "' has one INT8 scale per row, which GPTQ cannot store (fp16 group "
                             "scales): give it a group_size");
    }
  }
  const WeightKind keep{WeightStorage::kKeep};
  o.recipe.rules.insert(o.recipe.rules.begin(), {RecipeRule{"token_embd.weight", keep, 128},
                                                 RecipeRule{"output.weight", keep, 128}});
  o.integer_zero = true;
  return Status::Ok();
}

}  // namespace

Status ApplyQuantTarget(QuantizeOptions& o, int group_size) {
  switch (o.target) {
    case QuantTarget::kFrugal:
      return Status::Ok();
    case QuantTarget::kLlamaCpp:
      return FitLlamaCpp(o, group_size);
    case QuantTarget::kVllm:
      return FitVllm(o);
  }
  return Status::Ok();
}

}  // namespace frugal
