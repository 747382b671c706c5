// RedisCache's internals, shared by its two sources: redis_cache.cc (opening, the store the
// lookup pipeline runs on, invalidation) and redis_rotation.cc (rotations, to new HNSW
// parameters or a new embedding model). Callers include redis_cache.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/lookup.h"
#include "cache/redis_cache.h"
#include "cache/redis_client.h"
#include "cache/switch_gate.h"
#include "common/thread_annotations.h"

namespace frugal::cache {

// The entries in Redis and their index; the pipeline (lookup.h) decides hits over it.
struct RedisCache::Impl : CacheStore {
  using SteadyClock = std::chrono::steady_clock;

  RedisCacheOptions opt;
  // The embedding model and the hash field that holds its vectors ("v"; "v1", "v2", ... after
  // rotations to new models). Operations copy it.
  struct Model {
    std::shared_ptr<Embedder> embedder;
    std::string field = "v";
  };
  mutable Mutex model_mu;
  Model model FRUGAL_GUARDED_BY(model_mu);
  // During a rotation to a new model: inserts write its vector too.
  std::optional<Model> next FRUGAL_GUARDED_BY(model_mu);
  // Every lookup and insert holds a pass from its model snapshot to its last Redis reply; a
  // rotation switches models only with none in flight, so no operation searches one model's
  // field on the other's index.
  SwitchGate gate;
  // Verifiers by embedder (each embedder has its own calibration); the options' verifier, when
  // set, serves every model.
  Mutex verifier_mu;
  std::unordered_map<std::string, std::shared_ptr<const HitVerifier>> verifiers
      FRUGAL_GUARDED_BY(verifier_mu);  // by fingerprint
  mutable RedisClient redis;
  std::atomic<bool> ready{false};  // the meta check passed and the alias exists
  std::mutex ensure_mu;
  std::mutex rotate_mu;
  Mutex hnsw_mu;
  HnswParams hnsw FRUGAL_GUARDED_BY(hnsw_mu);  // what the next index is built with
  std::atomic<int64_t> rotations{0};
  std::atomic<int64_t> last_log_ms{0};
  // The entries gauge: FT.INFO costs tens of ms on a large index, so a scrape reuses a count
  // younger than kEntriesGaugeMaxAge (redis_cache.cc) instead of asking again.
  std::mutex gauge_mu;
  SteadyClock::time_point gauge_at{};
  double gauge_entries = 0;

  CacheMetrics cm;
  MetricsRegistry::Counter* backend_errors = nullptr;
  LookupPipeline pipeline{*this, opt.cache, cm};

  explicit Impl(RedisCacheOptions o) : opt(std::move(o)), redis(opt.redis), hnsw(opt.cache.hnsw) {}

  static int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static std::string Blob(std::span<const float> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }

  // The verifier of embedder e (made once per fingerprint), or the options' one.
  std::shared_ptr<const HitVerifier> VerifierFor(const std::shared_ptr<Embedder>& e);

  std::string Key(const std::string& scope, std::string_view query) const {
    std::string k = scope;
    k += '\x1f';
    k.append(query);
    return opt.prefix + ":e:" + HashHex(k);
  }
  std::string Alias() const { return opt.prefix + ":idx"; }
  Model Current() const {
    MutexLock l(model_mu);
    return model;
  }

  // Counts a failed Redis operation; logs it, at most every 5 s (an outage is also logged by
  // the client when it begins and ends).
  void Failed(const char* op, const Status& st);

  std::vector<std::string> CreateIndexArgs(const std::string& name, const HnswParams& p,
                                           const Model& md) const;

  // Makes sure the prefix belongs to this embedding model and the alias points at an index;
  // creates the first index when there is none. Cheap once done (until Redis loses the index).
  Status EnsureReady();

  // Polls FT.INFO until the index has read every hash under the prefix, or the deadline.
  bool WaitIndexed(const std::string& name, SteadyClock::time_point deadline,
                   std::chrono::milliseconds every);

  // A command on the alias; when Redis lost the index (a restart without persistence), it is
  // recreated and the command tried once more.
  StatusOr<RedisReply> OnIndex(const std::vector<std::string>& argv);

  // Keys of the entries a query matches (NOCONTENT), in pages, until none is left; each page
  // is unlinked before the next is asked for.
  StatusOr<size_t> UnlinkMatching(const std::string& query);

  // CacheStore. Lookups and inserts hold a pass through `gate` in their lease.
  std::unique_ptr<ModelLease> Lease(bool for_insert) override;
  StatusOr<std::optional<StoredEntry>> GetExact(const std::string& scope,
                                                std::string_view query) override;
  StatusOr<std::vector<StoredEntry>> Search(const ModelLease& lease, const std::string& scope,
                                            std::span<const float> vector, size_t k_nearest,
                                            float threshold) override;
  void Touch(const StoredEntry& /*entry*/) override {}  // Redis evicts by its own LRU
  Status Put(const ModelLease& lease, const std::string& scope, std::string_view ns,
             std::string_view query, std::string_view response, std::vector<float> vector,
             const std::vector<float>* next_vector) override;

  // Gives every entry under the prefix that lacks md.field its vector by md's embedder (the
  // entry's query embedded again), in pages of SCAN; never recreates a key removed meanwhile.
  // Returns how many it wrote.
  StatusOr<size_t> Backfill(
      const Model& md, const std::function<void()>& keepalive = [] {});

  // Removes `field` from every entry (the vectors of a model no index reads any more).
  Status DropField(const std::string& field);

  // Re-embedding every entry takes as long as it takes (about 400 entries/s per two cores with
  // MiniLM): `keepalive` extends the rotation lock, and the index gets rotation_timeout after
  // each pass to finish.
  Status RotateToModel(const std::shared_ptr<Embedder>& embedder, const HnswParams& p,
                       const std::function<void()>& keepalive);
};

}  // namespace frugal::cache
