#include "gateway/proxy.h"

#include <strings.h>

#include <algorithm>
#include <utility>

#include "common/strings.h"
#include "gateway/clock.h"

// GCC 12 reports a false -Wrestrict overlap in "literal" + std::string (GCC bug 105329);
// clang has no such warning.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace frugal::gateway {
namespace {

using Clock = std::chrono::steady_clock;

// What a client is told of a failed attempt: the kind of failure, never the worker's address
// or the transport's own text (which names host:port); the full text goes to the worker's
// last_error, which only the admin API and an authorized status page show.
std::string PublicReason(const Status& st) {
  switch (st.code()) {
    case StatusCode::kDeadlineExceeded:
      return "the worker did not answer in time";
    case StatusCode::kIoError:
      return "the connection to the worker failed";
    default:
      return "the worker failed";
  }
}

// An answer worth keeping ended by itself or at the request's own max_tokens (part of the
// request, so the same request would get the same text again); never one cut by an error.
bool Complete(const std::string& finish_reason) {
  return finish_reason == "stop" || finish_reason == "length";
}

void Add(MetricsRegistry::Counter* c) {
  if (c != nullptr) c->Add();
}

}  // namespace

ProxyRequest::ProxyRequest(const ProxyContext& ctx, ProxyInput in,
                           std::shared_ptr<http::Responder> out)
    : ctx_(ctx), in_(std::move(in)) {
  stream_.out = std::move(out);
  stream_.wants_stream = in_.stream;
  stream_.chat = in_.chat;
  stream_.start = in_.start;
  stream_.ttft = ctx_.metrics != nullptr ? ctx_.metrics->ttft : nullptr;
}

void ProxyRequest::Start(std::function<void(const ProxyResult&)> done) {
  done_ = std::move(done);
  Dispatch();
}

void ProxyRequest::Cancel() {
  client_gone_ = true;
  std::shared_ptr<Attempt> a;
  {
    MutexLock lock(mu_);
    a = attempt_;
  }
  if (a) a->Cancel();
}

std::string ProxyRequest::TimeLimitMessage() const {
  return "the request ran past its time limit (" + ShortNumber(ctx_.request_timeout_s) + " s)";
}

bool ProxyRequest::Finish(ProxyResult result) {
  if (finished_.exchange(true)) return false;
  if (done_) done_(result);
  return true;
}

void ProxyRequest::After(std::chrono::microseconds delay, std::function<void()> f,
                         std::function<void()> stopped_instead) {
  ctx_.timers->After(delay, [self = shared_from_this(), f = std::move(f),
                             g = std::move(stopped_instead)](bool fired) { fired ? f() : g(); });
}

void ProxyRequest::Dispatch() {
  if (client_gone_) {
    Finish({499, std::nullopt});
    return;
  }
  const auto left = in_.deadline - Clock::now();
  if (left <= Clock::duration::zero()) {
    Refuse(504, TimeLimitMessage(), false);
    return;
  }
  // Workers already tried, and those whose model list lacks the request's model.
  std::vector<std::string> exclude = tried_;
  if (ctx_.lacking_model) {
    for (auto& w : ctx_.lacking_model(in_.model)) exclude.push_back(std::move(w));
  }
  Lease lease = ctx_.pool->Pick(*ctx_.policy, in_.cost, exclude, &in_.prefix);
  if (!lease) {
    if (tried_.empty()) {
      Refuse(503, "no healthy worker serving '" + in_.model + "' can take the request now", true);
    } else {
      Refuse(503, "no worker could take the request (" + last_error_ + ")", true);
    }
    return;
  }
  tried_.push_back(lease.name());
  if (ctx_.stats != nullptr) ctx_.stats->Routed(UnixNow(), lease.name());
  if (stream_.continuing) {
    stream_.notes.usage_json.clear();  // the new worker's usage is over the whole answer
  } else {
    stream_.started = false;
    stream_.sent_any = false;
    stream_.notes = {};
  }
  http::ClientRequest r;
  r.host = lease.host();
  r.port = lease.port();
  r.method = "POST";
  r.target = in_.chat ? "/v1/chat/completions" : "/v1/completions";
  r.headers = {{"Content-Type", "application/json"}};
  // The client's own key never goes on; the worker gets the gateway's, when it wants one.
  if (ctx_.worker_key) {
    if (const std::string key = ctx_.worker_key(lease.name()); !key.empty())
      r.headers.emplace_back("Authorization", "Bearer " + key);
  }
  r.body = stream_.continuing ? api::ContinuedRequestBody(in_.body, in_.chat, stream_.notes.content,
                                                          stream_.notes.pieces)
                              : in_.body;
  // What is left of the request's own time, not a fresh allowance per attempt.
  r.response_timeout =
      std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(left));
  auto attempt = std::make_shared<Attempt>(*ctx_.upstream, stream_);
  {
    MutexLock lock(mu_);
    attempt_ = attempt;
  }
  attempt->Start(std::move(r), std::move(lease),
                 [self = shared_from_this()](AttemptOutcome o) { self->OnOutcome(std::move(o)); });
  if (client_gone_) attempt->Cancel();
}

