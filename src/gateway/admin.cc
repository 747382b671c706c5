#include "gateway/admin.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cache/embedder.h"
#include "gateway/clock.h"
#include "http/json_limits.h"

// GCC 12 reports a false -Wrestrict overlap in "literal" + std::string (GCC bug 105329);
// clang has no such warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace frugal::gateway {
namespace {

using Clock = std::chrono::steady_clock;

// Prometheus label value: quotes, backslashes and newlines escaped.
std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void Admin::Join() {
  if (rotation_thread_.joinable()) rotation_thread_.join();
}

Admin::json Admin::WorkerJson(const WorkerInfo& w,
                              const std::map<std::string, double>& shares) const {
  auto s = shares.find(w.name);
  // A signal the worker does not give is null, never a made-up 0.
  const auto& l = w.load;
  auto sig = [&](LoadSignal bit, const json& v) { return l.Has(bit) ? v : json(nullptr); };
  // The kind as configured, else as detected (the report's source names it).
  std::string kind(WorkerKindName(w.kind));
  if (w.kind == WorkerKind::kAuto && !l.source.empty()) {
    kind = l.source.starts_with("none") ? "openai" : l.source.substr(0, l.source.find(' '));
  }
  return {{"name", w.name},
          {"url", w.url},
          {"kind", kind},
          {"load_source", l.source},
          {"load_known", l.Has(kSignalWaiting) || l.Has(kSignalRunning)},
          {"missing_metrics", l.missing},
          {"state", std::string(StateName(w.state))},
          {"weight", w.weight},
          {"queue", static_cast<int64_t>(std::llround(w.est_queue))},
          {"in_flight", w.in_flight},
          {"backlog_ms", w.est_backlog_ms},
          {"reported",
           {{"waiting", sig(kSignalWaiting, l.waiting)},
            {"running", sig(kSignalRunning, l.running)},
            {"backlog_ms", sig(kSignalBacklog, l.backlog_ms)},
            {"prefill_ms_per_token", sig(kSignalPrefill, l.prefill_ms_per_token)},
            {"decode_ms_per_token", sig(kSignalDecode, l.decode_ms_per_token)},
            {"kv_usage", sig(kSignalKvUsage, l.kv_usage)}}},
          {"share", s == shares.end() ? 0.0 : s->second},
          {"chosen", w.chosen},
          {"ejections", w.ejections},
          {"simulated", w.load.simulated},
          {"last_error", w.last_error}};
}

void Admin::Handle(const http::Request& req, const std::shared_ptr<http::Responder>& out) {
  auto reply = [&](const Status& st, int ok_status, const json& body) {
    if (st.ok()) {
      out->Send(ok_status, "application/json", body.dump());
      return;
    }
    const int code = st.code() == StatusCode::kNotFound ? 404 : 400;
    out->Send(code, "application/json", http::OpenAiErrorBody(code, st.message()));
  };
  if (!http::JsonDepthWithin(req.body)) {
    out->Send(400, "application/json",
              http::OpenAiErrorBody(400, "the request body nests too deeply"));
    return;
  }
  const std::string& p = req.path;
  const std::string prefix = "/admin/workers/";
  if (p == "/admin/workers" && req.method == "GET") {
    json ws = json::array();
    const auto shares = ctx_.stats->Shares(UnixNow());
    for (const auto& w : ctx_.pool->List()) ws.push_back(WorkerJson(w, shares));
    reply(Status::Ok(), 200, {{"policy", ctx_.policy->name()}, {"workers", ws}});
  } else if (p == "/admin/workers" && req.method == "POST") {
    json j = json::parse(req.body, nullptr, false);
    if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) {
      reply(InvalidArgument("send {\"name\": ..., \"url\": \"http://host:port\", \"weight\": 1}"),
            0, nullptr);
      return;
    }
    const auto current = ctx_.pool->List();
    auto taken = [&](const std::string& n) {
      return std::any_of(current.begin(), current.end(),
                         [&](const WorkerInfo& w) { return w.name == n; });
    };
    std::string name;
    if (j.contains("name") && j["name"].is_string()) {
      name = j["name"].get<std::string>();
      if (taken(name)) {
        out->Send(409, "application/json",
                  http::OpenAiErrorBody(409, "a worker named '" + name + "' exists"));
        return;
      }
    } else {
      for (size_t i = 0; name.empty() || taken(name); ++i) name = "w" + std::to_string(i);
    }
    const double weight =
        j.contains("weight") && j["weight"].is_number() ? j["weight"].get<double>() : 1.0;
    StatusOr<WorkerKind> kind = WorkerKind::kAuto;
    if (j.contains("kind") && j["kind"].is_string())
      kind = ParseWorkerKind(j["kind"].get<std::string>());
    Status st = kind.ok() ? ctx_.pool->Add(name, j["url"].get<std::string>(), weight, *kind)
                          : kind.status();
    reply(st, 201, {{"added", name}});
    if (st.ok()) ctx_.poll_now();  // know its load and models at once
  } else if (p.starts_with(prefix) && req.method == "DELETE") {
    const std::string name = p.substr(prefix.size());
    const Status st = ctx_.pool->Remove(name);
    if (st.ok()) ctx_.probe->Forget(name);
    reply(st, 200, {{"removed", name}});
  } else if (p.starts_with(prefix) && req.method == "POST" &&
             (p.ends_with("/drain") || p.ends_with("/undrain"))) {
    const bool drain = p.ends_with("/drain");
    const std::string name = p.substr(prefix.size(), p.size() - prefix.size() - (drain ? 6 : 8));
    reply(ctx_.pool->SetDraining(name, drain), 200, {{drain ? "draining" : "undrained", name}});
  } else if (p == "/admin/cache/invalidate" && req.method == "POST") {
    if (ctx_.cache == nullptr) {
      reply(InvalidArgument("the cache is off"), 0, nullptr);
      return;
    }
    json j = json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
    if (!j.is_object()) {
      reply(InvalidArgument("send {\"namespace\": ...} or {\"all\": true}"), 0, nullptr);
      return;
    }
    size_t n = 0;
    if (j.value("all", false)) {
      n = ctx_.cache->cache().Clear();
    } else if (j.contains("namespace") && j["namespace"].is_string()) {
      n = ctx_.cache->cache().InvalidateNamespace(j["namespace"].get<std::string>());
    } else {
      reply(InvalidArgument("send {\"namespace\": ...} or {\"all\": true}"), 0, nullptr);
      return;
    }
    reply(Status::Ok(), 200, {{"invalidated", n}});
  } else if (p == "/admin/cache/rotate" && req.method == "POST") {
    StartRotation(req.body, out);
  } else if (p == "/admin/cache/rotation" && req.method == "GET") {
    MutexLock l(rotation_mu_);
    reply(Status::Ok(), 200, RotationJson());
  } else {
    out->Send(
        404, "application/json",
        http::OpenAiErrorBody(404, "unknown admin route " + req.method + " " + p, "not_found"));
  }
}

