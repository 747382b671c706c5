#include "balancer/http_load_probe.h"

#include <chrono>

namespace frugal::gateway {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

void HttpLoadProbe::Forget(const std::string& name) {
  MutexLock lock(mu_);
  const std::string prefix = name + "@";
  std::erase_if(detected_, [&](const auto& e) { return e.first.starts_with(prefix); });
  std::erase_if(adapters_, [&](const auto& e) { return e.first.starts_with(prefix); });
}

void HttpLoadProbe::Probe(const WorkerAddress& worker,
                          std::function<void(StatusOr<WorkerLoad>)> done) {
  WorkerKind kind = worker.kind;
  if (kind == WorkerKind::kAuto) {
    MutexLock lock(mu_);
    if (auto it = detected_.find(Key(worker)); it != detected_.end()) kind = it->second;
  }
  switch (kind) {
    case WorkerKind::kAuto:
    case WorkerKind::kFrugal:
      QueueDepth(worker, kind == WorkerKind::kAuto, std::move(done));
      return;
    case WorkerKind::kOpenAi:
      Models(worker, kind == worker.kind, std::move(done));
      return;
    default:
      Metrics(worker, kind, std::move(done));
      return;
  }
}

void HttpLoadProbe::Get(const WorkerAddress& w, const char* target, const char* accept, Got got) {
  http::ClientRequest r;
  r.host = w.host;
  r.port = w.port;
  r.target = target;
  r.headers = {{"Accept", accept}};
  if (const std::string key = key_of_(w.name); !key.empty())
    r.headers.emplace_back("Authorization", "Bearer " + key);
  auto body = std::make_shared<std::string>();
  auto code = std::make_shared<int>(0);
  http::ClientCallbacks cb;
  cb.on_headers = [code](int s, const http::Headers&) { *code = s; };
  cb.on_data = [body](std::string_view d) { body->append(d); };
  cb.on_done = [body, code, got = std::move(got)](const Status& st, size_t) {
    got(st, *code, *body);
  };
  client_->Send(std::move(r), std::move(cb));
}

std::optional<Status> HttpLoadProbe::Failed(const Status& st, int code) {
  if (!st.ok()) return st;
  if (code >= 500) return IoError("HTTP " + std::to_string(code));
  return std::nullopt;
}

std::string HttpLoadProbe::Key(const WorkerAddress& w) {
  return w.name + "@" + w.host + ":" + std::to_string(w.port);
}

void HttpLoadProbe::Remember(const WorkerAddress& w, WorkerKind kind) {
  MutexLock lock(mu_);
  detected_[Key(w)] = kind;
}

void HttpLoadProbe::QueueDepth(const WorkerAddress& w, bool detecting, Done done) {
  Get(w, "/queue_depth", "application/json",
      [this, w, detecting, done = std::move(done)](const Status& st, int code,
                                                   const std::string& body) {
        // While detecting, 501 Not Implemented says the endpoint is not there, as 404 does.
        if (detecting && st.ok() && code == 501) return Metrics(w, WorkerKind::kAuto, done);
        if (auto f = Failed(st, code)) return done(*f);
        auto load = code == 200 ? ParseWorkerLoad(body)
                                : StatusOr<WorkerLoad>(NotFound("HTTP " + std::to_string(code)));
        if (load.ok() || !detecting) {
          if (load.ok() && detecting) Remember(w, WorkerKind::kFrugal);
          return done(load);
        }
        Metrics(w, WorkerKind::kAuto, done);  // not a Frugal worker: an engine's /metrics?
      });
}

void HttpLoadProbe::Metrics(const WorkerAddress& w, WorkerKind kind, Done done) {
  Get(w, "/metrics", "text/plain",
      [this, w, kind, done = std::move(done)](const Status& st, int code, const std::string& body) {
        // llama-server started without --metrics answers 501: an OpenAI-compatible server whose
        // load the gateway cannot read, not a failing one.
        if (kind == WorkerKind::kAuto && st.ok() && code == 501) {
          return Models(w, /*configured=*/false, done);
        }
        if (auto f = Failed(st, code)) return done(*f);
        WorkerKind k = kind;
        if (k == WorkerKind::kAuto) {
          k = code == 200 ? DetectKind(body) : WorkerKind::kAuto;
          if (k == WorkerKind::kAuto) return Models(w, /*configured=*/false, done);
          Remember(w, k);
        } else if (code != 200) {
          return done(InvalidArgument("GET /metrics of a " + std::string(WorkerKindName(k)) +
                                      " worker answered HTTP " + std::to_string(code)));
        }
        const double now_s = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
        StatusOr<WorkerLoad> load = WorkerLoad();
        {
          MutexLock lock(mu_);
          auto& a = adapters_[Key(w)];
          if (!a || a->first != k) {
            a = std::make_unique<std::pair<WorkerKind, MetricsLoadAdapter>>(k,
                                                                            MetricsLoadAdapter(k));
          }
          load = a->second.Update(body, now_s);
        }
        if (k == WorkerKind::kLlamaCpp && load.ok() && !load->Has(kSignalBacklog))
          return Slots(w, *std::move(load), done);
        done(std::move(load));
      });
}

void HttpLoadProbe::Slots(const WorkerAddress& w, WorkerLoad load, Done done) {
  Get(w, "/slots", "application/json",
      [load = std::move(load), done = std::move(done)](const Status& st, int code,
                                                       const std::string& body) mutable {
        const Status applied =
            st.ok() && code == 200
                ? ApplyLlamaCppSlots(body, load)
                : InvalidArgument(st.ok() ? "HTTP " + std::to_string(code) : st.message());
        if (!applied.ok()) load.missing.push_back("/slots (" + applied.message() + ")");
        done(std::move(load));
      });
}

void HttpLoadProbe::Models(const WorkerAddress& w, bool configured, Done done) {
  Get(w, "/v1/models", "application/json",
      [this, w, configured, done = std::move(done)](const Status& st, int code,
                                                    const std::string&) {
        if (auto f = Failed(st, code)) return done(*f);
        if (code != 200) {
          return done(InvalidArgument("GET /v1/models answered HTTP " + std::to_string(code) +
                                      ": not an OpenAI-compatible server"));
        }
        if (!configured) Remember(w, WorkerKind::kOpenAi);
        WorkerLoad l;
        l.source = "none: an openai worker has no load endpoint (the gateway's own books)";
        done(l);
      });
}

}  // namespace frugal::gateway
