// The gateway's proxy (gateway/proxy.h, gateway/attempt.h) with no socket and no sleep: a fake
// upstream whose answers the test writes byte by byte, a fake client connection that records
// what the client got, and timers the test fires. Retries, stream relaying, continuation of a
// broken stream on another worker, refusals, timeouts and a client that leaves, each checked on
// what the client receives, what the workers were sent and what the proxy hands back for the
// cache. tests/unit/gateway_proxy_test.cc runs the same paths over loopback through the gateway.
#include "gateway/proxy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/openai_response.h"
#include "balancer/policy.h"
#include "balancer/retry_policy.h"
#include "balancer/worker_pool.h"
#include "common/metrics.h"
#include "gateway/audit.h"
#include "gateway/upstream.h"
#include "http/server.h"
#include "testing/bow_embedder.h"

// GCC 12 warns wrongly on "literal" + std::string temporaries (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// What the client got, in order ("send", "start", "write", "end") with the proxy's "done" among
// them.
struct Log {
  std::vector<std::string> events;
};

class FakeResponder final : public http::Responder {
 public:
  explicit FakeResponder(Log& log) : log_(log) {}
  void Send(int status, std::string, std::string body, http::Headers headers) override {
    log_.events.push_back("send");
    this->status = status;
    this->body = std::move(body);
    this->headers = std::move(headers);
  }
  void StartStream(int status, std::string, http::Headers headers) override {
    log_.events.push_back("start");
    this->status = status;
    this->headers = std::move(headers);
  }
  void Write(std::string data) override {
    log_.events.push_back("write");
    body += data;
  }
  void End() override {
    log_.events.push_back("end");
    ended = true;
  }
  void OnClose(std::function<void()>) override {}
  bool closed() const override { return false; }

  std::string Header(const std::string& name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }

  int status = 0;
  std::string body;
  http::Headers headers;
  bool ended = false;

 private:
  Log& log_;
};

// Records each request; the test answers through its callbacks. Cancel ends the request with a
// cancelled status, as the HTTP client does.
class FakeUpstream final : public Upstream {
 public:
  struct Sent {
    http::ClientRequest request;
    http::ClientCallbacks cb;
    bool done = false;
    bool cancelled = false;
  };
  uint64_t Send(http::ClientRequest request, http::ClientCallbacks callbacks) override {
    sent.push_back({std::move(request), std::move(callbacks)});
    return sent.size();
  }
  void Cancel(uint64_t id) override {
    Sent& s = sent.at(id - 1);
    s.cancelled = true;
    Done(s, Status(StatusCode::kCancelled, "the request was cancelled"), 0);
  }
  // Answers request `i` with a whole response.
  void Answer(size_t i, int status, const std::string& body,
              http::Headers headers = {{"Content-Type", "application/json"}}) {
    Sent& s = sent.at(i);
    s.cb.on_headers(status, headers);
    if (!body.empty()) s.cb.on_data(body);
    Done(s, Status::Ok(), 100 + body.size());
  }
  static void Done(Sent& s, const Status& st, size_t bytes) {
    if (s.done) return;
    s.done = true;
    s.cb.on_done(st, bytes);
  }
  std::vector<Sent> sent;
};

// Delays the test fires by hand.
class ManualTimers final : public Timers {
 public:
  void After(std::chrono::microseconds delay, std::function<void(bool)> f) override {
    delays.push_back(delay);
    pending.push_back(std::move(f));
  }
  // Runs what is pending (fired, or not: the timers stopped).
  void RunAll(bool fired = true) {
    auto now = std::move(pending);
    pending.clear();
    for (auto& f : now) f(fired);
  }
  std::vector<std::chrono::microseconds> delays;
  std::vector<std::function<void(bool)>> pending;
};

WorkerLoad Idle() {
  WorkerLoad l;
  l.prefill_ms_per_token = 1;
  l.decode_ms_per_token = 10;
  l.known = kFrugalSignals;
  return l;
}

std::string ChatBody(bool stream, const std::string& question = "What is the capital of France?") {
  return json{{"model", "m"},
              {"stream", stream},
              {"temperature", 0},
              {"messages", {{{"role", "user"}, {"content", question}}}}}
      .dump();
}

api::ResponseHead Head(const std::string& id) {
  api::ResponseHead h;
  h.chat = true;
  h.id = id;
  h.model = "m";
  h.created = 1;
  return h;
}

