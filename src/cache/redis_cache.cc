#include "cache/redis_cache.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "cache/redis_cache_impl.h"

namespace frugal::cache {
namespace {

using SteadyClock = RedisCache::Impl::SteadyClock;

// Keys per UNLINK: each removal updates the HNSW graphs synchronously (about 1 ms per entry at
// 10k entries), so a batch must stay well inside the command timeout.
constexpr size_t kUnlinkBatch = 100;
constexpr std::chrono::seconds kEntriesGaugeMaxAge{5};

bool IsString(const RedisReply* r) { return r != nullptr && r->type == RedisReply::Type::kString; }

bool IsWrongType(const Status& st) {
  return st.code() == StatusCode::kInternal && st.message().find("WRONGTYPE") != std::string::npos;
}

// A KNN or range result's cosine distance: a number in [0, 2]; nullopt for anything else.
std::optional<float> CosineDistance(const RedisReply& d) {
  if (d.type != RedisReply::Type::kString && d.type != RedisReply::Type::kStatus)
    return std::nullopt;
  const std::string& t = d.str;
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  // RediSearch rounds: a distance a hair outside [0, 2] is still a distance.
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v) ||
      v < -1e-3 || v > 2.001) {
    return std::nullopt;
  }
  return static_cast<float>(v);
}

// RediSearch's error for a name that is neither an index nor an alias.
bool IsUnknownIndex(const Status& st) {
  if (st.code() != StatusCode::kInternal) return false;
  std::string m = st.message();
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m.find("unknown index") != std::string::npos ||
         m.find("no such index") != std::string::npos;
}

}  // namespace

std::shared_ptr<const HitVerifier> RedisCache::Impl::VerifierFor(
    const std::shared_ptr<Embedder>& e) {
  if (opt.cache.verifier) return opt.cache.verifier;
  MutexLock l(verifier_mu);
  auto& v = verifiers[e->fingerprint()];
  if (!v) v = DefaultVerifier(*e, opt.cache.decision);
  return v;
}

void RedisCache::Impl::Failed(const char* op, const Status& st) {
  backend_errors->Add(1, op);
  const int64_t now = WallMs();
  int64_t last = last_log_ms.load();
  if (now - last >= 5000 && last_log_ms.compare_exchange_strong(last, now)) {
    std::fprintf(stderr, "frugal: Redis cache %s failed: %s\n", op, st.message().c_str());
  }
}

std::vector<std::string> RedisCache::Impl::CreateIndexArgs(const std::string& name,
                                                           const HnswParams& p,
                                                           const Model& md) const {
  return {"FT.CREATE",
          name,
          "ON",
          "HASH",
          "PREFIX",
          "1",
          opt.prefix + ":e:",
          "SCHEMA",
          "sh",
          "TAG",
          "nh",
          "TAG",
          md.field,
          "VECTOR",
          "HNSW",
          "12",
          "TYPE",
          "FLOAT32",
          "DIM",
          std::to_string(md.embedder->dim()),
          "DISTANCE_METRIC",
          "COSINE",
          "M",
          std::to_string(p.m),
          "EF_CONSTRUCTION",
          std::to_string(p.ef_construction),
          "EF_RUNTIME",
          std::to_string(p.ef_search)};
}