Admin::json Admin::RotationJson() const {
  json j = {{"state", rotation_.state},
            {"rotations", ctx_.cache ? ctx_.cache->cache().rotations() : 0}};
  if (!rotation_.model.empty()) j["model"] = rotation_.model;
  if (rotation_.started_unix > 0) j["started"] = rotation_.started_unix;
  if (rotation_.state == "done" || rotation_.state == "failed") j["seconds"] = rotation_.seconds;
  if (!rotation_.error.empty()) j["error"] = rotation_.error;
  return j;
}

// {"model": PATH} moves the cache to another embedding model (every stored query embedded
// again), {"hnsw": {"m", "ef_construction", "ef_search"}} rebuilds with new index parameters,
// {} compacts. Lookups and inserts go on throughout (cache.h, Rotate); 202 at once, then
// GET /admin/cache/rotation until "done".
void Admin::StartRotation(const std::string& body, const std::shared_ptr<http::Responder>& out) {
  if (ctx_.cache == nullptr) {
    out->Send(400, "application/json", http::OpenAiErrorBody(400, "the cache is off"));
    return;
  }
  json j = json::parse(body.empty() ? "{}" : body, nullptr, false);
  if (!j.is_object()) {
    out->Send(400, "application/json",
              http::OpenAiErrorBody(
                  400,
                  "send {\"model\": PATH} and/or {\"hnsw\": {\"m\", \"ef_construction\", "
                  "\"ef_search\"}}"));
    return;
  }
  std::string model;
  if (j.contains("model")) {
    if (!j["model"].is_string() || j["model"].get<std::string>().empty()) {
      out->Send(400, "application/json",
                http::OpenAiErrorBody(400, "\"model\" must be the path of an embedding model"));
      return;
    }
    model = j["model"].get<std::string>();
    std::error_code ec;
    if (!std::filesystem::exists(model, ec)) {
      out->Send(400, "application/json",
                http::OpenAiErrorBody(400, "no embedding model at " + model));
      return;
    }
  }
  std::optional<cache::HnswParams> hnsw;
  if (j.contains("hnsw")) {
    const json& h = j["hnsw"];
    if (!h.is_object()) {
      out->Send(400, "application/json", http::OpenAiErrorBody(400, "\"hnsw\" must be an object"));
      return;
    }
    cache::HnswParams hp;
    hp.m = static_cast<size_t>(ctx_.cfg->cache.hnsw_m);
    hp.ef_construction = static_cast<size_t>(ctx_.cfg->cache.hnsw_ef_construction);
    hp.ef_search = static_cast<size_t>(ctx_.cfg->cache.hnsw_ef_search);
    for (auto [key, field] : {std::pair<const char*, size_t*>{"m", &hp.m},
                              {"ef_construction", &hp.ef_construction},
                              {"ef_search", &hp.ef_search}}) {
      if (!h.contains(key)) continue;
      if (!h[key].is_number_integer() || h[key].get<int64_t>() < 2 ||
          h[key].get<int64_t>() > 4096) {
        out->Send(400, "application/json",
                  http::OpenAiErrorBody(
                      400, std::string("hnsw.") + key + " must be an integer in [2, 4096]"));
        return;
      }
      *field = static_cast<size_t>(h[key].get<int64_t>());
    }
    hnsw = hp;
  }
  MutexLock l(rotation_mu_);
  if (rotation_.state == "running") {
    out->Send(409, "application/json",
              http::OpenAiErrorBody(409, "a rotation is running (GET /admin/cache/rotation)"));
    return;
  }
  if (rotation_thread_.joinable()) rotation_thread_.join();  // the previous one has finished
  rotation_ = {};
  rotation_.state = "running";
  rotation_.model = model;
  rotation_.started_unix = static_cast<int64_t>(UnixNow());
  rotation_thread_ = std::thread([this, model, hnsw] {
    const auto t0 = Clock::now();
    Status st = Status::Ok();
    cache::RotateOptions ro;
    ro.hnsw = hnsw;
    if (!model.empty()) {
      auto e = cache::OpenEngineEmbedder(model, ctx_.cfg->cache.threads);
      if (e.ok()) {
        ro.embedder = std::move(e).value();
      } else {
        st = e.status();
      }
    }
    if (st.ok()) st = ctx_.cache->cache().Rotate(ro);
    MutexLock l2(rotation_mu_);
    rotation_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    rotation_.state = st.ok() ? "done" : "failed";
    if (!st.ok()) rotation_.error = st.message();
    std::fprintf(stderr, "frugal gateway: cache rotation %s in %.2f s%s%s\n",
                 rotation_.state.c_str(), rotation_.seconds, st.ok() ? "" : ": ",
                 st.ok() ? "" : st.message().c_str());
  });
  out->Send(202, "application/json", RotationJson().dump());
}