// One proxied request against two idle workers, a and b.
class ProxyTest : public ::testing::Test {
 protected:
  ProxyTest() : pool_(HealthOptions{}), retry_({/*max_retries=*/2, /*backoff_ms=*/25}) {
    EXPECT_TRUE(pool_.Add("a", "http://127.0.0.1:9001").ok());
    EXPECT_TRUE(pool_.Add("b", "http://127.0.0.1:9002").ok());
    pool_.ReportCheck("a", Idle());
    pool_.ReportCheck("b", Idle());
    policy_ = std::move(MakePolicy("least_cost")).value();
    metrics_.retries = &registry_.AddCounter("retries", "");
    metrics_.stream_errors = &registry_.AddCounter("stream_errors", "");
    metrics_.timeouts = &registry_.AddCounter("timeouts", "");
    metrics_.continuations = &registry_.AddCounter("continuations", "");
    ctx_.pool = &pool_;
    ctx_.policy = policy_.get();
    ctx_.retry = &retry_;
    ctx_.upstream = &upstream_;
    ctx_.timers = &timers_;
    ctx_.metrics = &metrics_;
    ctx_.stopped = &stopped_;
    ctx_.max_continuations = 2;
    ctx_.request_timeout_s = 30;
    ctx_.worker_key = [](const std::string& w) { return "key-of-" + w; };
  }

  // Starts a request for `body`; the client's side is client_, the result result_.
  void Run(bool stream, std::string body = "", bool keep_answer = true) {
    ProxyInput in;
    in.chat = true;
    in.stream = stream;
    in.body = body.empty() ? ChatBody(stream) : std::move(body);
    in.model = "m";
    in.cost = {20, 16};
    in.start = Clock::now();
    in.deadline = in.start + std::chrono::seconds(30);
    in.keep_answer = keep_answer;
    client_ = std::make_shared<FakeResponder>(log_);
    proxy_ = std::make_shared<ProxyRequest>(ctx_, std::move(in), client_);
    proxy_->Start([this](const ProxyResult& r) {
      log_.events.push_back("done");
      ++results_;
      result_ = r;
    });
  }
  double Count(MetricsRegistry::Counter* c) { return c->Value(); }
  std::string WorkerOf(size_t i) const {
    return upstream_.sent.at(i).request.port == 9001 ? "a" : "b";
  }

  WorkerPool pool_;
  RetryPolicy retry_;
  std::unique_ptr<Policy> policy_;
  MetricsRegistry registry_;
  ProxyMetrics metrics_;
  FakeUpstream upstream_;
  ManualTimers timers_;
  std::atomic<bool> stopped_{false};
  ProxyContext ctx_;
  Log log_;
  std::shared_ptr<FakeResponder> client_;
  std::shared_ptr<ProxyRequest> proxy_;
  int results_ = 0;
  ProxyResult result_;
};

TEST_F(ProxyTest, RelaysANonStreamedAnswerAndHandsItBackBeforeTheClientHasIt) {
  Run(/*stream=*/false);
  ASSERT_EQ(upstream_.sent.size(), 1u);
  const auto& r = upstream_.sent[0].request;
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/chat/completions");
  EXPECT_EQ(r.body, ChatBody(false));  // forwarded as the client sent it
  bool keyed = false;
  for (const auto& [k, v] : r.headers)
    keyed = keyed || (k == "Authorization" && v == "Bearer key-of-" + WorkerOf(0));
  EXPECT_TRUE(keyed);
  EXPECT_LE(r.response_timeout, std::chrono::milliseconds(30000));
  EXPECT_GT(r.response_timeout, std::chrono::milliseconds(29000));

  const std::string answer =
      api::CompletionJson(Head("chatcmpl-w"), "Paris", "stop", api::UsageJson(12, 1, 0));
  upstream_.Answer(0, 200, answer);
  EXPECT_EQ(client_->status, 200);
  EXPECT_EQ(client_->body, answer);  // the worker's bytes, as they were
  EXPECT_EQ(client_->Header("X-Frugal-Cache"), "miss");
  EXPECT_EQ(client_->Header("X-Frugal-Worker"), WorkerOf(0));
  ASSERT_EQ(results_, 1);
  EXPECT_EQ(result_.status, 200);
  ASSERT_TRUE(result_.answer);
  EXPECT_EQ(result_.answer->content, "Paris");
  EXPECT_EQ(result_.answer->finish_reason, "stop");
  EXPECT_EQ(json::parse(result_.answer->usage_json)["prompt_tokens"], 12);
  EXPECT_EQ(log_.events, (std::vector<std::string>{"done", "send"}));
  EXPECT_EQ(pool_.List()[0].in_flight + pool_.List()[1].in_flight, 0);  // the lease went back
}

