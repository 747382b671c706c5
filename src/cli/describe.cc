#include "cli/describe.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace frugal {
namespace {

std::string HumanBytes(size_t b) {
  char buf[64];
  if (b >= (size_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1 << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  }
  return buf;
}

// What `frugal quantize` recorded in the file (frugal.quant.*), as "key: value" pairs.
std::vector<std::pair<std::string, std::string>> QuantMetadata(const ModelSource& source) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!source.is_gguf()) return out;
  const std::string_view prefix = "frugal.quant.";
  for (const auto& [key, v] : source.gguf()->metadata()) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string value;
    if (v.type == GgufValueType::kString) {
      value = std::string(v.str);
    } else if (v.type == GgufValueType::kArray) {
      for (const auto& s : v.strings) {
        if (!value.empty()) value += ',';
        value.append(s);
      }
    } else {
      value = std::to_string(v.integer);
    }
    out.emplace_back(key.substr(prefix.size()), std::move(value));
  }
  return out;
}

double BitsPerWeight(const ModelInfo& info) {
  return info.parameters > 0
             ? 8.0 * static_cast<double>(info.weight_bytes) / static_cast<double>(info.parameters)
             : 0;
}

}  // namespace

std::string DescribeModelText(const ModelInfo& info, const ModelSource& source, bool tensors,
                              const std::string& not_loadable) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  add("model:         %s\n", info.path.c_str());
  add("name:          %s\n", info.name.c_str());
  add("format:        %s\n", info.format.c_str());
  if (!not_loadable.empty()) {
    add("architecture:  %s\n", info.architecture.c_str());
    add("loadable:      no: %s\n", not_loadable.c_str());
  } else {
    add("architecture:  %s (%s)\n", info.architecture.c_str(),
        info.kind == ModelKind::kDecoder ? "decoder" : "encoder");
    add("layers:        %lld\n", static_cast<long long>(info.n_layer));
    add("embedding:     %lld\n", static_cast<long long>(info.n_embd));
    add("heads:         %lld (kv %lld)\n", static_cast<long long>(info.n_head),
        static_cast<long long>(info.n_head_kv));
    add("feed-forward:  %lld\n", static_cast<long long>(info.n_ff));
    add("vocabulary:    %lld\n", static_cast<long long>(info.n_vocab));
    add("context:       %lld (trained %lld)\n", static_cast<long long>(info.context_length),
        static_cast<long long>(info.train_context));
    if (!info.chat_format.empty()) add("chat template: %s\n", info.chat_format.c_str());
    if (!info.kv_type.empty()) {
      add("kv cache:      %s, %lld bytes per position\n", info.kv_type.c_str(),
          static_cast<long long>(info.kv_bytes_per_position));
    }
  }
  add("parameters:    %.1f M\n", static_cast<double>(info.parameters) / 1e6);
  add("size:          %s (%.2f bits/weight)\n", HumanBytes(info.weight_bytes).c_str(),
      BitsPerWeight(info));
  std::map<std::string, std::pair<int, size_t>> by_type;
  for (const auto* t : source.AllTensors()) {
    auto& e = by_type[TypeName(t->type)];
    ++e.first;
    e.second += t->nbytes;
  }
  const auto quant = QuantMetadata(source);
  if (!quant.empty()) {
    std::map<std::string, std::string> q(quant.begin(), quant.end());
    add("quantized:     %s, recipe %s", q["method"].c_str(), q["recipe_name"].c_str());
    if (!q["scale_fit"].empty())
      add(", %s scales", q["scale_fit"] == "search" ? "searched" : "min-max");
    if (!q["calib_tokens"].empty()) {
      add(", calibration %s tokens (sha256 %s)", q["calib_tokens"].c_str(),
          q["calib_sha256"].c_str());
    }
    if (!q["raised_to_int8"].empty()) add(", raised to INT8: %s", q["raised_to_int8"].c_str());
    if (!q["regrouped_to_g32"].empty())
      add(", regrouped to g32: %s", q["regrouped_to_g32"].c_str());
    out += "\n";
  }
  out += "tensor types: ";
  for (const auto& [type, e] : by_type)
    add(" %s x%d (%s)", type.c_str(), e.first, HumanBytes(e.second).c_str());
  out += "\n";
  if (tensors) {
    out += "tensors:\n";
    for (const auto* t : source.AllTensors()) {
      add("  %-48s %-9s %-22s %10zu bytes %6.3f bits/weight\n", t->name.c_str(),
          TypeName(t->type).c_str(), t->ShapeString().c_str(), t->nbytes,
          8.0 * static_cast<double>(t->nbytes) / static_cast<double>(t->elements()));
    }
  }
  return out;
}

std::string DescribeModelJson(const ModelInfo& info, const ModelSource& source,
                              const std::string& not_loadable) {
  nlohmann::json j;
  j["loadable"] = not_loadable.empty();
  if (!not_loadable.empty()) j["not_loadable_reason"] = not_loadable;
  j["path"] = info.path;
  j["name"] = info.name;
  j["format"] = info.format;
  j["architecture"] = info.architecture;
  j["kind"] = info.kind == ModelKind::kDecoder ? "decoder" : "encoder";
  j["n_layer"] = info.n_layer;
  j["n_embd"] = info.n_embd;
  j["n_head"] = info.n_head;
  j["n_head_kv"] = info.n_head_kv;
  j["n_ff"] = info.n_ff;
  j["n_vocab"] = info.n_vocab;
  j["context_length"] = info.context_length;
  j["train_context_length"] = info.train_context;
  j["chat_format"] = info.chat_format;
  if (!info.kv_type.empty()) {
    j["kv_type"] = info.kv_type;
    j["kv_bytes_per_position"] = info.kv_bytes_per_position;
  }
  j["parameters"] = info.parameters;
  j["size_bytes"] = info.weight_bytes;
  j["bits_per_weight"] = BitsPerWeight(info);
  const auto quant = QuantMetadata(source);
  if (!quant.empty()) {
    auto& q = j["quantization"] = nlohmann::json::object();
    for (const auto& [k, v] : quant) q[k] = v;
  }
  auto& arr = j["tensors"] = nlohmann::json::array();
  for (const auto* t : source.AllTensors()) {
    nlohmann::json shape = nlohmann::json::array();
    for (int d = 0; d < t->n_dims; ++d) shape.push_back(t->ne[d]);
    arr.push_back(
        {{"name", t->name}, {"type", TypeName(t->type)}, {"shape", shape}, {"bytes", t->nbytes}});
  }
  return j.dump();
}

}  // namespace frugal