void ProxyRequest::OnOutcome(AttemptOutcome o) {
  {
    MutexLock lock(mu_);
    attempt_.reset();
  }
  WorkerPool& pool = *ctx_.pool;
  if (client_gone_) {
    // Our own cancel (the client left): nothing to answer, nothing against the worker.
    Finish({499, std::nullopt});
    if (stream_.started) stream_.out->End();
    return;
  }
  if (stream_.started) {
    OnStreamOutcome(std::move(o));
    return;
  }
  const Status& st = o.transport;
  if (st.code() == StatusCode::kDeadlineExceeded) {
    // Out of its own time: not retried (another worker would take as long) and not held against
    // the worker, whose health its checks and its 5xx judge.
    o.lease = Lease();
    Add(ctx_.metrics ? ctx_.metrics->timeouts : nullptr);
    Retry(AttemptFailure::kTimeout, PublicReason(st));
    return;
  }
  if (!st.ok()) {
    pool.ReportRequest(o.lease, Outcome::kFailure, st.message());
    last_error_ = tried_.back() + ": " + PublicReason(st);
    o.lease = Lease();
    Retry(o.bytes == 0 ? AttemptFailure::kNoResponse : AttemptFailure::kPartialResponse,
          PublicReason(st));
    return;
  }
  if (o.status == 503) {
    pool.ReportRequest(o.lease, Outcome::kOverloaded);
    last_error_ = tried_.back() + ": queue full";
    o.lease = Lease();
    Retry(AttemptFailure::kOverloaded, "worker overloaded");
    return;
  }
  pool.ReportRequest(o.lease, o.status >= 500 ? Outcome::kFailure : Outcome::kSuccess,
                     "HTTP " + std::to_string(o.status));
  o.lease = Lease();
  ProxyResult result{o.status, std::nullopt};
  if (o.status == 200 && in_.keep_answer) {
    if (auto done = api::ReadCompletion(o.body, in_.chat); done && Complete(done->finish_reason))
      result.answer = std::move(done);
  }
  // The worker's answer, as it gave it (its 4xx are the client's errors, passed on).
  std::string ct = "application/json";
  for (const auto& [k, v] : o.headers) {
    if (strcasecmp(k.c_str(), "content-type") == 0) ct = v;
  }
  Finish(std::move(result));
  stream_.out->Send(o.status, ct, std::move(o.body), RelayHeaders(tried_.back(), o.headers));
}

