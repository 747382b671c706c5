// What a loaded (or merely inspected) model is: the public description `Engine::info()` returns
// and `frugal info` prints. Plain data; filled by the models layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace frugal {

enum class ModelKind { kDecoder, kEncoder };

struct ModelInfo {
  std::string path;
  std::string architecture;  // "llama", "qwen2", "bert"
  std::string name;          // general.name or the folder name
  std::string format;        // "gguf" or "safetensors"
  ModelKind kind = ModelKind::kDecoder;
  int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_ff = 0;
  int64_t context_length = 0;  // of this engine
  int64_t train_context = 0;   // the model's own
  size_t weight_bytes = 0;     // all tensors in the file(s)
  int64_t parameters = 0;
  std::string chat_format;  // "chatml", "llama3", "" for encoders
  // Encoders: "int8" when INT8 weights keep every calibration sentence's embedding at cosine
  // >= 0.995 to the float one (int8_min_cosine: the lowest seen), else "f32".
  std::string embedding_precision;
  double int8_min_cosine = 0;
  // Encoders: the text retrieval models want in front of a query ("query: " for
  // multilingual-e5; "" for most).
  std::string query_prefix;
  // Decoders: how the KV cache stores keys and values ("f16" or "f32") and the bytes one
  // position takes in it (keys and values of every layer).
  std::string kv_type;
  int64_t kv_bytes_per_position = 0;
};

}  // namespace frugal
