#include "gateway/cache/embedder.h"

#include "gateway/cache/vector_index.h"

namespace frugal::cache {
namespace {

class EngineEmbedder : public Embedder {
 public:
  explicit EngineEmbedder(std::shared_ptr<Engine> e)
      : engine_(std::move(e)), name_(engine_->info().name + "@" + engine_->info().path),
        dim_(static_cast<int>(engine_->info().n_embd)) {}

  StatusOr<std::vector<float>> Embed(std::string_view text) override {
    FRUGAL_ASSIGN_OR_RETURN(std::vector<float> v, engine_->Embed(text));
    if (static_cast<int>(v.size()) != dim_) return Internal("the encoder returned a vector of the wrong size");
    Normalize(v);
    return v;
  }
  int dim() const override { return dim_; }
  const std::string& name() const override { return name_; }

 private:
  std::shared_ptr<Engine> engine_;
  std::string name_;
  int dim_;
};

}  // namespace

StatusOr<std::unique_ptr<Embedder>> NewEngineEmbedder(std::shared_ptr<Engine> engine) {
  if (!engine || engine->info().kind != ModelKind::kEncoder) {
    return InvalidArgument("the semantic cache needs an embedding (encoder) model");
  }
  return std::unique_ptr<Embedder>(new EngineEmbedder(std::move(engine)));
}

}  // namespace frugal::cache