TEST_F(ProxyTest, KeepsNoAnswerThatWasCutOrNotAsked) {
  Run(false);
  upstream_.Answer(0, 200, api::CompletionJson(Head("x"), "Par", "error", ""));
  ASSERT_EQ(results_, 1);
  EXPECT_FALSE(result_.answer);  // cut: not worth keeping
  results_ = 0;
  Run(false, "", /*keep_answer=*/false);
  upstream_.Answer(1, 200, api::CompletionJson(Head("y"), "Paris", "stop", ""));
  ASSERT_EQ(results_, 1);
  EXPECT_FALSE(result_.answer);
}

TEST_F(ProxyTest, RetriesA503OnTheOtherWorkerAfterABackoff) {
  Run(false);
  upstream_.Answer(0, 503, R"({"error":{"message":"queue full"}})");
  EXPECT_EQ(client_->status, 0);  // the client has nothing yet
  ASSERT_EQ(timers_.pending.size(), 1u);
  EXPECT_GT(timers_.delays[0], std::chrono::microseconds(0));
  EXPECT_EQ(upstream_.sent.size(), 1u);  // nothing sent before the backoff ran out
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  EXPECT_NE(WorkerOf(1), WorkerOf(0));
  upstream_.Answer(1, 200, api::CompletionJson(Head("c"), "Paris", "stop", ""));
  EXPECT_EQ(client_->status, 200);
  EXPECT_EQ(client_->Header("X-Frugal-Worker"), WorkerOf(1));
  EXPECT_EQ(Count(metrics_.retries), 1);
  EXPECT_EQ(metrics_.retried.load(), 1);
  EXPECT_EQ(result_.status, 200);
}

TEST_F(ProxyTest, ConnectionFailuresOnEveryWorkerEndIn503WithRetryAfter) {
  Run(false);
  FakeUpstream::Done(upstream_.sent[0], IoError("connection refused 127.0.0.1:9001"), 0);
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  FakeUpstream::Done(upstream_.sent[1], IoError("connection refused 127.0.0.1:9002"), 0);
  timers_.RunAll();
  // Both workers tried: no third one to take it.
  EXPECT_EQ(upstream_.sent.size(), 2u);
  EXPECT_EQ(client_->status, 503);
  EXPECT_EQ(client_->Header("Retry-After"), "1");
  const auto err = json::parse(client_->body)["error"];
  EXPECT_EQ(err["code"], "no_worker_available");
  EXPECT_NE(err["message"].get<std::string>().find("the connection to the worker failed"),
            std::string::npos);
  // The client never sees a worker's address.
  EXPECT_EQ(client_->body.find("127.0.0.1"), std::string::npos);
  EXPECT_EQ(result_.status, 503);
  EXPECT_EQ(results_, 1);
}

TEST_F(ProxyTest, AnAnswerCutMidwayIsA502AndNotSentAgain) {
  Run(false);
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {});
  s.cb.on_data(R"({"id":"x","choi)");
  FakeUpstream::Done(s, IoError("connection reset"), 120);
  EXPECT_TRUE(timers_.pending.empty());
  EXPECT_EQ(upstream_.sent.size(), 1u);
  EXPECT_EQ(client_->status, 502);
  EXPECT_EQ(json::parse(client_->body)["error"]["code"], "worker_failed");
}

TEST_F(ProxyTest, ARequestOutOfItsTimeIsA504NeitherRetriedNorHeldAgainstTheWorker) {
  Run(false);
  FakeUpstream::Done(upstream_.sent[0], Status(StatusCode::kDeadlineExceeded, "timeout"), 0);
  EXPECT_EQ(upstream_.sent.size(), 1u);
  EXPECT_EQ(client_->status, 504);
  EXPECT_EQ(json::parse(client_->body)["error"]["code"], "timeout");
  EXPECT_EQ(Count(metrics_.timeouts), 1);
  for (const auto& w : pool_.List()) EXPECT_EQ(w.state, WorkerState::kHealthy);
}

