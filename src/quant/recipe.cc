#include "quant/recipe.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace frugal {
namespace {

struct KindName {
  WeightKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {{WeightStorage::kKeep}, "keep"},
    {{WeightStorage::kF32}, "f32"},
    {{WeightStorage::kF16}, "f16"},
    {{WeightStorage::kInt, IntKind::kInt8}, "int8"},
    {{WeightStorage::kInt, IntKind::kInt4Asym}, "int4"},
    {{WeightStorage::kInt, IntKind::kInt4Sym}, "int4_sym"},
    {{WeightStorage::kGguf, IntKind::kInt4Asym, TensorType::kQ4_K}, "q4_k"},
    {{WeightStorage::kGguf, IntKind::kInt5Asym, TensorType::kQ5_K}, "q5_k"},
    {{WeightStorage::kGguf, IntKind::kInt6Sym, TensorType::kQ6_K}, "q6_k"},
    {{WeightStorage::kGguf, IntKind::kInt5Sym, TensorType::kQ5_0}, "q5_0"},
    {{WeightStorage::kGguf, IntKind::kInt5Asym, TensorType::kQ5_1}, "q5_1"}};

StatusOr<WeightKind> ParseKind(const std::string& s, const std::string& where) {
  for (const KindName& k : kKinds) {
    if (s == k.name) return k.kind;
  }
  return InvalidArgument(where + ": type '" + s +
                         "' is not one of keep, f32, f16, int8, int4, int4_sym, q4_k, q5_k, q6_k, "
                         "q5_0, q5_1");
}

Status CheckGroup(IntKind kind, int g, const std::string& where) {
  if (g == 32 || g == 64 || g == 128 || (g == 0 && kind == IntKind::kInt8)) return Status::Ok();
  return InvalidArgument(
      where + ": group_size " + std::to_string(g) +
      (kind == IntKind::kInt8 ? " is not 0, 32, 64 or 128" : " is not 32, 64 or 128"));
}

Status CheckKeys(const YAML::Node& node, std::initializer_list<const char*> allowed,
                 const std::string& where) {
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) return InvalidArgument(where + ": unknown key '" + key + "'");
  }
  return Status::Ok();
}

}  // namespace

const char* WeightKindName(WeightKind kind) {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

StatusOr<TensorType> IntType(IntKind kind, int g) {
  const int gi = g == 32 ? 0 : g == 64 ? 1 : g == 128 ? 2 : -1;
  switch (kind) {
    case IntKind::kInt8:
      if (g == 0) return TensorType::kI8_C;
      if (gi >= 0)
        return static_cast<TensorType>(static_cast<uint32_t>(TensorType::kI8_G32) +
                                       static_cast<uint32_t>(gi));
      break;
    case IntKind::kInt4Asym:
      if (gi >= 0)
        return static_cast<TensorType>(static_cast<uint32_t>(TensorType::kI4A_G32) +
                                       static_cast<uint32_t>(gi));
      break;
    case IntKind::kInt4Sym:
      if (gi >= 0)
        return static_cast<TensorType>(static_cast<uint32_t>(TensorType::kI4S_G32) +
                                       static_cast<uint32_t>(gi));
      break;
    case IntKind::kInt5Sym:  // GGUF grids only (WeightStorage::kGguf)
    case IntKind::kInt5Asym:
    case IntKind::kInt6Sym:
      break;
  }
  return InvalidArgument(std::string(WeightKindName({WeightStorage::kInt, kind})) +
                         " has no group size " + std::to_string(g));
}

StatusOr<Recipe> ParseRecipe(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument("recipe is not valid YAML: " + std::string(e.what()));
  }
  if (!root.IsMap()) return InvalidArgument("recipe must be a YAML mapping with a 'rules' list");
  FRUGAL_RETURN_IF_ERROR(CheckKeys(root, {"name", "rules", "default"}, "recipe"));
  Recipe r;
  try {
    r.name = root["name"] ? root["name"].as<std::string>() : "custom";
    if (root["default"]) {
      FRUGAL_ASSIGN_OR_RETURN(r.fallback,
                              ParseKind(root["default"].as<std::string>(), "recipe default"));
    }
    if (r.fallback.is_int())
      return InvalidArgument(
          "recipe default must be keep, f32 or f16 (INT types need a rule with a group size)");
    const YAML::Node rules = root["rules"];
    if (!rules || !rules.IsSequence() || rules.size() == 0)
      return InvalidArgument("recipe needs a non-empty 'rules' list");
    for (size_t i = 0; i < rules.size(); ++i) {
      const std::string where = "recipe rule " + std::to_string(i + 1);
      const YAML::Node n = rules[i];
      if (!n.IsMap()) return InvalidArgument(where + " must be a mapping with match and type");
      FRUGAL_RETURN_IF_ERROR(CheckKeys(n, {"match", "type", "group_size"}, where));
      if (!n["match"] || !n["type"]) return InvalidArgument(where + " needs 'match' and 'type'");
      RecipeRule rule;
      rule.match = n["match"].as<std::string>();
      if (rule.match.empty()) return InvalidArgument(where + ": empty match pattern");
      FRUGAL_ASSIGN_OR_RETURN(rule.kind, ParseKind(n["type"].as<std::string>(), where));
      rule.group_size = n["group_size"] ? n["group_size"].as<int>() : 128;
      if (rule.kind.is_int())
        FRUGAL_RETURN_IF_ERROR(CheckGroup(rule.kind.int_kind, rule.group_size, where));
      r.rules.push_back(std::move(rule));
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument("recipe: " + std::string(e.what()));
  }
  return r;
}

StatusOr<Recipe> LoadRecipe(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read recipe " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = ParseRecipe(ss.str());
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

std::vector<std::string> PresetNames() {
  return {"mixed-int4-int8", "all-int4", "all-int8", "f16", "f32"};
}

StatusOr<Recipe> PresetRecipe(std::string_view name) {
  std::string yaml;
  if (name == "mixed-int4-int8") {
    yaml = R"(name: mixed-int4-int8
rules:
  - {match: "blk.*.attn_*.weight", type: int8, group_size: 128}
  - {match: "blk.*.ffn_*.weight", type: int4, group_size: 128}
  - {match: "token_embd.weight", type: int8, group_size: 128}
  - {match: "output.weight", type: int8, group_size: 128}
)";
  } else if (name == "all-int4") {
    yaml = R"(name: all-int4
rules:
  - {match: "blk.*.weight", type: int4, group_size: 128}
  - {match: "token_embd.weight", type: int8, group_size: 128}
  - {match: "output.weight", type: int8, group_size: 128}
)";
  } else if (name == "all-int8") {
    yaml = R"(name: all-int8
rules:
  - {match: "*.weight", type: int8, group_size: 128}
)";
  } else if (name == "f16" || name == "f32") {
    yaml = "name: " + std::string(name) +
           "\nrules:\n  - {match: \"*\", type: " + std::string(name) + "}\n";
  } else {
    return InvalidArgument("unknown preset '" + std::string(name) +
                           "' (presets: mixed-int4-int8, all-int4, all-int8, f16, f32)");
  }
  return ParseRecipe(yaml);
}

