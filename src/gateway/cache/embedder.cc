#include "gateway/cache/embedder.h"

#include <algorithm>

#include "gateway/cache/vector_index.h"
#include "tokenizer/tokenizer.h"

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
  double UnknownShare(std::string_view text) const override {
    const int32_t unk = engine_->tokenizer().spec().unk_id;
    if (unk < 0) return 0;
    auto ids = engine_->Tokenize(text, /*add_special=*/false, /*parse_special=*/false);
    if (!ids.ok() || ids->empty()) return 0;
    const auto n = std::count(ids->begin(), ids->end(), unk);
    return static_cast<double>(n) / static_cast<double>(ids->size());
  }

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
