// Query embeddings for the semantic cache, computed in process.
//
// Thread safety: Embed may be called from any thread (EngineEmbedder serialises on the
// engine's mutex).
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
  // A unit-length vector of dim() floats.
  virtual StatusOr<std::vector<float>> Embed(std::string_view text) = 0;
  virtual int dim() const = 0;
  // Identifies the model: snapshots made with another embedder are re-embedded on load.
  virtual const std::string& name() const = 0;
  // Share of the text's tokens the model cannot see (its tokenizer's unknown token): a text
  // in a script the model was not trained on embeds as noise (all-MiniLM-L6-v2 maps most
  // Chinese characters to [UNK], so any two Chinese questions score ~1.0).
  virtual double UnknownShare(std::string_view /*text*/) const { return 0; }
};

// An encoder model loaded by the engine (all-MiniLM-L6-v2, bge-small, ...).
StatusOr<std::unique_ptr<Embedder>> NewEngineEmbedder(std::shared_ptr<Engine> engine);

}  // namespace frugal::cache
