#include "cache/semantic_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <mutex>
#include <thread>

#include "cache/lookup.h"
#include "common/durable.h"
#include "common/thread_annotations.h"

namespace frugal::cache {
namespace {

using SteadyClock = std::chrono::steady_clock;

double MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

constexpr char kSnapshotMagic[8] = {'F', 'R', 'G', 'L', 'C', 'A', 'C', '1'};

// One scope's index. Searched under a shared lock; upgraded from exact to HNSW under an
// exclusive one.
struct Partition {
  mutable SharedMutex mu;
  // The pointer is guarded (an upgrade replaces it); the index locks itself.
  std::unique_ptr<VectorIndex> index FRUGAL_GUARDED_BY(mu);
};

// The indexes of one embedding model: what a rotation replaces as a whole.
struct Generation {
  std::shared_ptr<Embedder> embedder;
  std::shared_ptr<const HitVerifier> verifier;  // the embedder's, unless the options name one
  HnswParams hnsw;
  mutable SharedMutex mu;
  std::unordered_map<std::string, std::unique_ptr<Partition>> parts FRUGAL_GUARDED_BY(mu);

  Partition* Find(const std::string& scope) const {
    ReaderLock lock(mu);
    auto it = parts.find(scope);
    return it == parts.end() ? nullptr : it->second.get();
  }
  Partition& Get(const std::string& scope, int dim) {
    {
      ReaderLock lock(mu);
      auto it = parts.find(scope);
      if (it != parts.end()) return *it->second;
    }
    return Create(scope, NewExactIndex(dim), /*replace=*/false);
  }
  // The partition of `scope` with `index`; an existing one keeps its own unless `replace`.
  Partition& Create(const std::string& scope, std::unique_ptr<VectorIndex> index, bool replace) {
    WriterLock lock(mu);
    auto& p = parts[scope];
    if (!p) p = std::make_unique<Partition>();
    WriterLock plock(p->mu);
    if (!p->index || replace) p->index = std::move(index);
    return *p;
  }
};

struct Entry {
  uint64_t id = 0;
  std::string scope, ns, query, response;
  int64_t created_ms = 0, expires_ms = 0;
  std::vector<float> embedding;  // by the current generation's embedder
  std::list<uint64_t>::iterator lru;
};

}  // namespace

// The entry store and its per-scope indexes; the pipeline (lookup.h) decides hits over it.
struct SemanticCache::Impl : CacheStore {
  CacheOptions opt;
  std::shared_ptr<Generation> current;                     // atomic_load / atomic_store
  mutable Mutex mu;                                        // the entry store and index mutations
  std::shared_ptr<Generation> next FRUGAL_GUARDED_BY(mu);  // being built by a rotation
  std::mutex rotate_mu;                                    // one rotation at a time

  std::unordered_map<uint64_t, Entry> entries FRUGAL_GUARDED_BY(mu);
  std::unordered_map<std::string, std::vector<uint64_t>> by_query
      FRUGAL_GUARDED_BY(mu);                      // scope+query -> ids
  std::list<uint64_t> lru FRUGAL_GUARDED_BY(mu);  // front = newest
  uint64_t next_id FRUGAL_GUARDED_BY(mu) = 1;
  std::atomic<int64_t> rotations{0};

  std::thread snapshotter;
  Mutex stop_mu;
  CondVar stop_cv;
  bool stop FRUGAL_GUARDED_BY(stop_mu) = false;

  CacheMetrics cm;
  LookupPipeline pipeline{*this, opt, cm};

