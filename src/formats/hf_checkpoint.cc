#include "formats/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "common/mmap_file.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t IntOr(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}
double NumOr(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string StrOr(const json& j, const char* key, std::string fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}
bool BoolOr(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

StatusOr<HfConfig> ParseHfConfig(std::string_view json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("config.json is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return InvalidArgument("config.json is not a JSON object");
  HfConfig c;
  c.model_type = StrOr(j, "model_type", "");
  if (auto it = j.find("architectures"); it != j.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_string()) c.architectures.push_back(a.get<std::string>());
    }
  }
  c.vocab_size = IntOr(j, "vocab_size", 0);
  c.hidden_size = IntOr(j, "hidden_size", 0);
  c.intermediate_size = IntOr(j, "intermediate_size", 0);
  c.num_hidden_layers = IntOr(j, "num_hidden_layers", 0);
  c.num_attention_heads = IntOr(j, "num_attention_heads", 0);
  c.num_key_value_heads = IntOr(j, "num_key_value_heads", c.num_attention_heads);
  c.head_dim = IntOr(j, "head_dim", 0);
  c.max_position_embeddings = IntOr(j, "max_position_embeddings", 0);
  c.type_vocab_size = IntOr(j, "type_vocab_size", 0);
  c.rms_norm_eps = NumOr(j, "rms_norm_eps", 1e-6);
  c.layer_norm_eps = NumOr(j, "layer_norm_eps", 1e-12);
  c.rope_theta = NumOr(j, "rope_theta", 10000.0);
  c.tie_word_embeddings = BoolOr(j, "tie_word_embeddings", false);
  c.attention_bias = BoolOr(j, "attention_bias", false);
  c.hidden_act = StrOr(j, "hidden_act", "");
  c.bos_token_id = IntOr(j, "bos_token_id", -1);
  c.pad_token_id = IntOr(j, "pad_token_id", -1);
  if (auto it = j.find("eos_token_id"); it != j.end()) {
    if (it->is_number_integer()) {
      c.eos_token_id = it->get<int64_t>();
      c.eos_token_ids.push_back(c.eos_token_id);
    } else if (it->is_array()) {
      for (const auto& e : *it) {
        if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
      }
      if (!c.eos_token_ids.empty()) c.eos_token_id = c.eos_token_ids.front();
    }
  }
  if (auto it = j.find("rope_scaling"); it != j.end() && it->is_object()) {
    c.rope_scaling.type = StrOr(*it, "rope_type", StrOr(*it, "type", ""));
    c.rope_scaling.factor = NumOr(*it, "factor", 1.0);
    c.rope_scaling.low_freq_factor = NumOr(*it, "low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = NumOr(*it, "high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings =
        IntOr(*it, "original_max_position_embeddings", 0);
    if (c.rope_scaling.type == "default") c.rope_scaling.type.clear();
  }
  return c;
}

StatusOr<std::unique_ptr<HfCheckpoint>> HfCheckpoint::Open(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("no such model folder: " + dir);
  auto ckpt = std::unique_ptr<HfCheckpoint>(new HfCheckpoint());
  ckpt->dir_ = dir;
  const fs::path root(dir);

  auto config_text = ReadFileToString((root / "config.json").string());
  if (!config_text.ok())
    return NotFound(dir + " has no config.json: not a Hugging Face checkpoint");
  auto config = ParseHfConfig(*config_text);
  if (!config.ok()) return config.status().WithContext(dir);
  ckpt->config_ = std::move(config).value();

  // Shards: the index file names them; otherwise every *.safetensors in the folder.
  std::vector<std::string> shard_names;
  const fs::path index_path = root / "model.safetensors.index.json";
  if (fs::exists(index_path, ec)) {
    FRUGAL_ASSIGN_OR_RETURN(std::string index_text, ReadFileToString(index_path.string()));
    std::set<std::string> names;
    try {
      const json index = json::parse(index_text);
      const json& map = index.at("weight_map");
      for (auto it = map.begin(); it != map.end(); ++it)
        names.insert(it.value().get<std::string>());
    } catch (const json::exception& e) {
      return InvalidArgument(index_path.string() + ": malformed index: " + e.what());
    }
    for (const auto& n : names) {
      if (n.find('/') != std::string::npos || n.find("..") != std::string::npos) {
        return InvalidArgument(index_path.string() + ": shard name '" + n + "' leaves the folder");
      }
      shard_names.push_back(n);
    }
  } else {
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.path().extension() == ".safetensors")
        shard_names.push_back(entry.path().filename());
    }
    std::sort(shard_names.begin(), shard_names.end());
  }
  if (shard_names.empty()) return NotFound(dir + " has no *.safetensors weights");
  for (const auto& name : shard_names) {
    FRUGAL_ASSIGN_OR_RETURN(auto shard, SafetensorsFile::Open((root / name).string()));
    for (const auto& t : shard->tensors()) {
      if (!ckpt->index_.emplace(t.name, &t).second) {
        return DataLoss("tensor '" + t.name + "' appears in two shards of " + dir);
      }
    }
    ckpt->shards_.push_back(std::move(shard));
  }

  if (auto t = ReadFileToString((root / "tokenizer.json").string()); t.ok()) {
    ckpt->tokenizer_json_ = std::move(t).value();
  }
  if (auto t = ReadFileToString((root / "tokenizer_config.json").string()); t.ok()) {
    ckpt->tokenizer_config_json_ = std::move(t).value();
    try {
      const json tc = json::parse(ckpt->tokenizer_config_json_);
      if (auto it = tc.find("chat_template"); it != tc.end() && it->is_string()) {
        ckpt->chat_template_ = it->get<std::string>();
      }
    } catch (const json::exception& e) {
      return InvalidArgument(dir + "/tokenizer_config.json is not valid JSON: " + e.what());
    }
  }
  if (auto t = ReadFileToString((root / "sentence_bert_config.json").string()); t.ok()) {
    try {
      const json sb = json::parse(*t);
      ckpt->sentence_max_seq_length_ = IntOr(sb, "max_seq_length", 0);
    } catch (const json::exception& e) {
      return InvalidArgument(dir + "/sentence_bert_config.json is not valid JSON: " + e.what());
    }
  }
  if (auto t = ReadFileToString((root / "config_sentence_transformers.json").string()); t.ok()) {
    try {
      const json st = json::parse(*t);
      if (auto p = st.find("prompts"); p != st.end() && p->is_object()) {
        ckpt->sentence_query_prompt_ = StrOr(*p, "query", "");
      }
    } catch (const json::exception& e) {
      return InvalidArgument(dir +
                             "/config_sentence_transformers.json is not valid JSON: " + e.what());
    }
  }
  if (auto t = ReadFileToString((root / "1_Pooling" / "config.json").string()); t.ok()) {
    json pc;
    try {
      pc = json::parse(*t);
    } catch (const json::exception& e) {
      return InvalidArgument(dir + "/1_Pooling/config.json is not valid JSON: " + e.what());
    }
    // Newer files name the mode; older ones set one pooling_mode_*_tokens flag (several at
    // once means their outputs concatenated).
    std::string mode = StrOr(pc, "pooling_mode", "");
    if (mode.empty()) {
      int set = 0;
      for (const auto& [key, name] : {std::pair{"pooling_mode_cls_token", "cls"},
                                      {"pooling_mode_mean_tokens", "mean"},
                                      {"pooling_mode_max_tokens", "max"},
                                      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
                                      {"pooling_mode_weightedmean_tokens", "weightedmean"},
                                      {"pooling_mode_lasttoken", "lasttoken"}}) {
        if (BoolOr(pc, key, false)) {
          mode = name;
          ++set;
        }
      }
      if (set > 1) mode = "concatenated";
    }
    ckpt->sentence_pooling_ = mode;
  }
  return ckpt;
}

const TensorView* HfCheckpoint::FindTensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<const TensorView*> HfCheckpoint::AllTensors() const {
  std::vector<const TensorView*> out;
  for (const auto& s : shards_) {
    for (const auto& t : s->tensors()) out.push_back(&t);
  }
  return out;
}

size_t HfCheckpoint::total_bytes() const {
  size_t n = 0;
  for (const auto* t : AllTensors()) n += t->nbytes;
  return n;
}

}  // namespace frugal
