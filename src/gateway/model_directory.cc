#include "gateway/model_directory.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

namespace frugal::gateway {

ModelDirectory::Verdict ModelDirectory::Check(const std::string& model) const {
  // Only workers whose model lists are known can say no: before the first list arrives every
  // request goes through (and the worker answers for its model).
  MutexLock lock(mu_);
  const bool served = std::any_of(models_.begin(), models_.end(),
                                  [&](const auto& wm) { return wm.second.count(model) > 0; });
  if (models_.empty() || served) return Verdict::kServed;
  return ever_served_.count(model) ? Verdict::kGone : Verdict::kUnknown;
}

std::vector<std::string> ModelDirectory::Lacking(const std::string& model) const {
  std::vector<std::string> out;
  MutexLock lock(mu_);
  for (const auto& [w, ids] : models_) {
    if (!ids.count(model)) out.push_back(w);
  }
  return out;
}

std::set<std::string> ModelDirectory::Ids() const {
  std::set<std::string> ids;
  MutexLock lock(mu_);
  for (const auto& [w, m] : models_) ids.insert(m.begin(), m.end());
  return ids;
}

void ModelDirectory::Retain(const std::vector<WorkerAddress>& targets) {
  MutexLock lock(mu_);
  for (auto it = models_.begin(); it != models_.end();) {
    const bool live = std::any_of(targets.begin(), targets.end(),
                                  [&](const WorkerAddress& t) { return t.name == it->first; });
    it = live ? std::next(it) : models_.erase(it);
  }
}

void ModelDirectory::OnHealthy(const WorkerAddress& w, bool refresh, http::Client& client) {
  {
    MutexLock lock(mu_);
    refresh = refresh || !models_.count(w.name);
  }
  if (!refresh) return;
  http::ClientRequest m;
  m.host = w.host;
  m.port = w.port;
  m.target = "/v1/models";
  if (const std::string key = key_of_(w.name); !key.empty())
    m.headers.emplace_back("Authorization", "Bearer " + key);
  auto body = std::make_shared<std::string>();
  http::ClientCallbacks cb;
  cb.on_data = [body](std::string_view d) { body->append(d); };
  cb.on_done = [this, name = w.name, body](const Status& st, size_t) {
    if (!st.ok()) return;
    const auto j = nlohmann::json::parse(*body, nullptr, false);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return;
    std::set<std::string> ids;
    for (const auto& e : j["data"]) {
      if (e.is_object() && e.contains("id") && e["id"].is_string())
        ids.insert(e["id"].get<std::string>());
    }
    MutexLock lock(mu_);
    if (pool_.size() == 0) return;
    ever_served_.insert(ids.begin(), ids.end());
    models_[name] = std::move(ids);
  };
  client.Send(std::move(m), std::move(cb));
}

}  // namespace frugal::gateway