  int64_t Now() const {
    if (opt.now_ms) return opt.now_ms();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::shared_ptr<Generation> Current() const { return std::atomic_load(&current); }
  static std::string QueryKey(const std::string& scope, std::string_view q) {
    return scope + '\x1e' + std::string(q);
  }

  // Adds e's vector to a generation's partition, upgrading it to HNSW when it grows.
  Status AddToIndex(Generation& g, const std::string& scope, uint64_t id, std::span<const float> v)
      FRUGAL_REQUIRES(mu) {
    Partition& p = g.Get(scope, static_cast<int>(v.size()));
    {
      ReaderLock lock(p.mu);
      FRUGAL_RETURN_IF_ERROR(p.index->Add(id, v));
      if (p.index->size() <= opt.exact_max || std::strcmp(p.index->kind(), "hnsw") == 0)
        return Status::Ok();
    }
    // Grew past exact search: rebuild this partition as HNSW from the stored embeddings.
    WriterLock lock(p.mu);
    if (std::strcmp(p.index->kind(), "hnsw") == 0) return Status::Ok();
    auto h = NewHnswIndex(static_cast<int>(v.size()), g.hnsw, p.index->size() * 2);
    // The partition's own vectors (by this generation's model), read back from the exact index.
    for (const auto& [eid, e] : entries) {
      if (e.scope != scope) continue;
      std::vector<float> ev;
      if (p.index->Get(eid, &ev)) FRUGAL_RETURN_IF_ERROR(h->Add(eid, ev));
    }
    FRUGAL_RETURN_IF_ERROR(h->Add(id, v));  // not in `entries` yet
    p.index = std::move(h);
    return Status::Ok();
  }

  // Removes an entry everywhere.
  void RemoveLocked(uint64_t id) FRUGAL_REQUIRES(mu) {
    auto it = entries.find(id);
    if (it == entries.end()) return;
    Entry& e = it->second;
    for (Generation* g : {Current().get(), next.get()}) {
      if (!g) continue;
      if (Partition* p = g->Find(e.scope)) {
        bool emptied;
        {
          ReaderLock lock(p->mu);
          p->index->Remove(id);
          emptied = p->index->size() == 0 && std::strcmp(p->index->kind(), "hnsw") == 0;
        }
        // An HNSW partition emptied (Clear, a namespace's invalidation, a scope expiring) starts
        // over as an exact one: hnswlib keeps deleted nodes in its graph, and new inserts would
        // keep walking them (4 ms instead of 0.6 ms each after clearing 10k in
        // cache_backend_bench).
        if (emptied) {
          WriterLock lock(p->mu);
          if (p->index->size() == 0) p->index = NewExactIndex(p->index->dim());
        }
      }
    }
    auto& ids = by_query[QueryKey(e.scope, e.query)];
    std::erase(ids, id);
    if (ids.empty()) by_query.erase(QueryKey(e.scope, e.query));
    lru.erase(e.lru);
    entries.erase(it);
  }

  // Drops expired entries, then the least recently used beyond capacity.
  void EvictLocked(size_t room_for) FRUGAL_REQUIRES(mu) {
    const int64_t now = Now();
    if (entries.size() + room_for > opt.capacity) {
      std::vector<uint64_t> expired;
      for (const auto& [id, e] : entries) {
        if (e.expires_ms <= now) expired.push_back(id);
      }
      for (uint64_t id : expired) RemoveLocked(id);
      cm.evictions->Add(static_cast<double>(expired.size()), "ttl");
    }
    while (!lru.empty() && entries.size() + room_for > opt.capacity) {
      RemoveLocked(lru.back());
      cm.evictions->Add(1, "capacity");
    }
  }

  Status InsertVector(const std::string& scope, std::string_view ns, std::string_view query,
                      std::string_view response, std::vector<float> v,
                      const std::vector<float>* next_v, int64_t created, int64_t expires) {
    MutexLock lock(mu);
    // The same query in the same scope: the newer answer replaces the older.
    if (auto it = by_query.find(QueryKey(scope, query)); it != by_query.end()) {
      for (uint64_t old : std::vector<uint64_t>(it->second)) RemoveLocked(old);
    }
    EvictLocked(1);
    const uint64_t id = next_id++;
    auto g = Current();
    FRUGAL_RETURN_IF_ERROR(AddToIndex(*g, scope, id, v));
    if (next)
      FRUGAL_RETURN_IF_ERROR(AddToIndex(
          *next, scope, id, next_v ? std::span<const float>(*next_v) : std::span<const float>(v)));
    Entry& e = entries[id];
    e.id = id;
    e.scope = scope;
    e.ns = std::string(ns);
    e.query = std::string(query);
    e.response = std::string(response);
    e.created_ms = created;
    e.expires_ms = expires;
    e.embedding = std::move(v);
    lru.push_front(id);
    e.lru = lru.begin();
    by_query[QueryKey(scope, query)].push_back(id);
    return Status::Ok();
  }

  // CacheStore.
  std::unique_ptr<ModelLease> Lease(bool for_insert) override;
  StatusOr<std::optional<StoredEntry>> GetExact(const std::string& scope,
                                                std::string_view query) override;
  StatusOr<std::vector<StoredEntry>> Search(const ModelLease& lease, const std::string& scope,
                                            std::span<const float> vector, size_t k,
                                            float threshold) override;
  void Touch(const StoredEntry& entry) override;
  Status Put(const ModelLease& lease, const std::string& scope, std::string_view ns,
             std::string_view query, std::string_view response, std::vector<float> vector,
             const std::vector<float>* next_vector) override;

  Status Load(const std::string& path);
  Status Save(const std::string& path) const;
  mutable std::mutex save_mu;  // one Save at a time
};

namespace {

// A lookup's or insert's generation: alive until the operation is done, even if a rotation
// switches meanwhile.
struct GenerationLease : ModelLease {
  std::shared_ptr<Generation> generation;
};

}  // namespace

std::unique_ptr<ModelLease> SemanticCache::Impl::Lease(bool for_insert) {
  auto lease = std::make_unique<GenerationLease>();
  lease->generation = Current();
  lease->embedder = lease->generation->embedder;
  lease->verifier = lease->generation->verifier;
  if (for_insert) {
    MutexLock lock(mu);
    if (next && next->embedder != lease->embedder) lease->next_embedder = next->embedder;
  }
  return lease;
}

StatusOr<std::optional<StoredEntry>> SemanticCache::Impl::GetExact(const std::string& scope,
                                                                   std::string_view query) {
  MutexLock lock(mu);
  auto it = by_query.find(QueryKey(scope, query));
  if (it == by_query.end() || it->second.empty()) return std::optional<StoredEntry>();
  auto e = entries.find(it->second.back());
  if (e == entries.end() || e->second.expires_ms <= Now()) return std::optional<StoredEntry>();
  StoredEntry out;
  out.id = e->first;
  out.scope = e->second.scope;
  out.ns = e->second.ns;
  out.query = e->second.query;
  out.response = e->second.response;
  return std::optional<StoredEntry>(std::move(out));
}

StatusOr<std::vector<StoredEntry>> SemanticCache::Impl::Search(const ModelLease& lease,
                                                               const std::string& scope,
                                                               std::span<const float> vector,
                                                               size_t k, float threshold) {
  const Generation& g = *static_cast<const GenerationLease&>(lease).generation;
  std::vector<Neighbor> found;
  std::vector<StoredEntry> out;
  if (const Partition* p = g.Find(scope)) {
    ReaderLock lock(p->mu);
    found = p->index->Search(vector, k);
    out.resize(found.size());
    // The candidates' vectors, for a verifier that reads them (the learned decision).
    for (size_t i = 0; i < found.size(); ++i) {
      if (found[i].similarity >= threshold) p->index->Get(found[i].label, &out[i].vector);
    }
  }
  out.resize(found.size());
  const int64_t now = Now();
  MutexLock lock(mu);
  for (size_t i = 0; i < found.size(); ++i) {
    StoredEntry& o = out[i];
    o.id = found[i].label;
    o.similarity = found[i].similarity;
    if (found[i].similarity < threshold) continue;  // the pipeline stops here: no copies
    auto it = entries.find(found[i].label);
    if (it == entries.end() || it->second.expires_ms <= now) {
      o.gone = true;
      continue;
    }
    o.scope = it->second.scope;
    o.ns = it->second.ns;
    o.query = it->second.query;
    o.response = it->second.response;
  }
  return out;
}

void SemanticCache::Impl::Touch(const StoredEntry& entry) {
  MutexLock lock(mu);
  auto it = entries.find(entry.id);
  if (it != entries.end()) lru.splice(lru.begin(), lru, it->second.lru);
}

Status SemanticCache::Impl::Put(const ModelLease& /*lease*/, const std::string& scope,
                                std::string_view ns, std::string_view query,
                                std::string_view response, std::vector<float> vector,
                                const std::vector<float>* next_vector) {
  const int64_t now = Now();
  return InsertVector(scope, ns, query, response, std::move(vector), next_vector, now,
                      now + std::chrono::duration_cast<std::chrono::milliseconds>(opt.ttl).count());
}

SemanticCache::SemanticCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<SemanticCache>> SemanticCache::Open(std::shared_ptr<Embedder> embedder,
                                                             CacheOptions options) {
  if (!embedder) return InvalidArgument("the semantic cache needs an embedder");
  if (options.threshold < 0 || options.threshold > 1)
    return InvalidArgument("the cache threshold must be in [0, 1] (0: calibrated)");
  if (options.capacity == 0) return InvalidArgument("the cache capacity must be > 0");
  if (options.candidates == 0)
    return InvalidArgument("the cache must check at least one candidate");
  auto impl = std::make_unique<Impl>();
  impl->opt = std::move(options);
  auto g = std::make_shared<Generation>();
  g->verifier =
      impl->opt.verifier ? impl->opt.verifier : DefaultVerifier(*embedder, impl->opt.decision);
  g->embedder = std::move(embedder);
  g->hnsw = impl->opt.hnsw;
  impl->current = g;
  auto cache = std::unique_ptr<SemanticCache>(new SemanticCache(std::move(impl)));
  Impl& m = *cache->impl_;
  MetricsRegistry& r = cache->metrics_;
  SemanticCache* self = cache.get();
  m.cm.Register(
      r, [self] { return static_cast<double>(self->size()); }, "Index search time per lookup");
  if (!m.opt.snapshot_path.empty()) {
    std::ifstream probe(m.opt.snapshot_path, std::ios::binary);
    if (probe) FRUGAL_RETURN_IF_ERROR(m.Load(m.opt.snapshot_path));
    if (m.opt.snapshot_interval.count() > 0) {
      m.snapshotter = std::thread([&m] {
        for (;;) {
          {
            MutexLock lock(m.stop_mu);
            const auto deadline = SteadyClock::now() + m.opt.snapshot_interval;
            while (!m.stop && m.stop_cv.WaitUntil(m.stop_mu, deadline)) {
            }
            if (m.stop) return;
          }
          Status st = m.Save(m.opt.snapshot_path);
          if (!st.ok())
            std::fprintf(stderr, "frugal: cache snapshot failed: %s\n", st.ToString().c_str());
        }
      });
    }
  }
  return cache;
}

SemanticCache::~SemanticCache() {
  Impl& m = *impl_;
  {
    MutexLock lock(m.stop_mu);
    m.stop = true;
  }
  m.stop_cv.NotifyAll();
  if (m.snapshotter.joinable()) m.snapshotter.join();
  if (!m.opt.snapshot_path.empty()) {
    Status st = m.Save(m.opt.snapshot_path);
    if (!st.ok())
      std::fprintf(stderr, "frugal: cache snapshot failed: %s\n", st.ToString().c_str());
  }
}

StatusOr<LookupResult> SemanticCache::Lookup(const std::string& scope, std::string_view ns,
                                             std::string_view query) {
  return impl_->pipeline.Lookup(scope, ns, query);
}

Status SemanticCache::Insert(const std::string& scope, std::string_view ns, std::string_view query,
                             std::string_view response, const LookupResult* looked_up) {
  return impl_->pipeline.Insert(scope, ns, query, response, looked_up);
}

size_t SemanticCache::InvalidateNamespace(std::string_view ns) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  std::vector<uint64_t> ids;
  for (const auto& [id, e] : m.entries) {
    if (e.ns == ns) ids.push_back(id);
  }
  for (uint64_t id : ids) m.RemoveLocked(id);
  m.cm.evictions->Add(static_cast<double>(ids.size()), "invalidated");
  return ids.size();
}

size_t SemanticCache::InvalidateQuery(const std::string& scope, std::string_view query) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  auto it = m.by_query.find(Impl::QueryKey(scope, query));
  if (it == m.by_query.end()) return 0;
  const std::vector<uint64_t> ids = it->second;
  for (uint64_t id : ids) m.RemoveLocked(id);
  m.cm.evictions->Add(static_cast<double>(ids.size()), "invalidated");
  return ids.size();
}