void ProxyRequest::OnStreamOutcome(AttemptOutcome o) {
  const Status& st = o.transport;
  api::StreamNotes& notes = stream_.notes;
  if (st.ok() && o.saw_done && o.status == 200) {
    ctx_.pool->ReportRequest(o.lease, Outcome::kSuccess);
    ProxyResult result{200, std::nullopt};
    if (in_.keep_answer && Complete(notes.finish_reason))
      result.answer = api::CompletionText{notes.content, notes.finish_reason, notes.usage_json};
    Finish(std::move(result));
    stream_.out->End();
    return;
  }
  if (st.code() == StatusCode::kDeadlineExceeded) {
    // The request's own limit: not the worker's failure, and no other worker would be faster.
    stream_.out->Write(api::ErrorEvent(504, TimeLimitMessage(), "timeout") +
                       std::string(api::kDoneEvent));
    Add(ctx_.metrics ? ctx_.metrics->timeouts : nullptr);
    Finish({504, std::nullopt});
    stream_.out->End();
    return;
  }
  // This attempt broke: midway, or (a continuation) before it began.
  std::string why = !st.ok()          ? PublicReason(st)
                    : o.status == 200 ? "the worker's stream ended early"
                    : o.status == 503 ? "worker overloaded"
                                      : "HTTP " + std::to_string(o.status);
  const bool refused = o.status >= 400 && o.status < 500;  // the engine's own answer
  ctx_.pool->ReportRequest(o.lease,
                           o.status == 503 ? Outcome::kOverloaded
                           : refused       ? Outcome::kSuccess
                                           : Outcome::kFailure,
                           st.ok() ? why : st.message());
  o.lease = Lease();
  last_error_ = tried_.back() + ": " + why;
  if (!refused && !stopping() && notes.finish_reason.empty() &&
      continuations_ < ctx_.max_continuations &&
      api::Continuable(in_.body, in_.chat, notes.content)) {
    // Continue the client's stream on another worker from the text it already has.
    stream_.continuing = true;
    ++continuations_;
    stream_.prefix_tokens = notes.pieces;
    Add(ctx_.metrics ? ctx_.metrics->continuations : nullptr);
    After(
        ctx_.retry->Backoff(continuations_), [this] { Dispatch(); },
        [this] { EndStreamWithError("the gateway is shutting down"); });
    return;
  }
  if (refused) why = "no worker could continue it (" + why + ")";
  EndStreamWithError(why);
}

void ProxyRequest::Retry(AttemptFailure failure, const std::string& why) {
  if (stopping() || !ctx_.retry->MayRetry(failure, retries_)) {
    if (failure == AttemptFailure::kTimeout) {
      Refuse(504, TimeLimitMessage(), false);
    } else if (failure == AttemptFailure::kPartialResponse) {
      Refuse(502, "the worker failed mid-response: " + why, false);
    } else {
      Refuse(503, "no worker could take the request (" + why + ")", true);
    }
    return;
  }
  ++retries_;
  if (ctx_.metrics != nullptr) {
    Add(ctx_.metrics->retries);
    ++ctx_.metrics->retried;
  }
  After(
      ctx_.retry->Backoff(retries_), [this] { Dispatch(); },
      [this] { Refuse(503, "the gateway is shutting down", true); });
}

void ProxyRequest::EndStreamWithError(const std::string& why) {
  stream_.out->Write(
      api::ErrorEvent(502, "the worker failed while streaming: " + why, "worker_failed") +
      std::string(api::kDoneEvent));
  Add(ctx_.metrics ? ctx_.metrics->stream_errors : nullptr);
  Finish({502, std::nullopt});
  stream_.out->End();
}

void ProxyRequest::Refuse(int status, const std::string& message, bool retry_after) {
  if (client_gone_) {
    Finish({499, std::nullopt});
    return;
  }
  if (stream_.started) {  // a continuation found no worker: the client's stream is open
    EndStreamWithError(message);
    return;
  }
  http::Headers h = {{"X-Frugal-Cache", "miss"}};
  if (retry_after) h.emplace_back("Retry-After", "1");
  Finish({status, std::nullopt});
  stream_.out->Send(status, "application/json",
                    http::OpenAiErrorBody(status, message,
                                          status == 503   ? "no_worker_available"
                                          : status == 504 ? "timeout"
                                                          : "worker_failed"),
                    h);
}

}  // namespace frugal::gateway
