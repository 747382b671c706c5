#include "gateway/cache_front.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "gateway/clock.h"
#include "http/json_limits.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;

}  // namespace

CacheFront::CacheFront(std::unique_ptr<cache::Cache> cache, size_t lanes, CacheFrontMetrics metrics)
    : cache_(std::move(cache)),
      metrics_(metrics),
      pool_(std::make_unique<boost::asio::thread_pool>(std::max<size_t>(1, lanes))) {}

CacheFront::~CacheFront() { Join(); }

void CacheFront::Join() { pool_->join(); }

void CacheFront::Post(std::function<void()> task) { boost::asio::post(*pool_, std::move(task)); }

void CacheFront::Lookup(CacheKey key, ReplyShape shape, std::shared_ptr<http::Responder> out,
                        std::function<void(Looked)> then) {
  boost::asio::post(*pool_, [this, key = std::move(key), shape = std::move(shape),
                             out = std::move(out), then = std::move(then)] {
    auto r = cache_->Lookup(key.scope, key.ns, key.query);
    if (!r.ok()) {
      std::fprintf(stderr, "frugal gateway: cache lookup failed: %s\n",
                   r.status().message().c_str());
    } else if (std::string content; r->hit && Reply(shape, out, r->response, &content)) {
      if (metrics_.lookups != nullptr) metrics_.lookups->Add(1, "hit");
      then({true, std::move(content), std::nullopt});
      return;
    }
    if (metrics_.lookups != nullptr) metrics_.lookups->Add(1, "miss");
    Looked miss;
    if (r.ok()) miss.miss = std::move(r).value();
    then(std::move(miss));
  });
}

bool CacheFront::Reply(const ReplyShape& shape, const std::shared_ptr<http::Responder>& out,
                       const std::string& stored, std::string* content_out) {
  const json s = http::JsonDepthWithin(stored) ? json::parse(stored, nullptr, false) : json();
  if (!s.is_object() || !s.contains("content") || !s["content"].is_string() ||
      (s.contains("finish_reason") && !s["finish_reason"].is_string()) ||
      (s.contains("usage") && !s["usage"].is_object() && !s["usage"].is_null())) {
    if (metrics_.bad_entries != nullptr) metrics_.bad_entries->Add();
    return false;
  }
  const std::string content = s["content"].get<std::string>();
  const std::string finish = s.value("finish_reason", "stop");
  *content_out = content;
  const std::string usage =
      s.contains("usage") && !s["usage"].is_null() ? s["usage"].dump() : std::string();
  api::ResponseHead head;
  head.chat = shape.chat;
  head.id = (shape.chat ? "chatcmpl-cache-" : "cmpl-cache-") + std::to_string(++hits_);
  head.model = shape.model;
  head.created = UnixNow();
  const http::Headers h = {{"X-Frugal-Cache", "hit"}};
  if (!shape.stream) {
    head.fingerprint = "frugal-cache";
    out->Send(200, "application/json", api::CompletionJson(head, content, finish, usage), h);
    return true;
  }
  // Replayed as the worker would have streamed it: role, the text in pieces, finish, usage.
  out->StartStream(200, "text/event-stream", h);
  out->Write(api::ReplayStream(head, content, finish, usage, shape.include_usage));
  out->End();
  if (metrics_.ttft != nullptr) {
    metrics_.ttft->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - shape.start).count());
  }
  return true;
}

void CacheFront::Store(CacheKey key, const api::CompletionText& answer,
                       std::optional<cache::LookupResult> looked_up) {
  json s = {{"content", answer.content}, {"finish_reason", answer.finish_reason}};
  if (!answer.usage_json.empty()) {
    json usage = json::parse(answer.usage_json, nullptr, false);
    if (!usage.is_discarded()) s["usage"] = std::move(usage);
  }
  boost::asio::post(
      *pool_, [this, key = std::move(key), looked_up = std::move(looked_up), v = s.dump()] {
        const Status st =
            cache_->Insert(key.scope, key.ns, key.query, v, looked_up ? &*looked_up : nullptr);
        if (!st.ok())
          std::fprintf(stderr, "frugal gateway: cache insert failed: %s\n", st.message().c_str());
      });
}

}  // namespace frugal::gateway