size_t SemanticCache::Clear() {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  const size_t n = m.entries.size();
  std::vector<uint64_t> ids;
  for (const auto& [id, e] : m.entries) ids.push_back(id);
  for (uint64_t id : ids) m.RemoveLocked(id);
  m.cm.evictions->Add(static_cast<double>(n), "invalidated");
  return n;
}

Status SemanticCache::Rotate(const RotateOptions& o) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> one(m.rotate_mu);
  const auto t0 = SteadyClock::now();
  auto cur = m.Current();
  auto g = std::make_shared<Generation>();
  g->embedder = o.embedder ? o.embedder : cur->embedder;
  g->verifier = m.opt.verifier ? m.opt.verifier : DefaultVerifier(*g->embedder, m.opt.decision);
  g->hnsw = o.hnsw ? *o.hnsw : cur->hnsw;
  const bool reembed = g->embedder != cur->embedder;
  std::vector<uint64_t> ids;
  {
    MutexLock lock(m.mu);
    // Partitions are made in their final kind up front, so the build never has to convert a
    // grown exact partition to HNSW while holding the lock lookups need.
    std::unordered_map<std::string, size_t> per_scope;
    for (const auto& [id, e] : m.entries) {
      ids.push_back(id);
      ++per_scope[e.scope];
    }
    for (const auto& [scope, n] : per_scope) {
      g->Create(scope,
                n > m.opt.exact_max ? NewHnswIndex(g->embedder->dim(), g->hnsw, n + n / 4)
                                    : NewExactIndex(g->embedder->dim()),
                /*replace=*/true);
    }
    m.next = g;  // from here on, inserts go to both generations
  }
  std::unordered_map<uint64_t, std::vector<float>> new_vectors;
  for (uint64_t id : ids) {
    std::string query, scope;
    std::vector<float> v;
    {
      MutexLock lock(m.mu);
      auto it = m.entries.find(id);
      if (it == m.entries.end()) continue;  // removed meanwhile
      query = it->second.query;
      scope = it->second.scope;
      if (!reembed) v = it->second.embedding;
    }
    if (reembed) {
      auto e = g->embedder->Embed(query);
      if (!e.ok()) {
        MutexLock lock(m.mu);
        m.next.reset();
        return e.status();
      }
      v = std::move(e).value();
    }
    MutexLock lock(m.mu);
    if (!m.entries.count(id)) continue;
    Status st = m.AddToIndex(*g, scope, id, v);
    if (!st.ok()) {
      m.next.reset();
      return st;
    }
    if (reembed) new_vectors[id] = std::move(v);
  }
  {
    MutexLock lock(m.mu);
    for (auto& [id, v] : new_vectors) {
      auto it = m.entries.find(id);
      if (it != m.entries.end()) it->second.embedding = std::move(v);
    }
    std::atomic_store(&m.current, g);  // the alias switch; readers of `cur` keep it alive
    m.next.reset();
  }
  m.rotations.fetch_add(1);
  m.cm.rotations_total->Add(1);
  m.cm.rotation_s->Observe(MsSince(t0) / 1e3);
  return Status::Ok();
}

