// RedisCache::Rotate: a new index over the same entries (new HNSW parameters, compaction), or a
// move to a new embedding model (redis_cache.h describes both).
#include <chrono>
#include <random>
#include <thread>

#include "cache/redis_cache.h"
#include "cache/redis_cache_impl.h"

namespace frugal::cache {
namespace {

using SteadyClock = RedisCache::Impl::SteadyClock;

double MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

}  // namespace

StatusOr<size_t> RedisCache::Impl::Backfill(const Model& md,
                                            const std::function<void()>& keepalive) {
  size_t written = 0;
  std::string cursor = "0";
  const char* kSetIfExists =
      "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSET', KEYS[1], ARGV[1], "
      "ARGV[2]) end return 0";
  do {
    keepalive();
    FRUGAL_ASSIGN_OR_RETURN(RedisReply page, redis.Command({"SCAN", cursor, "MATCH",
                                                            opt.prefix + ":e:*", "COUNT", "500"}));
    if (page.elements.size() != 2) return Internal("unexpected SCAN reply");
    cursor = page.elements[0].Text();
    const auto& keys = page.elements[1].elements;
    if (keys.empty()) continue;
    std::vector<std::vector<std::string>> ask;
    ask.reserve(keys.size());
    for (const RedisReply& k : keys) ask.push_back({"HMGET", k.Text(), "query", md.field});
    FRUGAL_ASSIGN_OR_RETURN(std::vector<RedisReply> got, redis.Pipeline(ask));
    std::vector<std::vector<std::string>> put;
    for (size_t i = 0; i < keys.size() && i < got.size(); ++i) {
      const auto& e = got[i].elements;
      if (e.size() != 2 || e[0].type != RedisReply::Type::kString || !e[1].is_nil()) continue;
      auto v = md.embedder->Embed(e[0].str);
      if (!v.ok())
        continue;  // the entry stays out of the new index; it still answers exact repeats
      put.push_back({"EVAL", kSetIfExists, "1", keys[i].Text(), md.field, Blob(*v)});
    }
    if (!put.empty()) {
      FRUGAL_ASSIGN_OR_RETURN(std::vector<RedisReply> done, redis.Pipeline(put));
      for (const RedisReply& d : done) written += d.integer > 0;
    }
  } while (cursor != "0");
  return written;
}

Status RedisCache::Impl::DropField(const std::string& field) {
  std::string cursor = "0";
  do {
    FRUGAL_ASSIGN_OR_RETURN(RedisReply page, redis.Command({"SCAN", cursor, "MATCH",
                                                            opt.prefix + ":e:*", "COUNT", "500"}));
    if (page.elements.size() != 2) return Internal("unexpected SCAN reply");
    cursor = page.elements[0].Text();
    std::vector<std::vector<std::string>> del;
    for (const RedisReply& k : page.elements[1].elements) del.push_back({"HDEL", k.Text(), field});
    if (!del.empty()) FRUGAL_RETURN_IF_ERROR(redis.Pipeline(del).status());
  } while (cursor != "0");
  return Status::Ok();
}

Status RedisCache::Impl::RotateToModel(const std::shared_ptr<Embedder>& embedder,
                                       const HnswParams& p,
                                       const std::function<void()>& keepalive) {
  const std::string meta = opt.prefix + ":meta";
  const Model cur = Current();
  const std::string dim = std::to_string(embedder->dim());
  FRUGAL_ASSIGN_OR_RETURN(RedisReply got,
                          redis.Command({"HMGET", meta, "embedder", "dim", "field"}));
  if (got.elements.size() != 3) return Internal("Redis cache: unexpected HMGET reply");
  if (got.elements[0].Text() == embedder->name() && got.elements[1].Text() == dim) {
    // Another replica has moved the prefix to this model already: switch to it, then give the
    // entries this replica wrote meanwhile (old model's vector only) the new one.
    Model adopted{embedder, got.elements[2].Text()};
    {
      SwitchGate::Switch sw(gate);
      MutexLock l(model_mu);
      model = adopted;
    }
    return Backfill(adopted, keepalive).status();
  }
  if (got.elements[0].Text() != cur.embedder->name()) {
    return InvalidArgument("Redis prefix '" + opt.prefix + "' holds entries of '" +
                           got.elements[0].Text() +
                           "', neither this cache's model nor the new one");
  }
  FRUGAL_ASSIGN_OR_RETURN(std::string old_index, RedisCache::CurrentIndexOf(redis, Alias()));
  FRUGAL_ASSIGN_OR_RETURN(RedisReply fgen, redis.Command({"INCR", opt.prefix + ":fieldgen"}));
  FRUGAL_ASSIGN_OR_RETURN(RedisReply igen, redis.Command({"INCR", opt.prefix + ":gen"}));
  Model next_model{embedder, "v" + std::to_string(fgen.integer)};
  const std::string name = opt.prefix + ":idx:" + std::to_string(igen.integer);
  {
    MutexLock l(model_mu);
    next = next_model;  // from here on, inserts write both vectors
  }
  auto abandon = [&](Status why) {
    {
      MutexLock l(model_mu);
      next.reset();
    }
    (void)redis.Command({"FT.DROPINDEX", name});
    (void)redis.Command({"HDEL", meta, "next_embedder", "next_field"});
    (void)DropField(next_model.field);
    return why;
  };
  Status st = redis
                  .Command({"HSET", meta, "next_embedder", embedder->name(), "next_field",
                            next_model.field})
                  .status();
  if (st.ok()) st = redis.Command(CreateIndexArgs(name, p, next_model)).status();
  // Every entry gets the new model's vector (the index reads them as they land); a second pass
  // catches entries other replicas wrote with the old model alone meanwhile.
  for (int pass = 0; pass < 2 && st.ok(); ++pass) {
    st = Backfill(next_model, keepalive).status();
    if (st.ok() && !WaitIndexed(name, SteadyClock::now() + opt.rotation_timeout,
                                std::chrono::milliseconds(100))) {
      st = DeadlineExceeded("the new index " + name + " was not complete in time");
    }
  }
  if (!st.ok()) return abandon(st);
  {
    // No lookup or insert in flight: none can search one model's field on the other's index.
    SwitchGate::Switch sw(gate);
    st = redis.Command({"FT.ALIASUPDATE", Alias(), name}).status();
    if (st.ok()) {
      st = redis
               .Pipeline({{"HSET", meta, "embedder", embedder->name(), "dim", dim, "field",
                           next_model.field},
                          {"HDEL", meta, "next_embedder", "next_field"}})
               .status();
    }
    if (st.ok()) {
      MutexLock l(model_mu);
      model = next_model;
      next.reset();
    }
  }
  if (!st.ok()) return abandon(st);
  (void)redis.Command({"FT.DROPINDEX", old_index});
  // The old model's vectors are read by no index now: free their memory.
  return DropField(cur.field);
}

StatusOr<std::string> RedisCache::CurrentIndexOf(RedisClient& redis, const std::string& alias) {
  FRUGAL_ASSIGN_OR_RETURN(RedisReply info, redis.Command({"FT.INFO", alias}));
  const RedisReply* name = info.Field("index_name");
  if (!name) return Internal("FT.INFO without index_name");
  return name->Text();
}

Status RedisCache::Rotate(const RotateOptions& options) {
  Impl& m = *impl_;
  const Impl::Model cur = m.Current();
  const bool new_model = options.embedder && options.embedder != cur.embedder &&
                         options.embedder->name() != cur.embedder->name();
  std::lock_guard<std::mutex> rotating(m.rotate_mu);
  const auto t0 = SteadyClock::now();
  FRUGAL_RETURN_IF_ERROR(m.EnsureReady());
  HnswParams p;
  {
    MutexLock l(m.hnsw_mu);
    if (options.hnsw) m.hnsw = *options.hnsw;
    p = m.hnsw;
  }
  // One rotation at a time across replicas: a lock key with a token, released only by its owner.
  const std::string lock_key = m.opt.prefix + ":rotating";
  const std::string token =
      std::to_string(std::random_device{}()) + "-" + std::to_string(Impl::WallMs());
  const auto deadline = SteadyClock::now() + m.opt.rotation_timeout;
  const std::string lock_ms = std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(m.opt.rotation_timeout).count() +
      60'000);
  for (;;) {
    FRUGAL_ASSIGN_OR_RETURN(RedisReply got,
                            m.redis.Command({"SET", lock_key, token, "NX", "PX", lock_ms}));
    if (!got.is_nil()) break;
    if (SteadyClock::now() > deadline)
      return DeadlineExceeded("another replica's rotation holds " + lock_key);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto unlock = [&] {
    const std::string script =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
        "return 0";
    (void)m.redis.Command({"EVAL", script, "1", lock_key, token});
  };
  // A long rotation keeps its lock: each backfill page extends it while this token holds it.
  auto keepalive = [&] {
    const std::string script =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return "
        "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
    (void)m.redis.Command({"EVAL", script, "1", lock_key, token, lock_ms});
  };
  Status st = new_model ? m.RotateToModel(options.embedder, p, keepalive) : [&]() -> Status {
    FRUGAL_ASSIGN_OR_RETURN(std::string old, CurrentIndex());
    FRUGAL_ASSIGN_OR_RETURN(RedisReply gen, m.redis.Command({"INCR", m.opt.prefix + ":gen"}));
    const std::string name = m.opt.prefix + ":idx:" + std::to_string(gen.integer);
    FRUGAL_RETURN_IF_ERROR(m.redis.Command(m.CreateIndexArgs(name, p, m.Current())).status());
    // RediSearch fills the new index from the existing hashes in the background; new writes
    // reach both indexes meanwhile.
    // FT.INFO is not free on a large index (tens of ms): poll gently.
    if (!m.WaitIndexed(name, deadline, std::chrono::milliseconds(100))) {
      (void)m.redis.Command({"FT.DROPINDEX", name});
      return DeadlineExceeded("the new index " + name + " was not complete in time");
    }
    FRUGAL_RETURN_IF_ERROR(m.redis.Command({"FT.ALIASUPDATE", m.Alias(), name}).status());
    // The old index's hashes are the new one's: drop only the index (no DD).
    if (old != name) (void)m.redis.Command({"FT.DROPINDEX", old});
    return Status::Ok();
  }();
  unlock();
  if (!st.ok()) {
    m.Failed("rotate", st);
    return st;
  }
  m.rotations.fetch_add(1);
  m.cm.rotations_total->Add(1);
  m.cm.rotation_s->Observe(MsSince(t0) / 1e3);
  return Status::Ok();
}

}  // namespace frugal::cache