TEST_F(ProxyTest, NoHealthyWorkerIsA503AtOnce) {
  WorkerPool empty(HealthOptions{});
  ctx_.pool = &empty;
  Run(false);
  EXPECT_TRUE(upstream_.sent.empty());
  EXPECT_EQ(client_->status, 503);
  EXPECT_EQ(client_->Header("Retry-After"), "1");
  EXPECT_EQ(result_.status, 503);
}

TEST_F(ProxyTest, WorkersLackingTheModelAreNotAsked) {
  ctx_.lacking_model = [](const std::string& model) {
    return model == "m" ? std::vector<std::string>{"a"} : std::vector<std::string>{};
  };
  for (int i = 0; i < 4; ++i) {
    Run(false);
    EXPECT_EQ(WorkerOf(upstream_.sent.size() - 1), "b");
    upstream_.Answer(upstream_.sent.size() - 1, 200,
                     api::CompletionJson(Head("x"), "y", "stop", ""));
  }
}

TEST_F(ProxyTest, AClientThatLeavesCancelsTheAttemptAndIsAnsweredNothing) {
  Run(false);
  proxy_->Cancel();
  EXPECT_TRUE(upstream_.sent[0].cancelled);
  EXPECT_EQ(result_.status, 499);
  EXPECT_EQ(results_, 1);
  EXPECT_EQ(client_->status, 0);
  EXPECT_TRUE(timers_.pending.empty());
  // The worker is not blamed for our own cancel.
  for (const auto& w : pool_.List()) EXPECT_EQ(w.state, WorkerState::kHealthy);
}

TEST_F(ProxyTest, ShuttingDownRefusesInsteadOfRetrying) {
  Run(false);
  upstream_.Answer(0, 503, "{}");
  timers_.RunAll(/*fired=*/false);  // the timers stopped before the backoff ran out
  EXPECT_EQ(upstream_.sent.size(), 1u);
  EXPECT_EQ(client_->status, 503);
  EXPECT_NE(client_->body.find("shutting down"), std::string::npos);
  stopped_ = true;
  Run(false);
  upstream_.Answer(1, 503, "{}");
  EXPECT_TRUE(timers_.pending.empty());
  EXPECT_EQ(client_->status, 503);
}

// A stream: what the worker sends in pieces reaches the client as whole events.
TEST_F(ProxyTest, RelaysAStreamAsWholeEventsAndHandsTheAnswerBack) {
  Run(/*stream=*/true);
  const auto h = Head("chatcmpl-s");
  const std::string events = api::OpenEvent(h) + api::PieceEvent(h, "Par") +
                             api::PieceEvent(h, "is") + api::FinishEvent(h, "stop") +
                             api::UsageEvent(h, api::UsageJson(12, 2, 4)) +
                             std::string(api::kDoneEvent);
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {{"Content-Type", "text/event-stream"}, {"X-Frugal-Simulated", "1"}});
  EXPECT_EQ(client_->status, 200);
  EXPECT_EQ(client_->Header("X-Frugal-Simulated"), "1");
  const size_t cut = api::OpenEvent(h).size() + 7;  // inside the second event
  s.cb.on_data(events.substr(0, cut));
  EXPECT_EQ(client_->body, api::OpenEvent(h));  // the half event is held back
  s.cb.on_data(events.substr(cut));
  FakeUpstream::Done(s, Status::Ok(), 500);
  EXPECT_EQ(client_->body, events);
  EXPECT_TRUE(client_->ended);
  ASSERT_TRUE(result_.answer);
  EXPECT_EQ(result_.answer->content, "Paris");
  EXPECT_EQ(json::parse(result_.answer->usage_json)["prompt_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(log_.events.back(), "end");
  EXPECT_EQ(log_.events[log_.events.size() - 2], "done");
}

// A stream whose worker breaks midway goes on on the other worker, from the text the client has.
TEST_F(ProxyTest, ContinuesABrokenStreamOnAnotherWorkerAsOneStream) {
  Run(/*stream=*/true);
  const auto h1 = Head("chatcmpl-first");
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {});
  s.cb.on_data(api::OpenEvent(h1) + api::PieceEvent(h1, "Hello") + api::PieceEvent(h1, " world"));
  FakeUpstream::Done(s, IoError("connection reset"), 300);
  EXPECT_FALSE(client_->ended);
  EXPECT_EQ(Count(metrics_.continuations), 1);
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  EXPECT_NE(WorkerOf(1), WorkerOf(0));
  // The other worker is asked to continue the answer so far.
  const json asked = json::parse(upstream_.sent[1].request.body);
  EXPECT_EQ(asked["messages"].back()["role"], "assistant");
  EXPECT_EQ(asked["messages"].back()["content"], "Hello world");
  EXPECT_EQ(asked["continue_final_message"], true);

  const auto h2 = Head("chatcmpl-second");
  auto& s2 = upstream_.sent[1];
  s2.cb.on_headers(200, {});
  s2.cb.on_data(api::OpenEvent(h2) + api::PieceEvent(h2, "!") + api::FinishEvent(h2, "stop") +
                api::UsageEvent(h2, api::UsageJson(15, 1, 0)) + std::string(api::kDoneEvent));
  FakeUpstream::Done(s2, Status::Ok(), 400);
  EXPECT_TRUE(client_->ended);

  // One stream for the client: one role delta, one id, one [DONE], usage over the whole answer.
  int roles = 0, dones = 0;
  int64_t completion_tokens = -1;
  std::string text;
  size_t at = 0;
  while ((at = client_->body.find("data: ", at)) != std::string::npos) {
    const size_t end = client_->body.find("\n\n", at);
    const std::string data = client_->body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") {
      ++dones;
      continue;
    }
    const json c = json::parse(data);
    EXPECT_EQ(c["id"], "chatcmpl-first");
    if (c.contains("usage") && c["usage"].is_object())
      completion_tokens = c["usage"]["completion_tokens"].get<int64_t>();
    if (c["choices"].empty()) continue;
    const json& d = c["choices"][0]["delta"];
    if (d.contains("role")) ++roles;
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(roles, 1);
  EXPECT_EQ(dones, 1);
  EXPECT_EQ(text, "Hello world!");
  EXPECT_EQ(completion_tokens, 3);  // the two pieces relayed before count as answer
  ASSERT_TRUE(result_.answer);
  EXPECT_EQ(result_.answer->content, "Hello world!");
  EXPECT_EQ(result_.status, 200);
}