size_t SemanticCache::size() const {
  MutexLock lock(impl_->mu);
  return impl_->entries.size();
}

size_t SemanticCache::indexed() const {
  auto g = impl_->Current();
  ReaderLock lock(g->mu);
  size_t n = 0;
  for (const auto& [scope, p] : g->parts) {
    ReaderLock plock(p->mu);
    n += p->index->size();
  }
  return n;
}

int64_t SemanticCache::rotations() const { return impl_->rotations.load(); }

Status SemanticCache::Snapshot(const std::string& path) const { return impl_->Save(path); }

namespace {

void PutU64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void PutStr(std::string& out, std::string_view s) {
  PutU64(out, s.size());
  out.append(s);
}

struct Reader {
  const std::string& buf;
  size_t pos = 0;
  bool ok = true;
  uint64_t U64() {
    uint64_t v = 0;
    if (pos + 8 > buf.size()) {
      ok = false;
      return 0;
    }
    std::memcpy(&v, buf.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string Str() {
    const uint64_t n = U64();
    if (!ok || n > buf.size() - pos) {
      ok = false;
      return {};
    }
    std::string s = buf.substr(pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

// Layout: magic, embedder name, dim, count, then per entry scope, ns, query, response (u64
// length + bytes), created and expiry (ms since the epoch) and dim floats. Little-endian.
Status SemanticCache::Impl::Save(const std::string& path) const {
  std::string out(kSnapshotMagic, sizeof kSnapshotMagic);
  auto g = Current();
  const int dim = g->embedder->dim();
  PutStr(out, g->embedder->name());
  PutU64(out, static_cast<uint64_t>(dim));
  {
    MutexLock lock(mu);
    PutU64(out, entries.size());
    // Oldest first, so a reload rebuilds the same recency order.
    for (auto it = lru.rbegin(); it != lru.rend(); ++it) {
      const Entry& e = entries.at(*it);
      PutStr(out, e.scope);
      PutStr(out, e.ns);
      PutStr(out, e.query);
      PutStr(out, e.response);
      PutU64(out, static_cast<uint64_t>(e.created_ms));
      PutU64(out, static_cast<uint64_t>(e.expires_ms));
      out.append(reinterpret_cast<const char*>(e.embedding.data()),
                 e.embedding.size() * sizeof(float));
    }
  }
  // The entries are tenants' questions and answers: the file is the owner's alone (0600,
  // whatever the umask), and on disk before it replaces the previous snapshot (fsync of the file,
  // rename, fsync of the directory), so a crash leaves the old or the new one, never a torn one.
  std::lock_guard<std::mutex> one(save_mu);  // the periodic save and Snapshot() share the .tmp
  const std::string tmp = path + ".tmp";
  auto failed = [&tmp](const char* what) {
    return IoError(std::string("cannot ") + what + " " + tmp + ": " + std::strerror(errno));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return failed("create");
  // A .tmp left by an earlier run keeps its mode through O_TRUNC: set it.
  bool ok = ::fchmod(fd, 0600) == 0;
  for (size_t off = 0; ok && off < out.size();) {
    const ssize_t n = ::write(fd, out.data() + off, out.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  Status st = ok ? Status::Ok() : failed("write");
  ::close(fd);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status why = IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return why;
  }
  // The rename itself is durable once the directory is.
  return SyncParentDirectory(path);
}

Status SemanticCache::Impl::Load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (buf.size() < sizeof kSnapshotMagic ||
      std::memcmp(buf.data(), kSnapshotMagic, sizeof kSnapshotMagic) != 0) {
    return DataLoss(path + " is not a Frugal cache snapshot");
  }
  Reader r{buf, sizeof kSnapshotMagic};
  auto g = Current();
  const std::string model = r.Str();
  const auto dim = static_cast<int>(r.U64());
  const uint64_t count = r.U64();
  // Another embedding model: keep the entries, embed their queries again.
  const bool reembed = model != g->embedder->name() || dim != g->embedder->dim();
  const int64_t now = Now();
  for (uint64_t i = 0; i < count && r.ok; ++i) {
    std::string scope = r.Str(), ns = r.Str(), query = r.Str(), response = r.Str();
    const auto created = static_cast<int64_t>(r.U64()), expires = static_cast<int64_t>(r.U64());
    const size_t bytes = static_cast<size_t>(dim) * sizeof(float);
    if (!r.ok || bytes > buf.size() - r.pos)
      return DataLoss(path + ": truncated at entry " + std::to_string(i));
    std::vector<float> v(static_cast<size_t>(dim));
    std::memcpy(v.data(), buf.data() + r.pos, bytes);
    r.pos += bytes;
    if (expires <= now) continue;
    if (reembed) {
      FRUGAL_ASSIGN_OR_RETURN(v, g->embedder->Embed(query));
    }
    FRUGAL_RETURN_IF_ERROR(
        InsertVector(scope, ns, query, response, std::move(v), nullptr, created, expires));
    cm.insertions->Add(1);
  }
  if (!r.ok) return DataLoss(path + ": truncated");
  return Status::Ok();
}

}  // namespace frugal::cache