Status RedisCache::Impl::EnsureReady() {
  if (ready.load()) return Status::Ok();
  std::lock_guard<std::mutex> lock(ensure_mu);
  if (ready.load()) return Status::Ok();
  const std::string meta = opt.prefix + ":meta";
  Model md = Current();
  const std::string dim = std::to_string(md.embedder->dim());
  FRUGAL_ASSIGN_OR_RETURN(auto r, redis.Pipeline({{"HSETNX", meta, "embedder", md.embedder->name()},
                                                  {"HSETNX", meta, "dim", dim},
                                                  {"HSETNX", meta, "field", "v"},
                                                  {"HMGET", meta, "embedder", "dim", "field"}}));
  const RedisReply& got = r[3];
  if (got.elements.size() != 3) return Internal("Redis cache: unexpected HMGET reply");
  if (got.elements[0].Text() != md.embedder->name() || got.elements[1].Text() != dim) {
    return InvalidArgument("Redis prefix '" + opt.prefix + "' holds entries embedded by '" +
                           got.elements[0].Text() + "' (dim " + got.elements[1].Text() +
                           "); this cache embeds with '" + md.embedder->name() + "' (dim " + dim +
                           "): use another prefix, or that model");
  }
  if (got.elements[2].Text() != md.field) {
    MutexLock l(model_mu);
    model.field = md.field = got.elements[2].Text();
  }
  auto info = redis.Command({"FT.INFO", Alias()});
  if (info.ok()) {
    ready = true;
    return Status::Ok();
  }
  if (!IsUnknownIndex(info.status())) return info.status();
  FRUGAL_ASSIGN_OR_RETURN(RedisReply gen, redis.Command({"INCR", opt.prefix + ":gen"}));
  const std::string name = opt.prefix + ":idx:" + std::to_string(gen.integer);
  HnswParams p;
  {
    MutexLock l(hnsw_mu);
    p = hnsw;
  }
  FRUGAL_RETURN_IF_ERROR(redis.Command(CreateIndexArgs(name, p, md)).status());
  auto added = redis.Command({"FT.ALIASADD", Alias(), name});
  if (!added.ok()) {
    // Another replica created the alias first: use its index, drop ours.
    (void)redis.Command({"FT.DROPINDEX", name});
    if (!redis.Command({"FT.INFO", Alias()}).ok()) return added.status();
  } else {
    // Entries written while the index was missing (Redis restarted without its data while
    // writes went on) are indexed in the background: wait briefly so a lookup finds them.
    WaitIndexed(name, SteadyClock::now() + std::chrono::seconds(2), std::chrono::milliseconds(10));
  }
  ready = true;
  return Status::Ok();
}

