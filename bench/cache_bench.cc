// Semantic-cache search latency and recall: HNSW (hnswlib, the cache's parameters) against exact
// search over N random unit vectors, queried with vectors near stored ones (a cache's repeats:
// each query is a stored vector plus Gaussian noise of --noise per dimension), one thread; and,
// with --model, the embedding time of a ~20-token query.
//
//   build/bench/cache_bench --sizes 10000,100000 [--dim 384] [--queries 1000] [--noise 0.05]
//                           [--threshold 0.92] [--ef 32,64,128] [--model models/all-minilm-l6-v2]
//
// Prints one line per size and ef_search (the same index and queries for every ef): build
// time, exact p50/p99, HNSW p50/p99 (ms), recall@1 over all
// queries, and "hit recall": recall@1 over the queries whose exact nearest entry is at or above
// the threshold, the only ones whose answer the cache would serve (for the others both searches
// give a miss).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "frugal/engine.h"
#include "gateway/cache/embedder.h"
#include "gateway/cache/vector_index.h"

namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

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

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {10000, 100000};
  int dim = 384;
  size_t n_queries = 1000;
  float noise = 0.05f, threshold = 0.92f;
  std::vector<size_t> efs;  // ef_search values to try on each index (default: the cache's)
  std::string model;
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
    } else {
      std::fprintf(stderr, "cache_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const frugal::cache::HnswParams params;  // the cache's defaults
  if (efs.empty()) efs.push_back(params.ef_search);
  std::printf("dim %d, %zu queries, noise %.3f, HNSW M=%zu ef_construction=%zu ef_search=%zu, one search thread\n", dim,
              n_queries, static_cast<double>(noise), params.m, params.ef_construction, params.ef_search);
  std::printf("%10s %9s %11s %11s %5s %10s %10s %9s %10s %8s %10s\n", "entries", "build s", "exact p50", "exact p99", "ef",
              "hnsw p50", "hnsw p99", "recall@1", "query cos", "hits", "hit recall");
  std::unique_ptr<frugal::cache::VectorIndex> last;  // the largest HNSW index, for embed + search
  size_t last_n = 0;
  for (size_t n : sizes) {
    std::mt19937 rng(42);
    std::normal_distribution<float> g;
    std::vector<float> data(n * static_cast<size_t>(dim));
    for (float& x : data) x = g(rng);
    for (size_t i = 0; i < n; ++i) frugal::cache::Normalize(std::span<float>(data.data() + i * dim, static_cast<size_t>(dim)));
    auto exact = frugal::cache::NewExactIndex(dim);
    auto hnsw = frugal::cache::NewHnswIndex(dim, params, n);
    const auto t0 = Clock::now();
    // Two threads insert (hnswlib builds concurrently), as the cache's inserts arrive.
    std::vector<std::thread> th;
    for (int t = 0; t < 2; ++t) {
      th.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < n; i += 2) {
          (void)hnsw->Add(i, std::span<const float>(data.data() + i * dim, static_cast<size_t>(dim)));
        }
      });
    }
    for (auto& x : th) x.join();
    const double build_s = Ms(t0, Clock::now()) / 1e3;
    for (size_t i = 0; i < n; ++i) (void)exact->Add(i, std::span<const float>(data.data() + i * dim, static_cast<size_t>(dim)));
    // The queries and their exact answers, once; then HNSW at each ef_search on the same index.
    std::vector<std::vector<float>> queries(n_queries, std::vector<float>(static_cast<size_t>(dim)));
    std::vector<frugal::cache::Neighbor> truth(n_queries);
    std::vector<double> te;
    double cos_sum = 0;
    for (size_t k = 0; k < n_queries; ++k) {
      std::vector<float>& q = queries[k];
      const size_t target = rng() % n;
      for (int d = 0; d < dim; ++d) q[static_cast<size_t>(d)] = data[target * dim + static_cast<size_t>(d)] + noise * g(rng);
      frugal::cache::Normalize(q);
      double cos = 0;
      for (int d = 0; d < dim; ++d) cos += static_cast<double>(q[static_cast<size_t>(d)]) * data[target * dim + static_cast<size_t>(d)];
      cos_sum += cos;
      const auto a = Clock::now();
      truth[k] = exact->Search(q, 1)[0];
      te.push_back(Ms(a, Clock::now()));
    }
    for (size_t ef : efs) {
      hnsw->SetEfSearch(ef);
      std::vector<double> th_lat;
      size_t agree = 0, hits = 0, hits_found = 0;
      for (size_t k = 0; k < n_queries; ++k) {
        const auto b = Clock::now();
        const auto h = hnsw->Search(queries[k], 4);
        th_lat.push_back(Ms(b, Clock::now()));
        const bool same = !h.empty() && h[0].label == truth[k].label;
        agree += same;
        if (truth[k].similarity >= threshold) {
          ++hits;
          hits_found += same;
        }
      }
      const auto nq = static_cast<double>(n_queries);
      std::printf("%10zu %9.1f %11.3f %11.3f %5zu %10.3f %10.3f %9.4f %10.3f %8zu %10.4f\n", n, build_s, Pct(te, 0.5),
                  Pct(te, 0.99), ef, Pct(th_lat, 0.5), Pct(th_lat, 0.99), static_cast<double>(agree) / nq, cos_sum / nq, hits,
                  hits == 0 ? 0.0 : static_cast<double>(hits_found) / static_cast<double>(hits));
      std::fflush(stdout);
    }
    hnsw->SetEfSearch(params.ef_search);
    last = std::move(hnsw);
    last_n = n;
  }
  if (!model.empty()) {
    frugal::EngineOptions o;
    o.model_path = model;
    auto engine = frugal::Engine::Open(o);
    if (!engine.ok()) {
      std::fprintf(stderr, "cache_bench: %s\n", engine.status().ToString().c_str());
      return 2;
    }
    std::printf("embedder weights: %s (INT8 lowest calibration cosine %.5f)\n", (*engine)->info().embedding_precision.c_str(),
                (*engine)->info().int8_min_cosine);
    auto emb = frugal::cache::NewEngineEmbedder(std::shared_ptr<frugal::Engine>(std::move(engine).value()));
    if (!emb.ok()) {
      std::fprintf(stderr, "cache_bench: %s\n", emb.status().ToString().c_str());
      return 2;
    }
    const std::string query = "Hi, how long does shipping take to Berlin if I order the blue jacket today?";  // ~20 tokens
    std::vector<double> lat;
    for (int i = 0; i < 200; ++i) {
      const auto a = Clock::now();
      (void)(*emb)->Embed(query);
      lat.push_back(Ms(a, Clock::now()));
    }
    std::printf("embedding a ~20-token query (%s): p50 %.3f ms, p99 %.3f ms\n", model.c_str(), Pct(lat, 0.5), Pct(lat, 0.99));
    if (last != nullptr && dim == (*emb)->dim()) {
      // A cache lookup's two costs in sequence: embed a query, then search the largest index
      // (k = 4, as the cache asks for guard candidates).
      const char* queries[] = {"Hi, how long does shipping take to Berlin if I order the blue jacket today?",
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
      std::printf("embed + HNSW search over %zu entries: p50 %.3f ms, p99 %.3f ms\n", last_n, Pct(both, 0.5), Pct(both, 0.99));
    }
  }
  return 0;
}
