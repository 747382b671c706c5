// A semantic-cache lookup through each backend, side by side in one run: the embedded cache
// (in-process HNSW) against Redis with RediSearch (a network round trip, KNN and range search).
// Embedding is taken out (a table of precomputed 384-dim vectors), so the figures are the
// backend's own: insert time, lookup p50/p99 and the hit rate of near-repeat queries.
//
//   scripts/redis-stack.sh --port 6390 --dir /tmp/redis-bench &
//   build/bench/cache_backend_bench --redis 127.0.0.1:6390 [--entries 10000] [--queries 2000]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/redis_cache.h"
#include "cache/semantic_cache.h"

namespace {

using Clock = std::chrono::steady_clock;
using frugal::StatusOr;
using namespace frugal::cache;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? 0
             : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Texts with known vectors: "entry N" stored, "entry N again" a near repeat (cosine ~0.97).
class TableEmbedder : public Embedder {
 public:
  TableEmbedder(int dim, size_t n, uint32_t seed) : dim_(dim) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g;
    for (size_t i = 0; i < n; ++i) {
      std::vector<float> v(static_cast<size_t>(dim)), near(static_cast<size_t>(dim));
      for (auto& x : v) x = g(rng);
      Normalize(v);
      for (size_t k = 0; k < v.size(); ++k)
        near[k] = v[k] + 0.25f * g(rng) / std::sqrt(static_cast<float>(dim));
      Normalize(near);
      table_["entry " + std::to_string(i)] = std::move(v);
      table_["entry " + std::to_string(i) + " again"] = std::move(near);
    }
  }
  StatusOr<std::vector<float>> Embed(std::string_view text) override {
    auto it = table_.find(std::string(text));
    if (it == table_.end()) return frugal::NotFound("not in the table");
    return it->second;
  }
  int dim() const override { return dim_; }
  const std::string& name() const override { return name_; }

 private:
  int dim_;
  std::string name_ = "table";
  std::unordered_map<std::string, std::vector<float>> table_;
};

// Near repeats ("entry i again") by default; exact repeats ("entry i") when `exact`.
void Run(const char* what, Cache& c, size_t entries, size_t queries, bool exact = false) {
  const std::string scope = ScopeKey({"bench", "m", "", "t=0"});
  const auto t0 = Clock::now();
  for (size_t i = 0; i < entries; ++i) {
    auto st = c.Insert(scope, "bench", "entry " + std::to_string(i), "answer " + std::to_string(i));
    if (!st.ok()) {
      std::fprintf(stderr, "%s: insert failed: %s\n", what, st.ToString().c_str());
      return;
    }
  }
  const double insert_ms = Ms(t0, Clock::now());
  std::vector<double> total, search;
  size_t hits = 0;
  std::mt19937 rng(7);
  for (size_t q = 0; q < queries; ++q) {
    const size_t i = rng() % entries;
    const auto a = Clock::now();
    auto r = c.Lookup(scope, "bench", "entry " + std::to_string(i) + (exact ? "" : " again"));
    total.push_back(Ms(a, Clock::now()));
    if (r.ok()) {
      search.push_back(r->search_ms);
      if (r->hit && r->response == "answer " + std::to_string(i)) ++hits;
    }
  }
  std::printf("| %-32s | %7zu | %8.3f | %8.3f | %8.3f | %8.3f | %8.3f | %6.4f |\n", what, entries,
              insert_ms / static_cast<double>(entries), Pct(search, 0.5), Pct(search, 0.99),
              Pct(total, 0.5), Pct(total, 0.99),
              static_cast<double>(hits) / static_cast<double>(queries));
}

}  // namespace

int main(int argc, char** argv) {
  std::string redis;
  size_t entries = 10000, queries = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--redis") {
      redis = v;
    } else if (k == "--entries") {
      entries = std::stoul(v);
    } else if (k == "--queries") {
      queries = std::stoul(v);
    } else {
      std::fprintf(stderr, "cache_backend_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  auto emb = std::make_shared<TableEmbedder>(384, entries, 1);
  std::printf(
      "%zu entries (384-dim, one scope), %zu near-repeat lookups (cosine ~0.97), one client "
      "thread\n\n",
      entries, queries);
  std::printf(
      "| backend                          | entries | insert ms | search p50 ms | search p99 ms | "
      "lookup p50 ms | lookup p99 ms | hit rate |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  CacheOptions co;
  co.capacity = entries * 2;
  for (bool exact_repeats : {false, true}) {  // each row on a fresh cache
    auto c = SemanticCache::Open(emb, co);
    if (!c.ok()) return 1;
    Run(exact_repeats ? "embedded, exact repeats" : "embedded (in-process)", **c, entries, queries,
        exact_repeats);
  }
  if (redis.empty()) {
    std::printf("\n(no --redis: the Redis rows are skipped)\n");
    return 0;
  }
  // KNN with the exact-text shortcut (the default: a near repeat pays its HMGET first), KNN
  // without it, the shortcut's own case, and the range query.
  struct Row {
    const char* what;
    RedisSearch mode;
    bool exact_match, exact_repeats;
  };
  const Row rows[] = {{"Redis, KNN", RedisSearch::kKnn, true, false},
                      {"Redis, KNN, no exact shortcut", RedisSearch::kKnn, false, false},
                      {"Redis, exact repeats", RedisSearch::kKnn, true, true},
                      {"Redis, VECTOR_RANGE", RedisSearch::kRange, true, false}};
  for (const Row& row : rows) {
    const RedisSearch mode = row.mode;
    RedisCacheOptions ro;
    ro.cache = co;
    ro.cache.exact_match = row.exact_match;
    auto addr = ParseRedisAddress(redis);
    if (!addr.ok()) {
      std::fprintf(stderr, "cache_backend_bench: %s\n", addr.status().message().c_str());
      return 2;
    }
    ro.redis = *addr;
    ro.search = mode;
    ro.prefix = "bench:" + std::to_string(&row - rows);  // each row on its own index
    auto c = RedisCache::Open(emb, ro);
    if (!c.ok()) {
      std::fprintf(stderr, "cache_backend_bench: %s\n", c.status().message().c_str());
      return 1;
    }
    (*c)->Clear();
    Run(row.what, **c, entries, queries, row.exact_repeats);
    (*c)->Clear();
  }
  return 0;
}
