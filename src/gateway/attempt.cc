#include "gateway/attempt.h"

#include <strings.h>

#include <utility>

namespace frugal::gateway {
namespace {

// Where the last complete SSE event of `b` ends (just past its blank line); 0 when none has.
size_t EventsEnd(std::string_view b) {
  for (size_t i = b.size(); i-- > 1;) {
    if (b[i] != '\n') continue;
    if (b[i - 1] == '\n' || (b[i - 1] == '\r' && i >= 2 && b[i - 2] == '\n')) return i + 1;
  }
  return 0;
}

}  // namespace

http::Headers RelayHeaders(const std::string& worker, const http::Headers& upstream) {
  http::Headers h = {{"X-Frugal-Cache", "miss"}};
  if (!worker.empty()) h.emplace_back("X-Frugal-Worker", worker);
  for (const auto& [k, v] : upstream) {
    if (strcasecmp(k.c_str(), "x-frugal-simulated") == 0) h.emplace_back("X-Frugal-Simulated", v);
  }
  return h;
}

void Attempt::Start(http::ClientRequest request, Lease lease,
                    std::function<void(AttemptOutcome)> done) {
  done_ = std::move(done);
  outcome_.lease = std::move(lease);
  // The callbacks hold the attempt: it lives until its on_done has run.
  auto self = shared_from_this();
  http::ClientCallbacks cb;
  cb.on_headers = [self](int status, const http::Headers& h) { self->OnHeaders(status, h); };
  cb.on_data = [self](std::string_view d) { self->OnData(d); };
  cb.on_done = [self](const Status& st, size_t bytes) { self->OnDone(st, bytes); };
  const uint64_t id = upstream_.Send(std::move(request), std::move(cb));
  bool cancel = false;
  {
    MutexLock lock(mu_);
    id_ = id;
    cancel = cancelled_;
  }
  if (cancel) upstream_.Cancel(id);
}

void Attempt::Cancel() {
  std::optional<uint64_t> id;
  {
    MutexLock lock(mu_);
    cancelled_ = true;
    id = id_;
  }
  if (id) upstream_.Cancel(*id);
}

void Attempt::OnHeaders(int status, const http::Headers& headers) {
  outcome_.status = status;
  outcome_.headers = headers;
  if (status != 200 || !stream_.wants_stream) return;
  relaying_ = true;
  if (!stream_.started) {
    // From here on the client has bytes: its stream is this one, continued if its worker breaks.
    stream_.started = true;
    stream_.out->StartStream(200, "text/event-stream",
                             RelayHeaders(outcome_.lease.name(), headers));
  }
}

void Attempt::OnData(std::string_view data) {
  if (!relaying_) {
    outcome_.body.append(data);
    return;
  }
  std::string out = stream_.continuing ? ContinueEvents(data) : RelayEvents(data);
  if (out.empty()) return;
  if (!stream_.sent_any) {
    stream_.sent_any = true;
    if (stream_.ttft != nullptr) {
      stream_.ttft->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - stream_.start).count());
    }
  }
  stream_.out->Write(std::move(out));
}

std::string Attempt::RelayEvents(std::string_view data) {
  // The worker's bytes as they are, an event at a time: what the client has is always whole
  // events, so a stream that breaks can be continued (or closed) cleanly.
  pending_.append(data);
  const size_t end = EventsEnd(pending_);
  std::string out = pending_.substr(0, end);
  pending_.erase(0, end);
  sse_.Feed(data, [&](const http::SseEvent& ev) {
    if (ev.data == "[DONE]") {
      outcome_.saw_done = true;
      return;
    }
    api::NoteChunk(ev.data, stream_.chat, &stream_.notes);
  });
  return out;
}

std::string Attempt::ContinueEvents(std::string_view data) {
  std::string out;
  sse_.Feed(data, [&](const http::SseEvent& ev) {
    if (ev.data == "[DONE]") {
      outcome_.saw_done = true;
      out += api::kDoneEvent;
      return;
    }
    const auto chunk =
        api::RewriteContinuedChunk(ev.data, stream_.chat, stream_.notes.id, stream_.prefix_tokens);
    if (!chunk) return;
    api::NoteChunk(*chunk, stream_.chat, &stream_.notes);
    out.append("data: ").append(*chunk).append("\n\n");
  });
  return out;
}

void Attempt::OnDone(const Status& st, size_t bytes) {
  {
    MutexLock lock(mu_);
    id_.reset();
  }
  outcome_.transport = st;
  outcome_.bytes = bytes;
  auto done = std::move(done_);
  done(std::move(outcome_));
}

}  // namespace frugal::gateway
