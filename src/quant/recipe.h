// Quantization recipes: which type each tensor becomes, by rules over GGUF tensor names.
//
// A recipe file is YAML (docs/quantization.md documents every field):
//
//   name: mixed-int4-int8
//   rules:                          # the first rule whose pattern matches a tensor wins
//     - match: "blk.*.attn_*.weight"  # shell glob over GGUF names (fnmatch)
//       type: int8                  # int8 | int4 | int4_sym | q4_k | q5_k | q6_k | q5_0 | q5_1
//                                   # | f16 | f32 | keep
//       group_size: 128             # 32 | 64 | 128; int8 also 0 = one scale per row
//   default: keep                   # tensors no rule matches (default: keep)
//
// One-dimensional tensors (norms, biases) always stay F32 whatever the rules say. When a
// tensor's row length is not a multiple of the group size, the largest of 128/64/32 that
// divides it is used and the choice says so (SmolLM2's 576-wide rows take 64); a tensor whose
// rows cannot be tiled (row count not a multiple of 8, or no group divides) falls back to F16.
// A K-quant rule on rows whose length is not a multiple of 256 falls back as llama-quantize's
// does: q4_k -> q5_0, q5_k -> q5_1, q6_k -> int8 g32 (Q8_0 in llama.cpp's files).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/tensor_types.h"
#include "frugal/status.h"
#include "kernels/quantize.h"

namespace frugal {

// What a rule asks a tensor to become: kept as stored, F32, F16, or an integer format of one of
// the kinds of kernels/quantize.h (the recipe's names: int8, int4 = kInt4Asym, int4_sym).
// kGguf: a GGUF block type on its own grid (src/quant/gguf_grid.h; the recipe's names q4_k,
// q5_k, q6_k, q5_0, q5_1), which stock llama.cpp reads and Frugal re-lays at load.
enum class WeightStorage { kKeep, kF32, kF16, kInt, kGguf };
struct WeightKind {
  WeightStorage storage = WeightStorage::kKeep;
  IntKind int_kind = IntKind::kInt8;   // storage kInt only
  TensorType gguf = TensorType::kF32;  // storage kGguf only

  bool is_int() const { return storage == WeightStorage::kInt; }
  bool is_gguf() const { return storage == WeightStorage::kGguf; }
  bool operator==(const WeightKind&) const = default;
};

struct RecipeRule {
  std::string match;
  WeightKind kind;  // keep
  int group_size = 128;
};

struct Recipe {
  std::string name;
  std::vector<RecipeRule> rules;
  WeightKind fallback;  // keep

  // The recipe as YAML (stored in the output's metadata, so a file says how it was made).
  std::string ToYaml() const;
};

StatusOr<Recipe> ParseRecipe(std::string_view yaml);
StatusOr<Recipe> LoadRecipe(const std::string& path);
// Built-in recipes: mixed-int4-int8 (the default), all-int4, all-int8, f16, f32.
StatusOr<Recipe> PresetRecipe(std::string_view name);
std::vector<std::string> PresetNames();
// Sets every INT rule's group size (the CLI's --group-size).
void OverrideGroupSize(Recipe& recipe, int group_size);

struct TensorChoice {
  TensorType type = TensorType::kF32;
  bool keep = false;      // copy the source tensor as it is
  bool quantize = false;  // a Frugal INT type, made by the chosen method
  std::string note;       // why the type differs from what the rule asked, if it does
};

// The type of tensor `name` of shape [cols, rows] (GGUF order), stored as `source`.
TensorChoice ChooseType(const Recipe& recipe, std::string_view name, int n_dims, int64_t cols,
                        int64_t rows, TensorType source);
// The Frugal type of an integer kind at a group size (0: per channel, INT8 only).
StatusOr<TensorType> IntType(IntKind kind, int group_size);
const char* WeightKindName(WeightKind kind);

}  // namespace frugal