std::string Admin::RenderMetrics() {
  std::string s = ctx_.metrics->Render();
  const auto ws = ctx_.pool->List();
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    s += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& w : ws) {
      const std::string v = value(w);
      if (!v.empty()) s += v;
    }
  };
  auto num = [](double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.17g", v);
    return std::string(b);
  };
  family("frugal_gateway_worker_state", "gauge", "1 for the worker's current state",
         [&](const WorkerInfo& w) {
           std::string o;
           for (auto st : {WorkerState::kHealthy, WorkerState::kEjected, WorkerState::kHalfOpen,
                           WorkerState::kDraining}) {
             o += "frugal_gateway_worker_state{worker=\"" + LabelValue(w.name) + "\",state=\"" +
                  std::string(StateName(st)) + "\"} " + (w.state == st ? "1" : "0") + "\n";
           }
           return o;
         });
  auto simple = [&](const char* name, const char* type, const char* help, auto get) {
    family(name, type, help, [&](const WorkerInfo& w) {
      return std::string(name) + "{worker=\"" + LabelValue(w.name) + "\"} " + num(get(w)) + "\n";
    });
  };
  simple("frugal_gateway_worker_weight", "gauge", "configured routing weight",
         [](const WorkerInfo& w) { return w.weight; });
  simple("frugal_gateway_worker_in_flight", "gauge",
         "requests this gateway has in flight on the worker",
         [](const WorkerInfo& w) { return static_cast<double>(w.in_flight); });
  simple("frugal_gateway_worker_queue", "gauge",
         "estimated requests waiting and running on the worker",
         [](const WorkerInfo& w) { return w.est_queue; });
  simple("frugal_gateway_worker_backlog_ms", "gauge",
         "estimated machine time of the work ahead on the worker",
         [](const WorkerInfo& w) { return w.est_backlog_ms; });
  simple("frugal_gateway_worker_chosen_total", "counter", "requests routed to the worker",
         [](const WorkerInfo& w) { return static_cast<double>(w.chosen); });
  simple("frugal_gateway_worker_ejections_total", "counter", "times the worker was ejected",
         [](const WorkerInfo& w) { return static_cast<double>(w.ejections); });
  if (ctx_.cache) s += ctx_.cache->cache().metrics().Render();
  return s;
}

