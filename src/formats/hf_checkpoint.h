// A Hugging Face checkpoint folder: config.json, *.safetensors (one file, or shards listed in
// model.safetensors.index.json), tokenizer.json and tokenizer_config.json.
//
// config.json is parsed into a typed HfConfig here, so no JSON reaches the models. Immutable
// after Open.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/safetensors.h"
#include "frugal/status.h"

namespace frugal {

struct HfRopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "dynamic", "yarn", ...
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;
};

struct HfConfig {
  std::string model_type;  // "llama", "qwen2", "bert", ...
  std::vector<std::string> architectures;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // 0 -> num_attention_heads
  int64_t head_dim = 0;             // 0 -> hidden_size / num_attention_heads
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 0;  // BERT
  double rms_norm_eps = 1e-6;
  double layer_norm_eps = 1e-12;  // BERT
  double rope_theta = 10000.0;
  HfRopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Llama-style q/k/v/o biases
  std::string hidden_act;       // "silu", "gelu", ...
  int64_t bos_token_id = -1;
  int64_t eos_token_id = -1;
  int64_t pad_token_id = -1;           // RoBERTa / XLM-R: positions start after it
  std::vector<int64_t> eos_token_ids;  // when config lists several
};

StatusOr<HfConfig> ParseHfConfig(std::string_view json_text);

class HfCheckpoint {
 public:
  static StatusOr<std::unique_ptr<HfCheckpoint>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const HfConfig& config() const { return config_; }
  const TensorView* FindTensor(std::string_view name) const;
  std::vector<const TensorView*> AllTensors() const;
  size_t total_bytes() const;
  // Raw file contents; empty when the file is absent.
  const std::string& tokenizer_json() const { return tokenizer_json_; }
  const std::string& tokenizer_config_json() const { return tokenizer_config_json_; }
  // The chat_template string of tokenizer_config.json, or "".
  const std::string& chat_template() const { return chat_template_; }
  // sentence-transformers' max_seq_length (sentence_bert_config.json), or 0 when absent.
  int64_t sentence_max_seq_length() const { return sentence_max_seq_length_; }
  // sentence-transformers' pooling (1_Pooling/config.json): "mean", "cls", "max", ... or ""
  // when the folder has none.
  const std::string& sentence_pooling() const { return sentence_pooling_; }
  // sentence-transformers' prompt for queries (config_sentence_transformers.json
  // "prompts"."query", e.g. "query: " for multilingual-e5), or "".
  const std::string& sentence_query_prompt() const { return sentence_query_prompt_; }

 private:
  HfCheckpoint() = default;
  std::string dir_;
  HfConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const TensorView*, std::less<>> index_;
  std::string tokenizer_json_;
  std::string tokenizer_config_json_;
  std::string chat_template_;
  int64_t sentence_max_seq_length_ = 0;
  std::string sentence_pooling_;
  std::string sentence_query_prompt_;
};

}  // namespace frugal
