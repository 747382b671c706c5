// Engine internals shared by the files of src/engine (the scheduler runs the model directly).
// Not part of the public API.
#pragma once

#include <memory>
#include <mutex>

#include "common/thread_pool.h"
#include "frugal/engine.h"
#include "models/bert.h"
#include "models/kv_cache.h"
#include "models/llama.h"
#include "models/model_source.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace frugal {

struct Engine::Impl {
  std::unique_ptr<ModelSource> source;
  std::unique_ptr<Tokenizer> tokenizer;
  ChatTemplate chat;
  std::unique_ptr<LlamaModel> llama;
  std::unique_ptr<BertModel> bert;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<KvCache> kv;  // the CLI paths' contiguous cache, made on first use
  int64_t n_ctx = 0;
  int64_t embed_max_tokens = 0;
  std::mutex mu;  // one call at a time

  KvCache& Kv() {
    if (!kv) kv = llama->NewKvCache(n_ctx);
    return *kv;
  }
};

// How the files of src/engine reach an Engine's internals (a friend of Engine).
struct EngineAccess {
  using Impl = Engine::Impl;
  static Engine::Impl& Of(Engine& engine) { return *engine.impl_; }
};

}  // namespace frugal
