// Semantic-cache search latency and recall: HNSW (hnswlib, the cache's parameters) against exact
// search, one search thread, over N entries of one of two kinds (--data):
//  - gaussian (default): N random unit vectors, queried with vectors near stored ones (a cache's
//    repeats: each query is a stored vector plus Gaussian noise of --noise per dimension). All
//    distances concentrate near cosine 0: HNSW's worst case.
//  - cs: the --model's embeddings of N distinct synthetic customer-service questions
//    (bench/cs_corpus.h), queried with the embedding of a repeat of a stored question: half
//    paraphrases (same intent and slots, other words), half light edits (a greeting, lower case).
//    Embedding a million questions takes a while, so the vectors are kept in --vectors FILE and
//    reused when it matches (model, seed and count).
// With --model it also times the embedding of a ~20-token query, embed + search, the verifier on
// a candidate pair, and whole SemanticCache lookups (embed + search + verify) of paraphrases and
// light edits of stored questions. --embed-threads sets the embedding engine's threads.
//
//   build/bench/cache_bench --sizes 10000,100000 [--dim 384] [--queries 1000] [--noise 0.05]
//                           [--threshold 0.92] [--ef 32,64,128] [--model models/all-minilm-l6-v2]
//                           [--data gaussian|cs] [--vectors FILE] [--embed-workers 2] [--m 16]
//
// Prints one line per size and ef_search (the same index and queries for every ef): build
// time, exact p50/p99, HNSW p50/p99 (ms), recall@1 over all queries; "hit recall": recall@1
// over the queries whose exact nearest entry is at or above the threshold, the only ones whose
// answer the cache would serve (for the others both searches give a miss); "hit r1@4": over
// those, the share where the exact nearest is among HNSW's 4 candidates (the cache checks all
// four with its guard); "miss gap": the median cosine by which HNSW's first result trails the
// exact nearest when they differ (near-duplicate entries give tiny gaps).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cache/decision.h"
#include "cache/embedder.h"
#include "cache/semantic_cache.h"
#include "cache/vector_index.h"
#include "cache/verifier.h"
#include "cs_corpus.h"
#include "frugal/engine.h"
#include "frugal/status.h"
#include "kernels/cpu.h"

namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// "10000,100000" -> {10000, 100000}
std::vector<size_t> NumberList(const std::string& v) {
  std::vector<size_t> out;
  for (size_t p = 0; p < v.size();) {
    const size_t c = v.find(',', p);
    out.push_back(std::stoul(v.substr(p, c - p)));
    p = c == std::string::npos ? v.size() : c + 1;
  }
  return out;
}

// The cs corpus: the first n distinct questions of CsCorpus(seed), and their corpus indexes.
std::vector<uint64_t> DistinctQuestions(const frugal::bench::CsCorpus& corpus, size_t n) {
  std::unordered_set<std::string> seen;
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; ids.size() < n; ++i) {
    if (seen.insert(corpus.Question(i)).second) ids.push_back(i);
  }
  return ids;
}

// Embeds texts(0..n-1) with `workers` single-threaded engines side by side (for throughput: one
// short text per engine keeps both cores busy without per-op synchronisation), with progress on
// stderr. Row i of the result is text i's unit vector.
frugal::StatusOr<std::vector<float>> EmbedAll(const std::string& model, int workers, size_t n,
                                              int dim,
                                              const std::function<std::string(size_t)>& text) {
  std::vector<std::unique_ptr<frugal::cache::Embedder>> emb;
  for (int w = 0; w < workers; ++w) {
    frugal::EngineOptions o;
    o.model_path = model;
    o.threads = 1;
    auto engine = frugal::Engine::Open(o);
    if (!engine.ok()) return engine.status();
    auto e = frugal::cache::NewEngineEmbedder(
        std::shared_ptr<frugal::Engine>(std::move(engine).value()));
    if (!e.ok()) return e.status();
    if ((*e)->dim() != dim)
      return frugal::InvalidArgument("the model's embeddings are not --dim wide");
    emb.push_back(std::move(e).value());
  }
  std::vector<float> out(n * static_cast<size_t>(dim));
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  const auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int w = 0; w < workers; ++w) {
    th.emplace_back([&, w] {
      for (size_t i; (i = next.fetch_add(1)) < n && !failed;) {
        auto v = emb[static_cast<size_t>(w)]->Embed(text(i));
        if (!v.ok()) {
          failed = true;
          return;
        }
        std::copy(v->begin(), v->end(),
                  out.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(dim)));
        const size_t d = done.fetch_add(1) + 1;
        if (n >= 20000 && d % 10000 == 0) {
          const double s = Ms(t0, Clock::now()) / 1e3;
          std::fprintf(stderr, "\rembedding: %zu / %zu, %.0f s, ETA %.0f s   ", d, n, s,
                       s / static_cast<double>(d) * static_cast<double>(n - d));
        }
      }
    });
  }
  for (auto& x : th) x.join();
  if (n >= 20000) std::fprintf(stderr, "\n");
  if (failed) return frugal::Internal("embedding failed");
  return out;
}