void OverrideGroupSize(Recipe& recipe, int group_size) {
  for (RecipeRule& r : recipe.rules) {
    if (r.kind.is_int() && !(r.kind.int_kind == IntKind::kInt8 && r.group_size == 0))
      r.group_size = group_size;
  }
}

std::string Recipe::ToYaml() const {
  std::string s = "name: " + name + "\nrules:\n";
  for (const RecipeRule& r : rules) {
    s += "  - {match: \"" + r.match + "\", type: " + WeightKindName(r.kind);
    if (r.kind.is_int()) s += ", group_size: " + std::to_string(r.group_size);
    s += "}\n";
  }
  s += "default: " + std::string(WeightKindName(fallback)) + "\n";
  return s;
}

namespace {

// A GGUF grid type for rows of `cols` inputs; where the rows do not divide into its blocks,
// llama-quantize's fallback for the type (Q6_K's is Q8_0, written by Frugal as INT8 g32).
TensorChoice ChooseGgufType(TensorType type, int64_t cols, int64_t rows) {
  TensorChoice c;
  c.type = type;
  c.quantize = true;
  const bool k_quant =
      type == TensorType::kQ4_K || type == TensorType::kQ5_K || type == TensorType::kQ6_K;
  if (k_quant && cols % kQKK != 0) {
    c.type = type == TensorType::kQ4_K   ? TensorType::kQ5_0
             : type == TensorType::kQ5_K ? TensorType::kQ5_1
                                         : TensorType::kI8_G32;
    c.note = TypeName(type) + " -> " + (c.type == TensorType::kI8_G32 ? "Q8_0" : TypeName(c.type)) +
             ": " + std::to_string(cols) + " inputs are not a multiple of 256";
    if (c.type == TensorType::kI8_G32 && rows % kTileRows != 0) {
      c.type = TensorType::kF16;
      c.quantize = false;
      c.note += "; F16: " + std::to_string(rows) + " rows are not a multiple of 8";
    }
  }
  if (cols % kQK != 0) {
    c.type = TensorType::kF16;
    c.quantize = false;
    c.note = "F16: " + std::to_string(cols) + " inputs are not a multiple of 32";
  }
  return c;
}

}  // namespace

TensorChoice ChooseType(const Recipe& recipe, std::string_view name, int n_dims, int64_t cols,
                        int64_t rows, TensorType source) {
  TensorChoice c;
  if (n_dims < 2) {
    c.type = TensorType::kF32;  // norms and biases: tiny, and where precision matters most
    return c;
  }
  const std::string n(name);
  WeightKind kind = recipe.fallback;
  int group = 128;
  for (const RecipeRule& r : recipe.rules) {
    if (fnmatch(r.match.c_str(), n.c_str(), 0) == 0) {
      kind = r.kind;
      group = r.group_size;
      break;
    }
  }
  switch (kind.storage) {
    case WeightStorage::kKeep:
      c.keep = true;
      c.type = source;
      return c;
    case WeightStorage::kF32:
      c.type = TensorType::kF32;
      return c;
    case WeightStorage::kF16:
      c.type = TensorType::kF16;
      return c;
    case WeightStorage::kGguf:
      return ChooseGgufType(kind.gguf, cols, rows);
    case WeightStorage::kInt:
      break;
  }
  if (rows % kTileRows != 0) {
    c.type = TensorType::kF16;
    c.note = "F16: " + std::to_string(rows) + " rows are not a multiple of 8";
    return c;
  }
  int g = group;
  if (g == 0 && cols % 32 != 0) {
    c.type = TensorType::kF16;
    c.note = "F16: per-channel INT8 needs a multiple of 32 inputs, not " + std::to_string(cols);
    return c;
  }
  if (g > 0 && cols % g != 0) {
    g = 0;
    for (int cand : {128, 64, 32}) {
      if (cand <= group && cols % cand == 0) {
        g = cand;
        break;
      }
    }
    if (g == 0) {
      c.type = TensorType::kF16;
      c.note = "F16: no group size divides " + std::to_string(cols) + " inputs";
      return c;
    }
    c.note = "g" + std::to_string(group) + " -> g" + std::to_string(g) + ": " +
             std::to_string(cols) + " inputs";
  }
  c.type = *IntType(kind.int_kind, g);
  c.quantize = true;
  return c;
}

}  // namespace frugal