TEST_F(ProxyTest, AStreamThatCannotGoOnEndsWithAnErrorEvent) {
  ctx_.max_continuations = 0;
  Run(/*stream=*/true);
  const auto h = Head("chatcmpl-s");
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {});
  s.cb.on_data(api::OpenEvent(h) + api::PieceEvent(h, "Hel"));
  FakeUpstream::Done(s, IoError("connection reset"), 200);
  EXPECT_TRUE(timers_.pending.empty());
  EXPECT_TRUE(client_->ended);
  const std::string tail = client_->body.substr(client_->body.rfind("data: {"));
  const json ev = json::parse(tail.substr(6, tail.find("\n\n") - 6));
  EXPECT_EQ(ev["error"]["code"], "worker_failed");
  EXPECT_TRUE(client_->body.ends_with(api::kDoneEvent));
  EXPECT_EQ(Count(metrics_.stream_errors), 1);
  EXPECT_EQ(result_.status, 502);
  EXPECT_FALSE(result_.answer);
}

TEST_F(ProxyTest, AContinuationRefusedByEveryWorkerEndsTheStreamCleanly) {
  Run(/*stream=*/true);
  const auto h = Head("chatcmpl-s");
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {});
  s.cb.on_data(api::OpenEvent(h) + api::PieceEvent(h, "Hel"));
  FakeUpstream::Done(s, IoError("connection reset"), 200);
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  upstream_.Answer(1, 400, R"({"error":{"message":"bad"}})");  // the engine's own refusal
  EXPECT_TRUE(client_->ended);
  EXPECT_NE(client_->body.find("no worker could continue it"), std::string::npos);
  EXPECT_TRUE(client_->body.ends_with(api::kDoneEvent));
  EXPECT_EQ(result_.status, 502);
}

TEST_F(ProxyTest, AStreamRequestRefusedBeforeItsFirstByteIsRetriedAsAnyOther) {
  Run(/*stream=*/true);
  upstream_.Answer(0, 503, "{}");
  EXPECT_EQ(client_->status, 0);
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  const auto h = Head("chatcmpl-s");
  auto& s = upstream_.sent[1];
  s.cb.on_headers(200, {});
  s.cb.on_data(api::OpenEvent(h) + api::PieceEvent(h, "ok") + api::FinishEvent(h, "stop") +
               std::string(api::kDoneEvent));
  FakeUpstream::Done(s, Status::Ok(), 200);
  EXPECT_EQ(client_->status, 200);
  EXPECT_EQ(client_->Header("X-Frugal-Worker"), WorkerOf(1));
  EXPECT_TRUE(client_->ended);
  EXPECT_EQ(result_.answer->content, "ok");
}