// --vectors FILE: a header line "cache_bench cs <model> <seed> <n> <dim>\n" then n*dim floats.
std::string VectorsHeader(const std::string& model, uint64_t seed, size_t n, int dim) {
  return "cache_bench cs " + model + " " + std::to_string(seed) + " " + std::to_string(n) + " " +
         std::to_string(dim) + "\n";
}

bool LoadVectors(const std::string& path, const std::string& header, std::vector<float>& out) {
  std::ifstream f(path, std::ios::binary);
  std::string line;
  if (!f || !std::getline(f, line) || line + "\n" != header) return false;
  return static_cast<bool>(f.read(reinterpret_cast<char*>(out.data()),
                                  static_cast<std::streamsize>(out.size() * sizeof(float))));
}

void SaveVectors(const std::string& path, const std::string& header, const std::vector<float>& v) {
  std::ofstream f(path + ".tmp", std::ios::binary);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(float)));
  f.close();
  if (f) std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace

// /proc/cpuinfo's model name: every figure says which CPU it comes from.
std::string CpuModelName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {10000, 100000};
  int dim = 384;
  size_t n_queries = 1000;
  float noise = 0.05f, threshold = 0.92f;
  std::vector<size_t> efs;  // ef_search values to try on each index (default: the cache's)
  std::string model, data_kind = "gaussian", vectors_path;
  int workers = 2;
  int embed_threads = 0;             // the embedding engine's threads (0: one per CPU)
  frugal::cache::HnswParams params;  // the cache's defaults unless --m / --ef-construction
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--sizes") {
      sizes = NumberList(v);
    } else if (k == "--dim") {
      dim = std::stoi(v);
    } else if (k == "--queries") {
      n_queries = std::stoul(v);
    } else if (k == "--ef") {
      efs = NumberList(v);
    } else if (k == "--noise") {
      noise = std::stof(v);
    } else if (k == "--threshold") {
      threshold = std::stof(v);
    } else if (k == "--model") {
      model = v;
    } else if (k == "--data") {
      data_kind = v;
    } else if (k == "--vectors") {
      vectors_path = v;
    } else if (k == "--embed-threads") {
      embed_threads = std::atoi(v.c_str());
    } else if (k == "--embed-workers") {
      workers = std::max(1, std::stoi(v));
    } else if (k == "--m") {
      params.m = std::stoul(v);
    } else if (k == "--ef-construction") {
      params.ef_construction = std::stoul(v);
    } else {
      std::fprintf(stderr, "cache_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const bool cs = data_kind == "cs";
  if (!cs && data_kind != "gaussian") {
    std::fprintf(stderr, "cache_bench: --data is gaussian or cs\n");
    return 2;
  }
  if (cs && model.empty()) {
    std::fprintf(stderr, "cache_bench: --data cs needs --model (the embedder)\n");
    return 2;
  }
  if (efs.empty()) efs.push_back(params.ef_search);
  // cs: the corpus's vectors for the largest size, once; each size takes a prefix.
  const uint64_t kSeed = 7;
  const frugal::bench::CsCorpus corpus(kSeed);
  std::vector<uint64_t> question_ids;
  std::vector<float> cs_data;
  if (cs) {
    const size_t n_max = *std::max_element(sizes.begin(), sizes.end());
    question_ids = DistinctQuestions(corpus, n_max);
    cs_data.resize(n_max * static_cast<size_t>(dim));
    const std::string header = VectorsHeader(model, kSeed, n_max, dim);
    if (vectors_path.empty() || !LoadVectors(vectors_path, header, cs_data)) {
      const auto t0 = Clock::now();
      auto v = EmbedAll(model, workers, n_max, dim,
                        [&](size_t i) { return corpus.Question(question_ids[i]); });
      if (!v.ok()) {
        std::fprintf(stderr, "cache_bench: %s\n", v.status().ToString().c_str());
        return 2;
      }
      cs_data = std::move(v).value();
      std::printf("embedded %zu questions in %.0f s (%d single-threaded workers)\n", n_max,
                  Ms(t0, Clock::now()) / 1e3, workers);
      if (!vectors_path.empty()) SaveVectors(vectors_path, header, cs_data);
    }
  }
  if (cs) {
    std::printf("data cs (%s), dim %d, %zu repeat queries", model.c_str(), dim, n_queries);
  } else {
    std::printf("data gaussian, dim %d, %zu queries, noise %.3f", dim, n_queries,
                static_cast<double>(noise));
  }
  std::printf(", HNSW M=%zu ef_construction=%zu, one search thread\n", params.m,
              params.ef_construction);
  std::printf("%10s %9s %11s %11s %5s %10s %10s %9s %10s %8s %10s %10s %9s\n", "entries", "build s",
              "exact p50", "exact p99", "ef", "hnsw p50", "hnsw p99", "recall@1", "query cos",
              "hits", "hit recall", "hit r1@4", "miss gap");
  std::unique_ptr<frugal::cache::VectorIndex> last;  // the largest HNSW index, for embed + search
  size_t last_n = 0;
  for (size_t n : sizes) {
    std::mt19937 rng(42);
    std::normal_distribution<float> g;
    std::vector<float> gauss;
    if (!cs) {
      gauss.resize(n * static_cast<size_t>(dim));
      for (float& x : gauss) x = g(rng);
      for (size_t i = 0; i < n; ++i)
        frugal::cache::Normalize(
            std::span<float>(gauss.data() + i * dim, static_cast<size_t>(dim)));
    }
    const float* data = cs ? cs_data.data() : gauss.data();
    auto row = [&](size_t i) {
      return std::span<const float>(data + i * static_cast<size_t>(dim), static_cast<size_t>(dim));
    };
    auto exact = frugal::cache::NewExactIndex(dim);
    auto hnsw = frugal::cache::NewHnswIndex(dim, params, n);
    std::fprintf(stderr, "building the HNSW index over %zu entries\n", n);
    const auto t0 = Clock::now();
    // Two threads insert (hnswlib builds concurrently), as the cache's inserts arrive.
    std::vector<std::thread> th;
    for (int t = 0; t < 2; ++t) {
      th.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < n; i += 2) (void)hnsw->Add(i, row(i));
      });
    }
    for (auto& x : th) x.join();
    const double build_s = Ms(t0, Clock::now()) / 1e3;
    for (size_t i = 0; i < n; ++i) (void)exact->Add(i, row(i));
    // The queries and their exact answers, once; then HNSW at each ef_search on the same index.
    std::vector<size_t> targets(n_queries);
    for (size_t& t : targets) t = rng() % n;
    std::vector<std::vector<float>> queries(n_queries,
                                            std::vector<float>(static_cast<size_t>(dim)));
    if (cs) {
      auto v = EmbedAll(model, workers, n_queries, dim,
                        [&](size_t k) { return corpus.Repeat(question_ids[targets[k]], k); });
      if (!v.ok()) {
        std::fprintf(stderr, "cache_bench: %s\n", v.status().ToString().c_str());
        return 2;
      }
      for (size_t k = 0; k < n_queries; ++k) {
        std::copy_n(v->begin() + static_cast<std::ptrdiff_t>(k * static_cast<size_t>(dim)), dim,
                    queries[k].begin());
      }
    } else {
      for (size_t k = 0; k < n_queries; ++k) {
        for (int d = 0; d < dim; ++d)
          queries[k][static_cast<size_t>(d)] =
              row(targets[k])[static_cast<size_t>(d)] + noise * g(rng);
        frugal::cache::Normalize(queries[k]);
      }
    }
    std::fprintf(stderr, "timing %zu queries over %zu entries\n", n_queries, n);
    std::vector<frugal::cache::Neighbor> truth(n_queries);
    std::vector<double> te;
    double cos_sum = 0;
    for (size_t k = 0; k < n_queries; ++k) {
      cos_sum += frugal::cache::Similarity(queries[k], row(targets[k]));
      const auto a = Clock::now();
      truth[k] = exact->Search(queries[k], 1)[0];
      te.push_back(Ms(a, Clock::now()));
    }
    for (size_t ef : efs) {
      hnsw->SetEfSearch(ef);
      std::vector<double> th_lat, gaps;
      size_t agree = 0, hits = 0, hits_found = 0, hits_in4 = 0;
      for (size_t k = 0; k < n_queries; ++k) {
        const auto b = Clock::now();
        const auto h = hnsw->Search(queries[k], 4);
        th_lat.push_back(Ms(b, Clock::now()));
        const bool same = !h.empty() && h[0].label == truth[k].label;
        agree += same;
        if (!same)
          gaps.push_back(h.empty() ? 1.0
                                   : static_cast<double>(truth[k].similarity - h[0].similarity));
        if (truth[k].similarity >= threshold) {
          ++hits;
          hits_found += same;
          // The cache checks all k = 4 candidates with the guard: the exact nearest among them.
          hits_in4 += std::any_of(h.begin(), h.end(), [&](const frugal::cache::Neighbor& x) {
            return x.label == truth[k].label;
          });
        }
      }
      const auto nq = static_cast<double>(n_queries);
      const auto nh = static_cast<double>(std::max<size_t>(hits, 1));
      std::printf(
          "%10zu %9.1f %11.3f %11.3f %5zu %10.3f %10.3f %9.4f %10.3f %8zu %10.4f %10.4f %9.5f\n", n,
          build_s, Pct(te, 0.5), Pct(te, 0.99), ef, Pct(th_lat, 0.5), Pct(th_lat, 0.99),
          static_cast<double>(agree) / nq, cos_sum / nq, hits, static_cast<double>(hits_found) / nh,
          static_cast<double>(hits_in4) / nh, gaps.empty() ? 0.0 : Pct(gaps, 0.5));
      std::fflush(stdout);
    }
    hnsw->SetEfSearch(params.ef_search);
    last = std::move(hnsw);
    last_n = n;
  }
  if (!model.empty()) {
    std::printf("cpu: %s, kernels %s\n", CpuModelName().c_str(),
                frugal::CpuLevelName(frugal::ActiveCpuLevel()));
    frugal::EngineOptions o;
    o.model_path = model;
    o.threads = embed_threads;
    auto engine = frugal::Engine::Open(o);
    if (!engine.ok()) {
      std::fprintf(stderr, "cache_bench: %s\n", engine.status().ToString().c_str());
      return 2;
    }
    std::printf("embedder weights: %s (INT8 lowest calibration cosine %.5f)\n",
                (*engine)->info().embedding_precision.c_str(), (*engine)->info().int8_min_cosine);
    auto emb = frugal::cache::NewEngineEmbedder(
        std::shared_ptr<frugal::Engine>(std::move(engine).value()));
    if (!emb.ok()) {
      std::fprintf(stderr, "cache_bench: %s\n", emb.status().ToString().c_str());
      return 2;
    }
    const std::string query =
        "Hi, how long does shipping take to Berlin if I order the blue jacket today?";  // ~20
                                                                                        // tokens
    std::vector<double> lat;
    for (int i = 0; i < 200; ++i) {
      const auto a = Clock::now();
      (void)(*emb)->Embed(query);
      lat.push_back(Ms(a, Clock::now()));
    }
    std::printf("embedding a ~20-token query (%s): p50 %.3f ms, p99 %.3f ms\n", model.c_str(),
                Pct(lat, 0.5), Pct(lat, 0.99));
    if (last != nullptr && dim == (*emb)->dim()) {
      // A cache lookup's two costs in sequence: embed a query, then search the largest index
      // (k = 4, as the cache asks for guard candidates).
      const char* queries[] = {
          "Hi, how long does shipping take to Berlin if I order the blue jacket today?",
          "Can I return the running shoes I bought last week if they are too small?",
          "What is the price of item 1299 and is it in stock in the Munich store?",
          "My order has not arrived yet, the tracking number says it left the warehouse."};
      std::vector<double> both;
      for (int i = 0; i < 200; ++i) {
        const auto a = Clock::now();
        auto v = (*emb)->Embed(queries[i % 4]);
        if (v.ok()) (void)last->Search(*v, 4);
        both.push_back(Ms(a, Clock::now()));
      }
      std::printf("embed + HNSW search over %zu entries: p50 %.3f ms, p99 %.3f ms\n", last_n,
                  Pct(both, 0.5), Pct(both, 0.99));
    }
    // The verifier on a candidate pair (text analysis of both sides + the model), alone.
    std::vector<double> ver;
    const auto cal = frugal::cache::FindCalibration((*emb)->fingerprint());
    const frugal::cache::PairVerifier verifier(
        cal ? std::make_shared<frugal::cache::VerifierCalibration>(*cal) : nullptr);
    for (int i = 0; i < 2000; ++i) {
      const auto a = Clock::now();
      (void)verifier.Decide(frugal::cache::ComputePairFeatures(
          "Hi, how long does shipping take to Berlin if I order the blue jacket today?",
          "how long does delivery to Berlin take if i order the blue jacket today", 0.95f));
      ver.push_back(Ms(a, Clock::now()));
    }
    std::printf("verifier (%s) on a candidate pair: p50 %.4f ms, p99 %.4f ms\n", verifier.name(),
                Pct(ver, 0.5), Pct(ver, 0.99));
    // The learned decision (the default) on a candidate pair whose vectors the lookup has (the
    // query's just embedded, the entry's from the index): vetoes + features + the MLP; and a
    // lookup's embed + decide for a ~20-token query.
    if (const auto* dm = frugal::cache::FindDecisionModel((*emb)->fingerprint())) {
      const frugal::cache::LearnedVerifier learned(
          std::make_shared<frugal::cache::DecisionModel>(*dm), 0.95);
      const std::string qa =
          "Hi, how long does shipping take to Berlin if I order the blue jacket today?";
      const std::string qb =
          "how long does delivery to Berlin take if i order the blue jacket today";
      auto va = (*emb)->Embed(qa), vb = (*emb)->Embed(qb);
      if (va.ok() && vb.ok()) {
        std::vector<double> dec, both;
        for (int i = 0; i < 2000; ++i) {
          const auto a = Clock::now();
          (void)learned.Decide(qa, qb, *va, *vb);
          dec.push_back(Ms(a, Clock::now()));
        }
        for (int i = 0; i < 200; ++i) {
          const auto a = Clock::now();
          auto v = (*emb)->Embed(qa);
          if (v.ok()) (void)learned.Decide(qa, qb, *v, *vb);
          both.push_back(Ms(a, Clock::now()));
        }
        std::printf("learned decision on a candidate pair: p50 %.4f ms, p99 %.4f ms\n",
                    Pct(dec, 0.5), Pct(dec, 0.99));
        std::printf("embed + learned decision, ~20-token query: p50 %.3f ms, p99 %.3f ms\n",
                    Pct(both, 0.5), Pct(both, 0.99));
      }
    }
    // Whole lookups through the cache: 2000 stored questions, then lookups of light edits and
    // paraphrases of them (not the same text: each one embeds, searches and verifies).
    const frugal::bench::CsCorpus corpus(7);
    frugal::cache::CacheOptions co;
    std::shared_ptr<frugal::cache::Embedder> shared(std::move(emb).value());
    auto cache = frugal::cache::SemanticCache::Open(shared, co);
    if (!cache.ok()) {
      std::fprintf(stderr, "cache_bench: %s\n", cache.status().ToString().c_str());
      return 2;
    }
    const std::string scope = frugal::cache::ScopeKey({"bench", "m", "", ""});
    const int stored = 2000;
    for (int i = 0; i < stored; ++i)
      (void)(*cache)->Insert(scope, "bench", corpus.Question(static_cast<uint64_t>(i)), "answer");
    std::vector<double> look;
    int hits = 0;
    for (int i = 0; i < 300; ++i) {
      const std::string q =
          corpus.Repeat(static_cast<uint64_t>(i * 7 % stored), static_cast<uint64_t>(i));
      const auto a = Clock::now();
      auto r = (*cache)->Lookup(scope, "bench", q);
      look.push_back(Ms(a, Clock::now()));
      hits += r.ok() && r->hit;
    }
    std::printf(
        "cache lookup (embed + search + verify) over %d entries: p50 %.3f ms, p99 %.3f ms, %d of "
        "300 hits\n",
        stored, Pct(look, 0.5), Pct(look, 0.99), hits);
  }
  return 0;
}