std::string Admin::StatusJson(bool full) {
  const int64_t now = UnixNow();
  const auto shares = ctx_.stats->Shares(now);
  json ws = json::array();
  for (const auto& w : ctx_.pool->List()) {
    json j = WorkerJson(w, shares);
    if (!full) {
      j.erase("url");
      j.erase("last_error");
    }
    ws.push_back(std::move(j));
  }
  json series = json::array();
  for (const auto& p : ctx_.stats->Series(now)) {
    series.push_back(
        {{"t", p.t},
         {"requests", p.requests},
         {"errors", p.errors},
         {"p95_ms", p.p95_ms ? json(*p.p95_ms) : json(nullptr)},
         {"hit_rate", p.requests - p.errors > 0 ? json(static_cast<double>(p.hits) /
                                                       static_cast<double>(p.requests - p.errors))
                                                : json(nullptr)}});
  }
  const int64_t req = ctx_.totals->requests.load(), err = ctx_.totals->errors.load(),
                hits = ctx_.totals->hits.load();
  const auto p95 = ctx_.stats->P95Ms(now, 60);
  json totals = {{"requests", req},
                 {"errors", err},
                 {"retries", ctx_.proxy->retried.load()},
                 {"cache_hits", hits},
                 {"hit_rate",
                  req - err > 0 ? static_cast<double>(hits) / static_cast<double>(req - err) : 0.0},
                 {"p95_ms_1m", p95 ? json(*p95) : json(nullptr)},
                 {"rps_1m", ctx_.stats->Rps(now, 60)},
                 {"ejections", ctx_.pool->ejections()},
                 {"prefix_routed", ctx_.pool->prefix_routed()}};
  if (ctx_.audits != nullptr) {
    // The false-hit estimate over the audited hits, with its Wilson 95% interval (sound with
    // few audits and with rates near 0, where the normal approximation is not).
    // Disagreements first: a disagreement counts in `audited` before `disagreements`, so this
    // order never sees k > n.
    const int64_t k = ctx_.audits->disagreements.load();
    const int64_t n = ctx_.audits->audited.load();
    totals["cache_audited"] = n;
    totals["cache_audit_disagreements"] = k;
    totals["cache_audits_failed"] = ctx_.audits->failed.load();
    totals["cache_audits_skipped"] = ctx_.audits->skipped.load();
    totals["cache_audits_capped"] = ctx_.audits->capped.load();
    if (n > 0) {
      const auto [lo, hi] = WilsonInterval(k, n);
      totals["false_hit_rate"] = static_cast<double>(k) / static_cast<double>(n);
      totals["false_hit_rate_95"] = json::array({lo, hi});
    } else {
      totals["false_hit_rate"] = nullptr;
      totals["false_hit_rate_95"] = nullptr;
    }
  }
  json g = {{"policy", ctx_.policy->name()},
            {"uptime_s", MsSince(ctx_.started) / 1e3},
            {"version", "0.1.0"},
            {"cache", ctx_.cache != nullptr},
            {"cache_audit_rate", ctx_.audits != nullptr ? ctx_.cfg->cache_audit.rate : 0.0},
            {"redacted", !full}};
  return json{{"gateway", g},
              {"workers", ws},
              {"window_s", TrafficStats::kBuckets * TrafficStats::kBucketS},
              {"bucket_s", TrafficStats::kBucketS},
              {"series", series},
              {"totals", totals}}
      .dump();
}

}  // namespace frugal::gateway