TEST_F(ProxyTest, AClientLeavingMidStreamEndsItWithoutBlamingTheWorker) {
  Run(/*stream=*/true);
  const auto h = Head("chatcmpl-s");
  auto& s = upstream_.sent[0];
  s.cb.on_headers(200, {});
  s.cb.on_data(api::OpenEvent(h));
  proxy_->Cancel();
  EXPECT_TRUE(s.cancelled);
  EXPECT_EQ(result_.status, 499);
  EXPECT_TRUE(client_->ended);
  EXPECT_TRUE(timers_.pending.empty());
  for (const auto& w : pool_.List()) EXPECT_EQ(w.state, WorkerState::kHealthy);
}

// The cache audit (gateway/audit.h) through the same fakes: a served hit asked again of a
// worker, non-streamed, its answer compared with the cached one and counted; never as a client.
class AuditTest : public ProxyTest {
 protected:
  AuditTest() {
    audits_ = &registry_.AddCounter("audits", "", "result");
    AuditContext a;
    a.proxy = ctx_;
    a.embedder = embedder_;
    a.rate = 1;
    a.min_similarity = 0.85;
    a.seed = 7;
    a.request_timeout_s = 30;
    a.run_on_cache_pool = [this](std::function<void()> task) {
      ++pool_tasks_;
      task();
    };
    a.audits = audits_;
    auditor_ = std::make_unique<Auditor>(std::move(a));
  }
  // Audits a hit of a (streamed, by default) request whose cached answer was `cached`.
  void Audit(const std::string& cached, bool stream = true) {
    ProxyInput in;
    in.chat = true;
    in.stream = stream;
    json body = json::parse(ChatBody(stream));
    if (stream) body["stream_options"] = {{"include_usage", true}};
    in.body = body.dump();
    in.model = "m";
    in.cost = {20, 16};
    in.start = Clock::now();
    in.deadline = in.start + std::chrono::seconds(30);
    auditor_->Start(in, cached);
  }
  double Audits(const char* result) { return audits_->Value(result); }

  std::shared_ptr<cache::BagOfWordsEmbedder> embedder_ =
      std::make_shared<cache::BagOfWordsEmbedder>();
  MetricsRegistry::Counter* audits_ = nullptr;
  std::unique_ptr<Auditor> auditor_;
  int pool_tasks_ = 0;
};

TEST_F(AuditTest, AsksAWorkerNonStreamedAndCountsTheSameAnswerAsAgreement) {
  Audit("The capital of France is Paris.");
  ASSERT_EQ(upstream_.sent.size(), 1u);
  const json sent = json::parse(upstream_.sent[0].request.body);
  EXPECT_EQ(sent["stream"], false);  // the client streamed; the audit never does
  EXPECT_FALSE(sent.contains("stream_options"));
  EXPECT_EQ(sent["messages"], json::parse(ChatBody(true))["messages"]);
  bool keyed = false;
  for (const auto& [k, v] : upstream_.sent[0].request.headers)
    keyed = keyed || (k == "Authorization" && v == "Bearer key-of-" + WorkerOf(0));
  EXPECT_TRUE(keyed);  // the worker's key, as for any request
  upstream_.Answer(0, 200,
                   api::CompletionJson(Head("w"), "The capital of France is Paris.", "stop", ""));
  EXPECT_EQ(pool_tasks_, 1);  // compared on the cache pool
  EXPECT_EQ(Audits("agree"), 1);
  EXPECT_EQ(auditor_->totals().audited.load(), 1);
  EXPECT_EQ(auditor_->totals().disagreements.load(), 0);
  EXPECT_EQ(pool_.List()[0].in_flight + pool_.List()[1].in_flight, 0);
}

TEST_F(AuditTest, OtherNumbersAreADisagreement) {
  Audit("Mars has 2 moons.", /*stream=*/false);
  upstream_.Answer(0, 200, api::CompletionJson(Head("w"), "Mars has 3 moons.", "stop", ""));
  EXPECT_EQ(Audits("disagree_numbers"), 1);
  EXPECT_EQ(auditor_->totals().audited.load(), 1);
  EXPECT_EQ(auditor_->totals().disagreements.load(), 1);
  EXPECT_EQ(embedder_->calls.load(), 0);  // numbers first: no embedding needed
}

