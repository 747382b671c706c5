#include "gateway/audit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "http/json_limits.h"
#include "text/numbers.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The answer's numbers as a sorted multiset of values: the same numbers in another order agree.
std::vector<std::string> NumberSet(std::string_view text) {
  auto v = text::NumberValues(text::ExtractNumbers(text, text::NumberReading::kAnswer));
  std::sort(v.begin(), v.end());
  return v;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 0;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0;
}

// For the log: one line, at most `max` bytes, cut on a UTF-8 character boundary.
std::string OneLine(std::string_view s, size_t max = 200) {
  std::string out;
  const bool cut = s.size() > max;
  if (cut) {
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s = s.substr(0, n);
  }
  out.reserve(s.size() + 3);
  for (char c : s) out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  if (cut) out += "...";
  return out;
}

}  // namespace

const char* AuditResultName(AuditResult r) {
  switch (r) {
    case AuditResult::kAgree:
      return "agree";
    case AuditResult::kDisagreeNumbers:
      return "disagree_numbers";
    case AuditResult::kDisagreeMeaning:
      return "disagree_meaning";
    case AuditResult::kFailed:
      return "failed";
    case AuditResult::kSkipped:
      return "skipped";
    case AuditResult::kCapped:
      return "capped";
  }
  return "failed";
}

AnswerComparison CompareAnswers(std::string_view cached, std::string_view fresh,
                                cache::Embedder& embedder, double min_similarity) {
  if (NumberSet(cached) != NumberSet(fresh)) return {AuditResult::kDisagreeNumbers, std::nullopt};
  auto a = embedder.Embed(cached);
  auto b = embedder.Embed(fresh);
  if (!a.ok() || !b.ok()) return {AuditResult::kFailed, std::nullopt};
  const double cos = Cosine(*a, *b);
  return {cos >= min_similarity ? AuditResult::kAgree : AuditResult::kDisagreeMeaning, cos};
}

std::optional<std::string> AuditRequestBody(const std::string& body) {
  if (!http::JsonDepthWithin(body)) return std::nullopt;
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  j["stream"] = false;
  j.erase("stream_options");
  return j.dump();
}

bool AuditSampler::Sample() {
  if (rate_ <= 0) return false;
  if (rate_ >= 1) return true;
  MutexLock lock(mu_);
  return std::uniform_real_distribution<double>(0, 1)(rng_) < rate_;
}

void BufferingResponder::Send(int status, std::string, std::string body, http::Headers) {
  MutexLock lock(mu_);
  status_ = status;
  body_ = std::move(body);
  if (body_.size() > max_body_) body_.resize(max_body_);
  ended_ = true;
}

void BufferingResponder::StartStream(int status, std::string, http::Headers) {
  MutexLock lock(mu_);
  status_ = status;
}

void BufferingResponder::Write(std::string data) {
  MutexLock lock(mu_);
  body_.append(data, 0, std::min(data.size(), max_body_ - std::min(max_body_, body_.size())));
}

void BufferingResponder::End() {
  MutexLock lock(mu_);
  ended_ = true;
}

int BufferingResponder::status() const {
  MutexLock lock(mu_);
  return status_;
}

std::string BufferingResponder::body() const {
  MutexLock lock(mu_);
  return body_;
}

bool BufferingResponder::ended() const {
  MutexLock lock(mu_);
  return ended_;
}

Auditor::Auditor(AuditContext ctx)
    : ctx_(std::move(ctx)),
      sampler_(ctx_.rate, ctx_.seed != 0 ? ctx_.seed : std::random_device{}()) {
  // Never counted as a client request, wherever the gateway's context pointed.
  ctx_.proxy.stats = nullptr;
  ctx_.proxy.metrics = nullptr;
}

void Auditor::Count(AuditResult r) {
  switch (r) {
    case AuditResult::kAgree:
      ++totals_.audited;
      break;
    case AuditResult::kDisagreeNumbers:
    case AuditResult::kDisagreeMeaning:
      ++totals_.audited;
      ++totals_.disagreements;
      break;
    case AuditResult::kFailed:
      ++totals_.failed;
      break;
    case AuditResult::kSkipped:
      ++totals_.skipped;
      break;
    case AuditResult::kCapped:
      ++totals_.capped;
      break;
  }
  if (ctx_.audits != nullptr) ctx_.audits->Add(1, AuditResultName(r));
}

bool Auditor::TryAcquire() {
  if (ctx_.max_in_flight <= 0) {
    ++in_flight_;
    return true;
  }
  int n = in_flight_.load();
  do {
    if (n >= ctx_.max_in_flight) return false;
  } while (!in_flight_.compare_exchange_weak(n, n + 1));
  return true;
}

void Auditor::Finish(AuditResult r) {
  Count(r);
  --in_flight_;
}

void Auditor::Start(const ProxyInput& client, std::string cached) {
  auto body = AuditRequestBody(client.body);
  if (!body) {
    Count(AuditResult::kFailed);
    return;
  }
  if (!TryAcquire()) {
    Count(AuditResult::kCapped);
    return;
  }
  ProxyInput in;
  in.chat = client.chat;
  in.stream = false;
  in.body = std::move(*body);
  in.model = client.model;
  in.cost = client.cost;
  in.prefix = client.prefix;
  in.start = Clock::now();
  in.deadline = in.start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(ctx_.request_timeout_s));
  in.keep_answer = true;  // the worker's complete answer comes back in the result
  const std::string model = in.model;
  auto proxy = std::make_shared<ProxyRequest>(ctx_.proxy, std::move(in),
                                              std::make_shared<BufferingResponder>());
  // `done` runs on an upstream or timer thread: the comparison moves to the cache pool.
  proxy->Start([this, model, cached = std::move(cached)](const ProxyResult& r) {
    const bool stopping = ctx_.proxy.stopped != nullptr && ctx_.proxy.stopped->load();
    if (r.status == 503 || r.status == 499 || stopping) {
      Finish(AuditResult::kSkipped);
      return;
    }
    if (r.status != 200 || !r.answer) {
      Finish(AuditResult::kFailed);
      return;
    }
    ctx_.run_on_cache_pool([this, model, cached, fresh = r.answer->content] {
      Judge(model, cached, fresh);
      --in_flight_;
    });
  });
}

void Auditor::Judge(const std::string& model, const std::string& cached, const std::string& fresh) {
  const AnswerComparison c = CompareAnswers(cached, fresh, *ctx_.embedder, ctx_.min_similarity);
  Count(c.result);
  if (c.result == AuditResult::kDisagreeNumbers || c.result == AuditResult::kDisagreeMeaning) {
    // One line per disagreement: the model and both answers, never a key or a worker's address.
    const std::string cosine = c.similarity ? ", cosine " + ShortNumber(*c.similarity) : "";
    std::fprintf(stderr,
                 "frugal gateway: cache audit: %s (model %s%s): cached \"%s\" vs worker \"%s\"\n",
                 AuditResultName(c.result), OneLine(model, 80).c_str(), cosine.c_str(),
                 OneLine(cached).c_str(), OneLine(fresh).c_str());
  }
}

}  // namespace frugal::gateway
