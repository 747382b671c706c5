#include "cache/embedder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cache/vector_index.h"
#include "common/sha256.h"
#include "tokenizer/tokenizer.h"

namespace frugal::cache {
namespace {

class EngineEmbedder : public Embedder {
 public:
  EngineEmbedder(std::shared_ptr<Engine> e, std::shared_ptr<Engine> long_e, int64_t short_tokens)
      : engine_(std::move(e)),
        long_engine_(std::move(long_e)),
        short_tokens_(short_tokens),
        name_(engine_->info().name + "@" + engine_->info().path),
        dim_(static_cast<int>(engine_->info().n_embd)),
        prefix_(engine_->info().query_prefix),
        fingerprint_(ModelFingerprint(engine_->info().path)) {}

  StatusOr<std::vector<float>> Embed(std::string_view text) override {
    std::string input = prefix_;
    input.append(text);
    Engine* e = engine_.get();
    if (long_engine_) {
      FRUGAL_ASSIGN_OR_RETURN(int64_t n, engine_->CountEmbedTokens(input));
      if (n > short_tokens_) e = long_engine_.get();
    }
    EmbedOptions o;
    o.whole_text = true;
    FRUGAL_ASSIGN_OR_RETURN(std::vector<float> v, e->Embed(input, o));
    if (static_cast<int>(v.size()) != dim_)
      return Internal("the encoder returned a vector of the wrong size");
    Normalize(v);
    return v;
  }
  int dim() const override { return dim_; }
  const std::string& name() const override { return name_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  double UnknownShare(std::string_view text) const override {
    const int32_t unk = engine_->tokenizer().spec().unk_id;
    if (unk < 0) return 0;
    auto ids = engine_->Tokenize(text, /*add_special=*/false, /*parse_special=*/false);
    if (!ids.ok() || ids->empty()) return 0;
    const auto n = std::count(ids->begin(), ids->end(), unk);
    return static_cast<double>(n) / static_cast<double>(ids->size());
  }

 private:
  std::shared_ptr<Engine> engine_, long_engine_;
  int64_t short_tokens_;
  std::string name_;
  int dim_;
  std::string prefix_;
  std::string fingerprint_;
};

}  // namespace

std::string ModelFingerprint(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path weights = model_path;
  if (fs::is_directory(weights, ec)) {
    weights = fs::path(model_path) / "model.safetensors";
    if (!fs::exists(weights, ec)) {
      weights.clear();
      for (const auto& entry : fs::directory_iterator(model_path, ec)) {
        if (entry.path().extension() == ".safetensors" &&
            (weights.empty() || entry.path() < weights))
          weights = entry.path();
      }
    }
  }
  if (weights.empty()) return "";
  std::ifstream f(weights, std::ios::binary);
  if (!f) return "";
  std::string head(4u << 20, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  const auto size = fs::file_size(weights, ec);
  Sha256 h;
  h.Update(head);
  return "sha256-4m:" + h.HexDigest() + ":" + std::to_string(ec ? 0 : size);
}

StatusOr<std::shared_ptr<Embedder>> OpenEngineEmbedder(const std::string& model_path, int threads) {
  EngineOptions eo;
  eo.model_path = model_path;
  eo.threads = threads;
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> short_lane, Engine::Open(eo));
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> long_lane, Engine::Open(eo));
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Embedder> e,
                          NewEngineEmbedder(std::shared_ptr<Engine>(std::move(short_lane)),
                                            std::shared_ptr<Engine>(std::move(long_lane))));
  return std::shared_ptr<Embedder>(std::move(e));
}

StatusOr<std::unique_ptr<Embedder>> NewEngineEmbedder(std::shared_ptr<Engine> engine,
                                                      std::shared_ptr<Engine> long_engine,
                                                      int64_t short_tokens) {
  auto encoder = [](const Engine* e) {
    return e != nullptr && e->info().kind == ModelKind::kEncoder;
  };
  if (!encoder(engine.get()) || (long_engine && !encoder(long_engine.get()))) {
    return InvalidArgument("the semantic cache needs an embedding (encoder) model");
  }
  return std::unique_ptr<Embedder>(
      new EngineEmbedder(std::move(engine), std::move(long_engine), short_tokens));
}

}  // namespace frugal::cache