TEST_F(AuditTest, RetriesLikeAnyRequestButNeverCountsAsAClient) {
  Audit("Paris");
  upstream_.Answer(0, 503, R"({"error":{"message":"queue full"}})");
  timers_.RunAll();
  ASSERT_EQ(upstream_.sent.size(), 2u);
  EXPECT_NE(WorkerOf(1), WorkerOf(0));
  upstream_.Answer(1, 200, api::CompletionJson(Head("w"), "Paris", "stop", ""));
  EXPECT_EQ(Audits("agree"), 1);
  EXPECT_EQ(Count(metrics_.retries), 0);  // the client requests' retry counter
  EXPECT_EQ(metrics_.retried.load(), 0);
}

TEST_F(AuditTest, NoWorkerFreeIsSkippedAndAFailedAnswerIsFailed) {
  WorkerPool empty(HealthOptions{});
  AuditContext a;
  a.proxy = ctx_;
  a.proxy.pool = &empty;
  a.embedder = embedder_;
  a.rate = 1;
  a.run_on_cache_pool = [](std::function<void()> task) { task(); };
  a.audits = audits_;
  Auditor no_worker(std::move(a));
  ProxyInput in;
  in.body = ChatBody(false);
  in.model = "m";
  in.deadline = Clock::now() + std::chrono::seconds(30);
  no_worker.Start(in, "Paris");
  EXPECT_EQ(Audits("skipped"), 1);
  EXPECT_EQ(no_worker.totals().skipped.load(), 1);
  EXPECT_EQ(no_worker.totals().audited.load(), 0);

  Audit("Paris");
  upstream_.Answer(0, 200, api::CompletionJson(Head("w"), "Par", "error", ""));  // cut
  EXPECT_EQ(Audits("failed"), 1);
  EXPECT_EQ(auditor_->totals().audited.load(), 0);
}

TEST_F(AuditTest, AtMostMaxInFlightRunAtOnceAndTheRestAreCapped) {
  // The default cap is 2: a third hit drawn while two audits wait for workers is not sent.
  Audit("Paris");
  Audit("Paris");
  Audit("Paris");
  EXPECT_EQ(upstream_.sent.size(), 2u);
  EXPECT_EQ(auditor_->in_flight(), 2);
  EXPECT_EQ(Audits("capped"), 1);
  EXPECT_EQ(auditor_->totals().capped.load(), 1);
  EXPECT_EQ(auditor_->totals().audited.load(), 0);  // capped is not an audit
  // One answered and compared: its place is free again, the next hit is audited.
  upstream_.Answer(0, 200, api::CompletionJson(Head("w"), "Paris", "stop", ""));
  EXPECT_EQ(auditor_->in_flight(), 1);
  Audit("Paris");
  EXPECT_EQ(upstream_.sent.size(), 3u);
  // A failed and a skipped audit free their places too.
  upstream_.Answer(1, 200, api::CompletionJson(Head("w"), "Par", "error", ""));
  upstream_.Answer(2, 200, api::CompletionJson(Head("w"), "Paris", "stop", ""));
  EXPECT_EQ(auditor_->in_flight(), 0);
  EXPECT_EQ(Audits("agree"), 2);
  EXPECT_EQ(Audits("failed"), 1);
  EXPECT_EQ(Audits("capped"), 1);
}

TEST_F(AuditTest, ZeroMeansNoCap) {
  AuditContext a;
  a.proxy = ctx_;
  a.embedder = embedder_;
  a.rate = 1;
  a.max_in_flight = 0;
  a.run_on_cache_pool = [](std::function<void()> task) { task(); };
  a.audits = audits_;
  auditor_ = std::make_unique<Auditor>(std::move(a));
  for (int i = 0; i < 5; ++i) Audit("Paris");
  EXPECT_EQ(upstream_.sent.size(), 5u);
  EXPECT_EQ(auditor_->in_flight(), 5);
  EXPECT_EQ(Audits("capped"), 0);
  for (size_t i = 0; i < 5; ++i)
    upstream_.Answer(i, 200, api::CompletionJson(Head("w"), "Paris", "stop", ""));
  EXPECT_EQ(auditor_->in_flight(), 0);
  EXPECT_EQ(Audits("agree"), 5);
}

}  // namespace
}  // namespace frugal::gateway