bool RedisCache::Impl::WaitIndexed(const std::string& name, SteadyClock::time_point deadline,
                                   std::chrono::milliseconds every) {
  for (;;) {
    auto info = redis.Command({"FT.INFO", name});
    if (info.ok()) {
      const RedisReply* indexing = info->Field("indexing");
      if (indexing && indexing->Text() == "0") return true;
    }
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

StatusOr<RedisReply> RedisCache::Impl::OnIndex(const std::vector<std::string>& argv) {
  FRUGAL_RETURN_IF_ERROR(EnsureReady());
  auto r = redis.Command(argv);
  if (!r.ok() && IsUnknownIndex(r.status())) {
    ready = false;
    FRUGAL_RETURN_IF_ERROR(EnsureReady());
    r = redis.Command(argv);
  }
  return r;
}

StatusOr<size_t> RedisCache::Impl::UnlinkMatching(const std::string& query) {
  size_t n = 0;
  for (int page = 0; page < 1'000'000; ++page) {
    FRUGAL_ASSIGN_OR_RETURN(RedisReply r,
                            OnIndex({"FT.SEARCH", Alias(), query, "NOCONTENT", "LIMIT", "0",
                                     std::to_string(kUnlinkBatch), "DIALECT", "2"}));
    std::vector<std::string> del = {"UNLINK"};
    for (size_t i = 1; i < r.elements.size(); ++i) del.push_back(r.elements[i].Text());
    if (del.size() == 1) break;
    FRUGAL_ASSIGN_OR_RETURN(RedisReply d, redis.Command(del));
    if (d.integer == 0) break;  // the index lists keys that are gone: do not spin on them
    n += static_cast<size_t>(d.integer);
  }
  return n;
}

RedisCache::RedisCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedisCache::~RedisCache() = default;

StatusOr<std::unique_ptr<RedisCache>> RedisCache::Open(std::shared_ptr<Embedder> embedder,
                                                       RedisCacheOptions options) {
  if (!embedder) return InvalidArgument("the semantic cache needs an embedder");
  const CacheOptions& co = options.cache;
  if (co.threshold < 0 || co.threshold > 1)
    return InvalidArgument("the cache threshold must be in [0, 1] (0: calibrated)");
  if (co.candidates == 0) return InvalidArgument("the cache must check at least one candidate");
  if (co.ttl.count() < 1) return InvalidArgument("the cache TTL must be at least one second");
  if (!(options.range_epsilon > 0 && options.range_epsilon <= 10))
    return InvalidArgument("the Redis range epsilon must be in (0, 10]");
  if (options.prefix.empty() ||
      options.prefix.find_first_of(" \t\r\n*?[]{}") != std::string::npos) {
    return InvalidArgument(
        "the Redis cache prefix must be non-empty, without spaces, braces or glob characters");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  // TLS files that cannot be used are a configuration error.
  FRUGAL_RETURN_IF_ERROR(impl->redis.setup());
  {
    MutexLock l(impl->model_mu);  // nobody else has it yet; the lock is for the analysis
    impl->model.embedder = std::move(embedder);
  }
  auto cache = std::unique_ptr<RedisCache>(new RedisCache(std::move(impl)));
  Impl& m = *cache->impl_;
  MetricsRegistry& r = cache->metrics_;
  RedisCache* self = cache.get();
  m.cm.Register(
      r,
      [self, &m] {
        std::lock_guard<std::mutex> l(m.gauge_mu);
        const auto now = SteadyClock::now();
        if (m.gauge_at == SteadyClock::time_point{} || now - m.gauge_at >= kEntriesGaugeMaxAge) {
          m.gauge_entries = static_cast<double>(self->size());
          m.gauge_at = now;
        }
        return m.gauge_entries;
      },
      "Index search time per lookup (Redis round trip)");
  m.backend_errors = &r.AddCounter("frugal_cache_backend_errors",
                                   "Redis operations that failed (the cache missed)", "op");
  r.AddGauge("frugal_cache_backend_up", "1 while Redis answers",
             [&m] { return m.redis.reachable() ? 1.0 : 0.0; });
  // A conflict (another model under the prefix) is a configuration error: refuse to start. An
  // unreachable Redis is not: the cache misses until it is back.
  Status st = m.EnsureReady();
  if (!st.ok() && st.code() == StatusCode::kInvalidArgument) return st;
  if (!st.ok()) m.Failed("open", st);
  return cache;
}

namespace {

// A lookup's or insert's model: its vector field (and the next model's, during a rotation to
// it), and its pass through the gate, so the model cannot switch under it.
struct FieldLease : ModelLease {
  std::unique_ptr<SwitchGate::Pass> pass;
  std::string field, next_field;
};

}  // namespace

std::unique_ptr<ModelLease> RedisCache::Impl::Lease(bool for_insert) {
  auto lease = std::make_unique<FieldLease>();
  lease->pass = std::make_unique<SwitchGate::Pass>(gate);
  {
    MutexLock l(model_mu);
    lease->embedder = model.embedder;
    lease->field = model.field;
    if (for_insert && next) {
      lease->next_embedder = next->embedder;
      lease->next_field = next->field;
    }
  }
  if (!for_insert) lease->verifier = VerifierFor(lease->embedder);
  return lease;
}

StatusOr<std::optional<StoredEntry>> RedisCache::Impl::GetExact(const std::string& scope,
                                                                std::string_view query) {
  // The very same text in the same scope is its own key: one round trip. The key is a hash:
  // every field is checked before the pipeline compares them.
  const Model md = Current();
  const std::string key = Key(scope, query);
  auto same = redis.Pipeline(
      {{"HMGET", key, "query", "response", "scope", "ns"}, {"HSTRLEN", key, md.field}});
  if (!same.ok() && IsWrongType(same.status())) {
    // Something else than a hash under the entry's key: not an entry, and the index (ON
    // HASH) never returns it either.
    same = std::vector<RedisReply>{RedisReply{}, RedisReply{}};
  }
  if (!same.ok()) {
    Failed("lookup", same.status());  // Redis down: a miss, never a failed request
    return same.status();
  }
  const RedisReply& fields = (*same)[0];
  const RedisReply& vector_bytes = (*same)[1];
  const bool shaped = fields.type == RedisReply::Type::kArray && fields.elements.size() == 4 &&
                      vector_bytes.type == RedisReply::Type::kInteger;
  const bool absent = shaped && std::all_of(fields.elements.begin(), fields.elements.end(),
                                            [](const RedisReply& e) { return e.is_nil(); });
  if (absent) return std::optional<StoredEntry>();
  StoredEntry out;
  const auto& e = fields.elements;
  // A vector, when the entry has one in this model's field, is the model's size.
  const int64_t dim_bytes = static_cast<int64_t>(md.embedder->dim() * sizeof(float));
  if (!shaped || !IsString(&e[0]) || !IsString(&e[1]) || !IsString(&e[2]) || !IsString(&e[3]) ||
      (vector_bytes.integer != 0 && vector_bytes.integer != dim_bytes)) {
    out.malformed = true;
  } else {
    out.query = e[0].str;
    out.response = e[1].str;
    out.scope = e[2].str;
    out.ns = e[3].str;
  }
  return std::optional<StoredEntry>(std::move(out));
}

StatusOr<std::vector<StoredEntry>> RedisCache::Impl::Search(const ModelLease& lease,
                                                            const std::string& scope,
                                                            std::span<const float> vector,
                                                            size_t k_nearest, float threshold) {
  const std::string& field = static_cast<const FieldLease&>(lease).field;
  char radius[32];
  std::snprintf(radius, sizeof radius, "%.9g", 1.0 - static_cast<double>(threshold));
  const std::string k = std::to_string(k_nearest);
  std::vector<std::string> argv = {"FT.SEARCH", Alias()};
  if (opt.search == RedisSearch::kRange) {
    char eps[32];
    std::snprintf(eps, sizeof eps, "%.6g", opt.range_epsilon);
    argv.insert(argv.end(),
                {"@sh:{" + HashHex(scope) + "} @" + field +
                     ":[VECTOR_RANGE $r $vec]=>{$YIELD_DISTANCE_AS: d; $EPSILON: " + eps + "}",
                 "PARAMS", "4", "r", radius, "vec", Blob(vector)});
  } else {
    argv.insert(argv.end(),
                {"(@sh:{" + HashHex(scope) + "})=>[KNN " + k + " @" + field + " $vec AS d]",
                 "PARAMS", "2", "vec", Blob(vector)});
  }
  // The vector comes back too: the learned decision reads it (without it, it embeds the entry's
  // query again).
  argv.insert(argv.end(), {"SORTBY", "d", "ASC", "LIMIT", "0", k, "RETURN", "6", "query",
                           "response", "scope", "ns", "d", field, "DIALECT", "2"});
  auto found = OnIndex(argv);
  if (found.ok() && found->type != RedisReply::Type::kArray)
    found = Internal("Redis cache: FT.SEARCH answered no array");
  if (!found.ok()) {
    Failed("lookup", found.status());  // Redis down or failing: a miss, never a failed request
    return found.status();
  }
  // Every field is checked before use: a malformed entry (written by hand, another program, a
  // bug) is marked so, never used.
  std::vector<StoredEntry> out;
  for (size_t i = 2; i < found->elements.size(); i += 2) {
    const RedisReply& f = found->elements[i];
    StoredEntry& o = out.emplace_back();
    const RedisReply* d = f.Field("d");
    const std::optional<float> distance = d ? CosineDistance(*d) : std::nullopt;
    if (!distance) {
      o.malformed = true;
      continue;
    }
    o.similarity = 1.0f - *distance;
    if (*o.similarity < threshold) break;  // KNN: nearest first, the rest are farther
    const RedisReply* cq = f.Field("query");
    const RedisReply* cr = f.Field("response");
    const RedisReply* cs = f.Field("scope");
    const RedisReply* cn = f.Field("ns");
    if (!IsString(cq) || !IsString(cr) || !IsString(cs) || !IsString(cn)) {
      o.malformed = true;
      continue;
    }
    o.query = cq->str;
    o.response = cr->str;
    o.scope = cs->str;
    o.ns = cn->str;
    // A vector of the lookup's size only; anything else is left out (the verifier embeds).
    const RedisReply* cv = f.Field(field);
    if (IsString(cv) && cv->str.size() == vector.size() * sizeof(float)) {
      o.vector.resize(vector.size());
      std::memcpy(o.vector.data(), cv->str.data(), cv->str.size());
    }
  }
  return out;
}

StatusOr<LookupResult> RedisCache::Lookup(const std::string& scope, std::string_view ns,
                                          std::string_view query) {
  return impl_->pipeline.Lookup(scope, ns, query);
}

Status RedisCache::Insert(const std::string& scope, std::string_view ns, std::string_view query,
                          std::string_view response, const LookupResult* looked_up) {
  return impl_->pipeline.Insert(scope, ns, query, response, looked_up);
}

Status RedisCache::Impl::Put(const ModelLease& lease, const std::string& scope, std::string_view ns,
                             std::string_view query, std::string_view response,
                             std::vector<float> vector, const std::vector<float>* next_vector) {
  const auto& fl = static_cast<const FieldLease&>(lease);
  const std::string key = Key(scope, query);
  std::vector<std::string> hset = {"HSET",     key,
                                   "sh",       HashHex(scope),
                                   "nh",       HashHex(ns),
                                   "scope",    scope,
                                   "ns",       std::string(ns),
                                   "query",    std::string(query),
                                   "response", std::string(response),
                                   fl.field,   Blob(vector),
                                   "t",        std::to_string(WallMs())};
  // A rotation to a new model is filling its index: the entry gets that model's vector too.
  if (next_vector) hset.insert(hset.end(), {fl.next_field, Blob(*next_vector)});
  Status st = EnsureReady();
  if (st.ok()) {
    const int64_t ttl_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(opt.cache.ttl).count();
    auto r = redis.Pipeline({{"MULTI"},
                             hset,
                             {"PEXPIRE", key, std::to_string(ttl_ms)},
                             {"EXEC"},
                             {"EXISTS", opt.prefix + ":meta"}});
    st = r.status();
    if (st.ok() && r->back().integer == 0) {
      // Redis lost its data (a restart without persistence): recreate the meta and the index,
      // which then reads this entry too.
      ready = false;
      st = EnsureReady();
    }
  }
  if (!st.ok()) Failed("insert", st);
  return st;
}

size_t RedisCache::InvalidateNamespace(std::string_view ns) {
  Impl& m = *impl_;
  auto n = m.UnlinkMatching("@nh:{" + HashHex(ns) + "}");
  if (!n.ok()) {
    m.Failed("invalidate", n.status());
    return 0;
  }
  m.cm.evictions->Add(static_cast<double>(*n), "invalidated");
  return *n;
}

size_t RedisCache::InvalidateQuery(const std::string& scope, std::string_view query) {
  Impl& m = *impl_;
  auto r = m.redis.Command({"UNLINK", m.Key(scope, query)});
  if (!r.ok()) {
    m.Failed("invalidate", r.status());
    return 0;
  }
  m.cm.evictions->Add(static_cast<double>(r->integer), "invalidated");
  return static_cast<size_t>(r->integer);
}

size_t RedisCache::Clear() {
  Impl& m = *impl_;
  size_t n = 0;
  std::string cursor = "0";
  do {
    auto r = m.redis.Command({"SCAN", cursor, "MATCH", m.opt.prefix + ":e:*", "COUNT", "1000"});
    if (!r.ok() || r->elements.size() != 2) {
      m.Failed("invalidate", r.ok() ? Internal("unexpected SCAN reply") : r.status());
      break;
    }
    cursor = r->elements[0].Text();
    const auto& keys = r->elements[1].elements;
    bool failed = false;
    for (size_t b = 0; b < keys.size() && !failed; b += kUnlinkBatch) {
      std::vector<std::string> del = {"UNLINK"};
      for (size_t i = b; i < std::min(keys.size(), b + kUnlinkBatch); ++i)
        del.push_back(keys[i].Text());
      auto d = m.redis.Command(del);
      if (!d.ok()) {
        m.Failed("invalidate", d.status());
        failed = true;
      } else {
        n += static_cast<size_t>(d->integer);
      }
    }
    if (failed) break;
  } while (cursor != "0");
  m.cm.evictions->Add(static_cast<double>(n), "invalidated");
  return n;
}

StatusOr<std::string> RedisCache::CurrentIndex() const {
  return CurrentIndexOf(impl_->redis, impl_->Alias());
}

bool RedisCache::reachable() const { return impl_->redis.reachable(); }

size_t RedisCache::size() const {
  auto info = impl_->redis.Command({"FT.INFO", impl_->Alias()});
  if (!info.ok()) return 0;
  const RedisReply* n = info->Field("num_docs");
  return n ? static_cast<size_t>(std::strtoull(n->Text().c_str(), nullptr, 10)) : 0;
}

int64_t RedisCache::rotations() const { return impl_->rotations.load(); }

}  // namespace frugal::cache
