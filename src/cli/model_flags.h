// Flags every command that opens a model shares (-m, -t, -c, --activations, --kv-type,
// --no-repack), and
// small output helpers of those commands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frugal/engine.h"
#include "frugal/status.h"

namespace frugal::cli {

struct CommonModelFlags {
  std::string model;
  int threads = 0;
  int64_t ctx = 0;
  std::string activations = "int8";
  std::string kv_type = KvCacheName(frugal::EngineOptions{}.kv_type);
  bool no_repack = false;

  static std::string KvCacheName(frugal::KvCacheType t) {
    return t == frugal::KvCacheType::kF16 ? "f16" : "f32";
  }

  void Add(CLI::App* cmd, bool with_ctx = true) {
    cmd->add_option("-m,--model", model, "model: a .gguf file or a Hugging Face folder")
        ->required();
    cmd->add_option("-t,--threads", threads, "compute threads (default: all CPUs)")
        ->check(CLI::Range(0, 1024));
    if (with_ctx)
      cmd->add_option("-c,--ctx", ctx,
                      "context length in tokens (default: the model's, at most 8192)")
          ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd->add_option("--activations", activations,
                    "matmul activations: int8 (default: quantized per 32 for weights with an "
                    "integer kernel, as llama.cpp) or f32 (reference precision, 2-3x slower)")
        ->check(CLI::IsMember({"f32", "int8"}));
    cmd->add_option("--kv-type", kv_type,
                    "KV cache storage: f16 (IEEE half, as llama.cpp: half the memory per position) "
                    "or f32 (reference precision) (default " +
                        kv_type + ")")
        ->check(CLI::IsMember({"f16", "f32"}));
    cmd->add_flag("--no-repack", no_repack,
                  "keep GGUF Q4_0/Q4_1/Q8_0/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K matrices in the file's layout "
                  "instead of "
                  "re-laying them into 8-row tiles (the same values; the row kernels are slower)");
  }
  frugal::StatusOr<std::unique_ptr<frugal::Engine>> Open() const {
    frugal::EngineOptions o;
    o.model_path = model;
    o.threads = threads;
    o.context_length = ctx;
    o.int8_activations = activations == "int8";
    o.repack_weights = !no_repack;
    o.kv_type = kv_type == "f16" ? frugal::KvCacheType::kF16 : frugal::KvCacheType::kF32;
    return frugal::Engine::Open(o);
  }
};

// Writes `v` as raw little-endian float32.
Status WriteFloats(const std::string& path, const std::vector<float>& v);

}  // namespace frugal::cli
