// The gateway's request path, model-free and in one process: fake workers (testing/fake_worker.h)
// on 127.0.0.1, the real Gateway in front of them (cache off), the project's HTTP client as the
// caller. What tests/python/test_gateway.py checks through subprocesses and simulated workers,
// here with every worker answer under the test's control: a relayed answer, a retry before the
// first byte (503, a closed connection), ejection (health checks failing, a port closed), a
// stream broken midway, a non-streamed answer cut (502), a client that leaves, refusal when no
// worker takes the request, and bad input.
//
// Health polls run every 25 ms so ejection takes about 75 ms; state is awaited by polling the
// gateway's own views (admin API, /status.json, /metrics) with a deadline, never by sleeping.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gateway/config.h"
#include "gateway/gateway.h"
#include "http/client.h"
#include "http/server.h"
#include "testing/fake_worker.h"

// GCC 12 warns wrongly on "literal" + std::string temporaries (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;
using frugal::testing::FakeWorker;
using frugal::testing::RawWorker;
using namespace std::chrono_literals;

constexpr char kAdminToken[] = "test-admin-token";

// Polls `pred` until it holds or `limit` passes; true when it held.
bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A worker's answer with spacing and key order of its own: relayed unchanged, it arrives
// byte for byte (a gateway that parsed and re-serialised it would not pass).
constexpr char kAnswerA[] =
    R"({"id": "chatcmpl-a",  "object": "chat.completion", "created": 1, "model": "fake-model",)"
    R"( "choices": [{"index": 0, "message": {"role": "assistant", "content": "from A \u00e9"},)"
    R"( "finish_reason": "stop", "logprobs": null}], "usage": {"total_tokens": 7}})";
constexpr char kAnswerB[] =
    R"({"id":"chatcmpl-b","object":"chat.completion","created":2,"model":"fake-model",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"from B"},)"
    R"("finish_reason":"stop","logprobs":null}]})";
constexpr char kBusy[] = R"({"error":{"message":"the queue is full","type":"overloaded_error",)"
                         R"("param":null,"code":null}})";

// SSE events as a worker streams them.
std::string Event(const std::string& content) {
  json j = {
      {"id", "chatcmpl-s"},
      {"object", "chat.completion.chunk"},
      {"model", frugal::testing::kFakeModel},
      {"choices", {{{"index", 0}, {"delta", {{"content", content}}}, {"finish_reason", nullptr}}}}};
  return "data: " + j.dump() + "\n\n";
}
const std::string kDone = "data: [DONE]\n\n";

// One SSE event of `j`.
std::string SseLine(const json& j) {
  std::string out = "data: ";
  out += j.dump();
  out += "\n\n";
  return out;
}

std::string ChatBody(bool stream = false, const std::string& model = frugal::testing::kFakeModel) {
  json b = {{"model", model},
            {"messages", {{{"role", "user"}, {"content", "Say something."}}}},
            {"max_tokens", 8}};
  if (stream) b["stream"] = true;
  return b.dump();
}

// The `data:` payloads of an SSE body, in order.
std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  http::SseParser p;
  p.Feed(body, [&](const http::SseEvent& e) { out.push_back(e.data); });
  return out;
}

std::string HeaderOf(const http::ClientResponse& r, std::string_view name) {
  const std::string* v = r.Header(name);
  return v ? *v : "(none)";
}

// An OpenAI-shaped error body: {"error": {"message": non-empty, "type", "param", "code"}}.
void ExpectOpenAiError(const http::ClientResponse& r, const std::string& type,
                       const json& code = nullptr) {
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "application/json");
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_object()) << r.body;
  const json& e = j["error"];
  ASSERT_TRUE(e.contains("message") && e["message"].is_string()) << r.body;
  EXPECT_FALSE(e["message"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(e.value("type", json()), type) << r.body;
  EXPECT_TRUE(e.contains("param")) << r.body;
  EXPECT_EQ(e.value("code", json("(absent)")), code) << r.body;
}

// A gateway on 127.0.0.1:0 over `worker_urls`, named w0, w1, ... in that order. round_robin makes
// routing predictable: its first pick is w0, then each next one in pool order.
class TestGateway {
 public:
  explicit TestGateway(const std::vector<std::string>& worker_urls, double request_timeout_s = 5)
      : client_(ClientOpts()) {
    GatewayConfig c;
    c.host = "127.0.0.1";
    c.port = 0;
    c.policy = "round_robin";
    c.health.interval = 25ms;
    c.health.timeout = 1000ms;
    c.health.eject_after = 3;
    c.health.restore_after = 2;
    c.max_retries = 2;
    c.retry_backoff_ms = 1;
    c.request_timeout_s = request_timeout_s;  // a hanging upstream fails a test, never stalls it
    c.cache.enabled = false;                  // with the null embedder below: no cache either way
    c.admin_token = kAdminToken;
    for (size_t i = 0; i < worker_urls.size(); ++i) {
      c.workers.emplace_back();
      c.workers.back().name = "w" + std::to_string(i);
      c.workers.back().url = worker_urls[i];
    }
    auto g = Gateway::Start(std::move(c), nullptr);
    if (!g.ok()) {
      ADD_FAILURE() << "the gateway did not start: " << g.status().message();
      return;
    }
    gateway_ = std::move(g).value();
  }
  ~TestGateway() {
    if (gateway_) gateway_->Shutdown(500ms);
  }
  bool ok() const { return gateway_ != nullptr; }
  uint16_t port() const { return gateway_->port(); }

  http::ClientResponse Send(const std::string& method, const std::string& target,
                            const std::string& body = "", http::Headers headers = {}) {
    http::ClientRequest r;
    r.port = gateway_->port();
    r.method = method;
    r.target = target;
    r.headers = std::move(headers);
    if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
    r.body = body;
    auto resp = client_.Fetch(std::move(r));
    if (!resp.ok()) {
      ADD_FAILURE() << method << " " << target << ": " << resp.status().message();
      return {};
    }
    return std::move(resp).value();
  }
  http::ClientResponse Chat(bool stream = false) {
    return Send("POST", "/v1/chat/completions", ChatBody(stream));
  }

  // A worker as GET /admin/workers shows it (null when absent).
  json AdminWorker(const std::string& name) {
    auto r = Send("GET", "/admin/workers", "",
                  {{"Authorization", std::string("Bearer ") + kAdminToken}});
    json j = json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j["workers"].is_array()) return nullptr;
    for (const auto& w : j["workers"]) {
      if (w.value("name", "") == name) return w;
    }
    return nullptr;
  }
  std::string StateOf(const std::string& name) {
    json w = AdminWorker(name);
    return w.is_object() ? w.value("state", "") : "(absent)";
  }
  json StatusJson() { return json::parse(Send("GET", "/status.json").body, nullptr, false); }
  // A label-free sample of /metrics; 0 when absent (a counter never added to has no sample).
  double Metric(const std::string& name) {
    const std::string text = Send("GET", "/metrics").body;
    const std::string prefix = name + " ";
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      if (text.compare(at, prefix.size(), prefix) == 0) {
        return std::stod(text.substr(at + prefix.size(), end - at - prefix.size()));
      }
      at = end + 1;
    }
    return 0;
  }

 private:
  static http::ClientOptions ClientOpts() {
    http::ClientOptions o;
    o.connect_timeout = 1000ms;
    o.response_timeout = 5000ms;  // a response that never ends is a failure, not a hang
    return o;
  }

  http::Client client_;
  std::unique_ptr<Gateway> gateway_;
};

// ---- 1. a worker's answer is the client's ----

TEST(GatewayProxyTest, WorkerAnswerIsRelayedUnchanged) {
  FakeWorker w(FakeWorker::Reply(200, "application/json; charset=utf-8", kAnswerA));
  TestGateway g({w.url()});
  ASSERT_TRUE(g.ok());
  const std::string sent = ChatBody();
  auto r = g.Send("POST", "/v1/chat/completions", sent);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kAnswerA);
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "application/json; charset=utf-8");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Cache"), "miss");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w0");
  // The request reached the worker as the client sent it, on the same route.
  ASSERT_EQ(w.hits(), 1);
  EXPECT_EQ(w.requests()[0].method, "POST");
  EXPECT_EQ(w.requests()[0].path, "/v1/chat/completions");
  EXPECT_EQ(w.requests()[0].body, sent);

  const std::string prompt = R"({"model":"fake-model","prompt":"Once upon","max_tokens":4})";
  auto c = g.Send("POST", "/v1/completions", prompt);
  EXPECT_EQ(c.status, 200);
  ASSERT_EQ(w.hits(), 2);
  EXPECT_EQ(w.requests()[1].path, "/v1/completions");
  EXPECT_EQ(w.requests()[1].body, prompt);
}

TEST(GatewayProxyTest, CompleteStreamIsRelayedByteForByte) {
  const std::vector<std::string> chunks = {Event("Hel"), Event("lo"), kDone};
  FakeWorker w(FakeWorker::Stream(chunks));
  TestGateway g({w.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat(/*stream=*/true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "text/event-stream");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w0");
  EXPECT_EQ(r.body, chunks[0] + chunks[1] + chunks[2]);
  EXPECT_EQ(g.Metric("frugal_gateway_stream_errors_total"), 0);
}

TEST(GatewayProxyTest, WorkerClientErrorIsPassedOnAndNotRetried) {
  // A worker's 4xx is the client's error (docs/gateway.md): the same answer, no other worker.
  const std::string refusal = http::OpenAiErrorBody(400, "'max_tokens' must be positive");
  FakeWorker w0(FakeWorker::Reply(400, "application/json", refusal));
  FakeWorker w1(FakeWorker::Reply(200, "application/json", kAnswerB));
  TestGateway g({w0.url(), w1.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, refusal);
  EXPECT_EQ(w0.hits(), 1);
  EXPECT_EQ(w1.hits(), 0);
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 0);
  EXPECT_EQ(g.StateOf("w0"), "healthy");  // never a fault of the worker's
}

// ---- 2. a failure before the first byte goes to another worker ----

TEST(GatewayProxyTest, Worker503IsRetriedOnAnotherWorker) {
  FakeWorker busy(FakeWorker::Reply(503, "application/json", kBusy));
  FakeWorker ok(FakeWorker::Reply(200, "application/json", kAnswerB));
  TestGateway g({busy.url(), ok.url()});
  ASSERT_TRUE(g.ok());
  const std::string sent = ChatBody();
  auto r = g.Send("POST", "/v1/chat/completions", sent);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kAnswerB);
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w1");
  EXPECT_EQ(busy.hits(), 1);  // round_robin's first pick: the attempt that was refused
  ASSERT_EQ(ok.hits(), 1);
  EXPECT_EQ(ok.requests()[0].body, sent);
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 1);
  EXPECT_EQ(g.Metric("frugal_gateway_retries_total"), 1);
  // A full queue is back-pressure, not a fault: no ejection for it.
  EXPECT_EQ(g.StateOf("w0"), "healthy");
}

TEST(GatewayProxyTest, ConnectionClosedBeforeFirstByteIsRetriedOnAnotherWorker) {
  RawWorker closer([](const RawWorker::RawRequest&) { return std::string(); });
  FakeWorker ok(FakeWorker::Reply(200, "application/json", kAnswerB));
  TestGateway g({closer.url(), ok.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kAnswerB);
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w1");
  EXPECT_EQ(closer.hits(), 1);
  EXPECT_EQ(ok.hits(), 1);
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 1);
}

TEST(GatewayProxyTest, Worker503OnAStreamIsRetriedAndTheOtherWorkersStreamRelayed) {
  // The 503 arrives before any byte went to the client, so a stream request may move too; the
  // client then sees only the second worker's stream, under its name.
  const std::vector<std::string> chunks = {Event("from"), Event(" B"), kDone};
  FakeWorker busy(FakeWorker::Reply(503, "application/json", kBusy));
  FakeWorker ok(FakeWorker::Stream(chunks));
  TestGateway g({busy.url(), ok.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat(/*stream=*/true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "text/event-stream");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w1");
  EXPECT_EQ(r.body, chunks[0] + chunks[1] + chunks[2]);
  EXPECT_EQ(busy.hits(), 1);
  EXPECT_EQ(ok.hits(), 1);
}

TEST(GatewayProxyTest, NonStreamedAnswerCutMidwayIs502AndNotRetried) {
  // Bytes had arrived: the request may have run on the worker, so it is not sent again; the
  // client gets a 502 (docs/gateway.md), not a truncated 200.
  RawWorker cut([](const RawWorker::RawRequest&) {
    return std::string(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
        R"({"id":"chatcmpl-cut","choi)");
  });
  FakeWorker spare(FakeWorker::Reply(200, "application/json", kAnswerB));
  TestGateway g({cut.url(), spare.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat();
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(HeaderOf(r, "Retry-After"), "(none)");
  ExpectOpenAiError(r, "server_error", "worker_failed");
  EXPECT_EQ(cut.hits(), 1);
  EXPECT_EQ(spare.hits(), 0);
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 0);
}

// ---- 3. a worker that is down is ejected and gets no requests ----

TEST(GatewayProxyTest, WorkerFailingHealthChecksIsEjectedAndGetsNoRequests) {
  FakeWorker sick(FakeWorker::Reply(200, "application/json", kAnswerA));
  FakeWorker ok(FakeWorker::Reply(200, "application/json", kAnswerB));
  sick.set_healthy(false);  // /queue_depth answers 500
  TestGateway g({sick.url(), ok.url()});
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(Eventually([&] { return g.StateOf("w0") == "ejected"; })) << g.AdminWorker("w0");
  json w0 = g.AdminWorker("w0");  // non-const: a missing key reads as null, not UB
  EXPECT_EQ(w0["ejections"], 1);
  EXPECT_NE(w0.value("last_error", "").find("HTTP 500"), std::string::npos) << w0;
  EXPECT_EQ(g.StateOf("w1"), "healthy");
  // /status.json (the status page's source) tells the same.
  json st = g.StatusJson();
  ASSERT_TRUE(st["workers"].is_array() && st["workers"].size() == 2) << st;
  EXPECT_EQ(st["workers"][0]["state"], "ejected");
  EXPECT_EQ(st["totals"]["ejections"], 1);

  for (int i = 0; i < 6; ++i) {
    auto r = g.Chat();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w1");
  }
  EXPECT_EQ(sick.hits(), 0);
  EXPECT_EQ(ok.hits(), 6);

  // Checks passing again: half-open, then healthy after restore_after (2); then w0 is next in
  // round_robin's turn (the last pick was w1).
  sick.set_healthy(true);
  ASSERT_TRUE(Eventually([&] { return g.StateOf("w0") == "healthy"; })) << g.AdminWorker("w0");
  auto r = g.Chat();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w0");
  EXPECT_EQ(sick.hits(), 1);
}

TEST(GatewayProxyTest, WorkerWhosePortClosedIsEjectedAndGetsNoRequests) {
  FakeWorker dying(FakeWorker::Reply(200, "application/json", kAnswerA));
  FakeWorker ok(FakeWorker::Reply(200, "application/json", kAnswerB));
  TestGateway g({dying.url(), ok.url()});
  ASSERT_TRUE(g.ok());
  auto first = g.Chat();
  EXPECT_EQ(HeaderOf(first, "X-Frugal-Worker"), "w0");  // it served while it was up
  dying.Stop();  // connections to its port are refused from now on
  ASSERT_TRUE(Eventually([&] { return g.StateOf("w0") == "ejected"; })) << g.AdminWorker("w0");
  EXPECT_FALSE(g.AdminWorker("w0").value("last_error", "").empty());
  for (int i = 0; i < 6; ++i) {
    auto r = g.Chat();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w1");
  }
  // Not even tried: an attempt on the closed port would have been refused and retried.
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 0);
  EXPECT_EQ(ok.hits(), 6);
}

// ---- 4. a stream that breaks midway ends cleanly ----

// After the stream began nothing may be retried; the client gets what was sent, then
// `data: {"error": ...}` and `data: [DONE]` (docs/gateway.md), and the response ends.
void ExpectStreamEndsWithError(const http::ClientResponse& r, const std::string& sent,
                               const std::string& why) {
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(HeaderOf(r, "Content-Type"), "text/event-stream");
  ASSERT_EQ(r.body.compare(0, sent.size(), sent), 0) << r.body;
  const std::string end = "\n\n" + kDone;
  ASSERT_GE(r.body.size(), end.size());
  EXPECT_EQ(r.body.substr(r.body.size() - end.size()), end) << r.body;
  const auto events = SseData(r.body);
  ASSERT_GE(events.size(), 2u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  json err = json::parse(events[events.size() - 2], nullptr, false);
  ASSERT_TRUE(err.is_object() && err["error"].is_object()) << r.body;
  EXPECT_NE(err["error"].value("message", "").find(why), std::string::npos) << r.body;
  EXPECT_EQ(err["error"]["type"], "server_error");
  EXPECT_EQ(err["error"]["code"], "worker_failed");
}

TEST(GatewayProxyTest, StreamBrokenMidwayWithNoOtherWorkerEndsWithErrorEventAndDone) {
  const std::string events = Event("Once") + Event(" upon");
  RawWorker cut([&](const RawWorker::RawRequest&) {
    return RawWorker::StreamHead() + RawWorker::Chunk(Event("Once")) +
           RawWorker::Chunk(Event(" upon"));  // and the connection closes: no last chunk
  });
  TestGateway g({cut.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat(/*stream=*/true);
  ExpectStreamEndsWithError(r, events, "the worker failed while streaming");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Worker"), "w0");
  const auto data = SseData(r.body);
  ASSERT_EQ(data.size(), 4u) << r.body;  // the two events, the error, [DONE]
  EXPECT_EQ(cut.hits(), 1);
  EXPECT_TRUE(Eventually([&] { return g.Metric("frugal_gateway_stream_errors_total") == 1; }));
}

TEST(GatewayProxyTest, StreamBrokenMidwayIsContinuedOnAnotherWorkerAsOneStream) {
  // w0 streams two tokens and dies; w1 continues from "Once upon" and finishes. The client sees
  // one stream: one id, one role, the whole answer, and usage over all of it.
  RawWorker cut([&](const RawWorker::RawRequest&) {
    return RawWorker::StreamHead() + RawWorker::Chunk(Event("Once")) +
           RawWorker::Chunk(Event(" upon"));
  });
  auto chunk = [](json delta, json finish) {
    json j = {{"id", "chatcmpl-other"},
              {"object", "chat.completion.chunk"},
              {"model", frugal::testing::kFakeModel},
              {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
    return SseLine(j);
  };
  const json usage = {
      {"id", "chatcmpl-other"},
      {"object", "chat.completion.chunk"},
      {"choices", json::array()},
      {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 3}, {"total_tokens", 15}}}};
  FakeWorker spare(FakeWorker::Stream({chunk({{"role", "assistant"}, {"content", ""}}, nullptr),
                                       chunk({{"content", " a"}}, nullptr),
                                       chunk({{"content", " time"}}, nullptr),
                                       chunk(json::object(), "stop"), SseLine(usage), kDone}));
  TestGateway g({cut.url(), spare.url()});
  ASSERT_TRUE(g.ok());
  json body = json::parse(ChatBody(/*stream=*/true));
  body["stream_options"] = {{"include_usage", true}};
  auto r = g.Send("POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200);
  const auto data = SseData(r.body);
  ASSERT_FALSE(data.empty()) << r.body;
  EXPECT_EQ(data.back(), "[DONE]");
  std::string text;
  json last_usage;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    json j = json::parse(data[i], nullptr, false);
    ASSERT_TRUE(j.is_object()) << data[i];
    EXPECT_FALSE(j.contains("error")) << r.body;
    EXPECT_EQ(j.value("id", ""), "chatcmpl-s") << data[i];  // the client's stream's id
    if (j.contains("usage")) last_usage = j["usage"];
    if (j["choices"].empty()) continue;
    const json& d = j["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("role")) << data[i];  // the spare's opening role delta is dropped
    text += d.value("content", "");
  }
  EXPECT_EQ(text, "Once upon a time");
  // The spare counted the relayed two tokens as prompt; they were answer.
  EXPECT_EQ(last_usage,
            json({{"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}}))
      << r.body;
  // What the spare was asked: the answer so far, to continue, and the tokens left.
  ASSERT_EQ(spare.hits(), 1);
  json asked = json::parse(spare.requests()[0].body);
  EXPECT_EQ(asked["messages"].back(), json({{"role", "assistant"}, {"content", "Once upon"}}));
  EXPECT_EQ(asked["messages"].size(), body["messages"].size() + 1);
  EXPECT_EQ(asked["continue_final_message"], true);
  EXPECT_EQ(asked["add_generation_prompt"], false);
  EXPECT_EQ(asked["max_tokens"], body["max_tokens"].get<int64_t>() - 2);
  EXPECT_EQ(g.Metric("frugal_gateway_stream_errors_total"), 0);
  EXPECT_EQ(g.Metric("frugal_gateway_stream_continuations_total"), 1);
}

TEST(GatewayProxyTest, BrokenCompletionStreamContinuesFromThePromptPlusTheAnswerSoFar) {
  auto text_event = [](const std::string& t) {
    json j = {{"id", "cmpl-a"},
              {"object", "text_completion"},
              {"choices", {{{"index", 0}, {"text", t}, {"finish_reason", nullptr}}}}};
    return SseLine(j);
  };
  RawWorker cut([&](const RawWorker::RawRequest&) {
    return RawWorker::StreamHead() + RawWorker::Chunk(text_event(" there"));
  });
  FakeWorker spare(FakeWorker::Stream({text_event(" was"), kDone}));
  TestGateway g({cut.url(), spare.url()});
  ASSERT_TRUE(g.ok());
  auto r =
      g.Send("POST", "/v1/completions",
             R"({"model":"fake-model","prompt":"Once upon a time","max_tokens":5,"stream":true})");
  EXPECT_EQ(r.status, 200);
  std::string text;
  for (const auto& d : SseData(r.body)) {
    json j = json::parse(d, nullptr, false);
    if (j.is_object()) {
      EXPECT_FALSE(j.contains("error")) << r.body;
      EXPECT_EQ(j.value("id", ""), "cmpl-a");
      text += j["choices"][0].value("text", "");
    }
  }
  EXPECT_EQ(text, " there was");
  ASSERT_EQ(spare.hits(), 1);
  json asked = json::parse(spare.requests()[0].body);
  EXPECT_EQ(asked["prompt"], "Once upon a time there");
  EXPECT_EQ(asked["max_tokens"], 4);
}

TEST(GatewayProxyTest, StreamCutInsideAnEventStillEndsWithErrorEventAndDone) {
  const std::string whole = Event("Once");
  const std::string half = R"(data: {"choi)";
  RawWorker cut([&](const RawWorker::RawRequest&) {
    return RawWorker::StreamHead() + RawWorker::Chunk(whole) + RawWorker::Chunk(half);
  });
  TestGateway g({cut.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat(/*stream=*/true);
  // Only whole events reach the client: the half one is not sent, the error follows the whole.
  ExpectStreamEndsWithError(r, whole + R"(data: {"error")", "the worker failed while streaming");
  EXPECT_EQ(SseData(r.body).size(), 3u) << r.body;  // the whole event, the error, [DONE]
}

TEST(GatewayProxyTest, StreamEndingWithoutDoneGetsErrorEventAndDone) {
  // The response ends cleanly, but [DONE] never came: a truncation all the same.
  const std::string first = Event("Once");
  FakeWorker w(FakeWorker::Stream({first}));
  TestGateway g({w.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat(/*stream=*/true);
  ExpectStreamEndsWithError(r, first, "ended early");
  EXPECT_EQ(SseData(r.body).size(), 3u) << r.body;
}

TEST(GatewayProxyTest, ClientLeavingMidStreamCancelsTheWorkersResponse) {
  // The worker streams one event and then holds its response open, as a long generation does.
  // The client leaving must reach the worker (its OnClose: where a worker cancels generation).
  struct Held {
    std::mutex mu;
    std::shared_ptr<http::Responder> out;  // guarded by mu
    std::atomic<bool> closed{false};
  };
  auto held = std::make_shared<Held>();
  FakeWorker w([held](const http::Request&, std::shared_ptr<http::Responder> out) {
    out->OnClose([held] { held->closed = true; });
    out->StartStream(200, "text/event-stream");
    out->Write(Event("Once"));
    std::lock_guard<std::mutex> lock(held->mu);
    held->out = std::move(out);
  });
  // A Responder must not outlive its server: let go of it before the worker goes, however the
  // test ends.
  struct Release {
    std::shared_ptr<Held> h;
    ~Release() {
      std::lock_guard<std::mutex> lock(h->mu);
      h->out.reset();
    }
  } release{held};
  TestGateway g({w.url()});
  ASSERT_TRUE(g.ok());

  std::atomic<bool> got_data{false}, done{false};
  http::Client client;  // after the flags its callbacks set: it goes first, cancelling
  http::ClientRequest req;
  req.port = g.port();
  req.method = "POST";
  req.target = "/v1/chat/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = ChatBody(/*stream=*/true);
  http::ClientCallbacks cb;
  cb.on_data = [&](std::string_view) { got_data = true; };
  cb.on_done = [&](const Status&, size_t) { done = true; };
  const uint64_t id = client.Send(std::move(req), std::move(cb));
  ASSERT_TRUE(Eventually([&] { return got_data.load(); })) << "the stream never began";
  client.Cancel(id);
  EXPECT_TRUE(Eventually([&] { return done.load(); }));
  EXPECT_TRUE(Eventually([&] { return held->closed.load(); }))
      << "the worker's response stayed open after the client left";
  // Counted as the client's departure (499), not as an error of the gateway's.
  EXPECT_TRUE(
      Eventually([&] { return g.Metric(R"(frugal_gateway_responses_total{code="499"})") == 1; }));
  EXPECT_EQ(g.Metric("frugal_gateway_stream_errors_total"), 0);
}

// ---- 5. nobody takes the request: 503 + Retry-After ----

TEST(GatewayProxyTest, EveryWorkerRefusingIs503WithRetryAfter) {
  FakeWorker a(FakeWorker::Reply(503, "application/json", kBusy));
  FakeWorker b(FakeWorker::Reply(503, "application/json", kBusy));
  TestGateway g({a.url(), b.url()});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(HeaderOf(r, "Retry-After"), "1");
  EXPECT_EQ(HeaderOf(r, "X-Frugal-Cache"), "miss");
  ExpectOpenAiError(r, "overloaded_error", "no_worker_available");
  // Each worker tried once, none twice, though max_retries (2) would allow another attempt.
  EXPECT_EQ(a.hits(), 1);
  EXPECT_EQ(b.hits(), 1);
}

TEST(GatewayProxyTest, NoWorkerAtAllIs503WithRetryAfter) {
  TestGateway g({});
  ASSERT_TRUE(g.ok());
  auto r = g.Chat();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(HeaderOf(r, "Retry-After"), "1");
  ExpectOpenAiError(r, "overloaded_error", "no_worker_available");
}

// ---- 6. bad input is the client's error, answered by the gateway alone ----

TEST(GatewayProxyTest, InvalidRequestIs400AndReachesNoWorker) {
  FakeWorker w(FakeWorker::Reply(200, "application/json", kAnswerA));
  TestGateway g({w.url()});
  ASSERT_TRUE(g.ok());
  auto truncated =
      g.Send("POST", "/v1/chat/completions", R"({"model": "fake-model", "messages": [)");
  EXPECT_EQ(truncated.status, 400);
  ExpectOpenAiError(truncated, "invalid_request_error");
  // The worker's own message: both read requests with api/openai.h.
  EXPECT_EQ(json::parse(truncated.body)["error"]["message"], "the request body is not valid JSON");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/v1/chat/completions", "[1, 2]"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})"},
      {"/v1/chat/completions", R"({"model": "fake-model", "messages": "hi"})"},
      {"/v1/chat/completions",
       R"({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}],)"
       R"( "stream": "yes"})"},
      {"/v1/completions", R"({"model": "fake-model", "prompt": 5})"},
  };
  for (const auto& [path, body] : bad) {
    auto r = g.Send("POST", path, body);
    EXPECT_EQ(r.status, 400) << path << " " << body;
    ExpectOpenAiError(r, "invalid_request_error");
  }
  EXPECT_EQ(w.hits(), 0);
}

}  // namespace
}  // namespace frugal::gateway

namespace frugal::gateway {
namespace {

// ---- routing by model ----

// The gateway's GET /v1/models ids, in its order.
std::vector<std::string> ModelIds(TestGateway& g) {
  std::vector<std::string> ids;
  json j = json::parse(g.Send("GET", "/v1/models").body, nullptr, false);
  if (!j.is_object() || !j["data"].is_array()) return ids;
  for (const auto& m : j["data"]) ids.push_back(m.value("id", ""));
  return ids;
}

TEST(GatewayProxyTest, RequestGoesOnlyToWorkersThatServeItsModel) {
  FakeWorker w0(FakeWorker::Reply(200, "application/json", kAnswerA));
  FakeWorker w1(FakeWorker::Reply(200, "application/json", kAnswerB));
  FakeWorker w2(FakeWorker::Reply(200, "application/json", kAnswerB));
  w0.set_models({"model-a"});
  w2.set_models({frugal::testing::kFakeModel, "model-a"});
  TestGateway g({w0.url(), w1.url(), w2.url()});
  ASSERT_TRUE(g.ok());
  // Each model once, however many workers list it.
  ASSERT_TRUE(Eventually([&] {
    return ModelIds(g) == std::vector<std::string>{frugal::testing::kFakeModel, "model-a"};
  })) << ::testing::PrintToString(ModelIds(g));
  ASSERT_TRUE(Eventually([&] { return w0.health_polls() > 0 && w2.health_polls() > 0; }));
  // round_robin over three workers would send to w1 as well; only w0 and w2 serve model-a.
  for (int i = 0; i < 6; ++i) {
    auto r = g.Send("POST", "/v1/chat/completions", ChatBody(false, "model-a"));
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(HeaderOf(r, "X-Frugal-Worker"), "w1");
  }
  EXPECT_EQ(w1.hits(), 0);
  EXPECT_EQ(w0.hits() + w2.hits(), 6);
  EXPECT_GT(w0.hits(), 0);  // both servers of the model share it
  EXPECT_GT(w2.hits(), 0);
  // And fake-model never goes to w0.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(g.Chat().status, 200);
  EXPECT_EQ(w0.hits() + w1.hits() + w2.hits(), 10);
  EXPECT_EQ(w0.requests().size(), static_cast<size_t>(w0.hits()));
  for (const auto& r : w0.requests()) EXPECT_NE(r.body.find("model-a"), std::string::npos);
}

TEST(GatewayProxyTest, ModelNeverServedIs404AndModelWhoseWorkersAreDownIs503) {
  FakeWorker w0(FakeWorker::Reply(200, "application/json", kAnswerA));
  FakeWorker w1(FakeWorker::Reply(200, "application/json", kAnswerB));
  w0.set_models({"model-a"});
  TestGateway g({w0.url(), w1.url()});
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(Eventually([&] { return ModelIds(g).size() == 2; }));
  auto unknown = g.Send("POST", "/v1/chat/completions", ChatBody(false, "no-such-model"));
  EXPECT_EQ(unknown.status, 404);
  ExpectOpenAiError(unknown, "invalid_request_error", "model_not_found");
  // The only worker of model-a dies: its model is not unknown, it is unavailable.
  w0.Stop();
  ASSERT_TRUE(Eventually([&] { return g.StateOf("w0") == "ejected"; }));
  auto down = g.Send("POST", "/v1/chat/completions", ChatBody(false, "model-a"));
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(HeaderOf(down, "Retry-After"), "1");
  EXPECT_EQ(w1.hits(), 0);          // not sent to the worker that does not have it
  EXPECT_EQ(g.Chat().status, 200);  // fake-model is still served
}

// ---- worker kinds ----

TEST(GatewayProxyTest, WorkerKindIsDetectedAndUnknownLoadIsShownAsUnknown) {
  // A vLLM-like worker (its /metrics), and an OpenAI-compatible one with no load endpoint.
  FakeWorker vllm(FakeWorker::Reply(200, "application/json", kAnswerA));
  vllm.set_foreign(
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{model_name=\"m\"} 7\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} 3\n");
  FakeWorker plain(FakeWorker::Reply(200, "application/json", kAnswerB));
  plain.set_foreign("");
  TestGateway g({vllm.url(), plain.url()});
  ASSERT_TRUE(g.ok());
  auto worker = [&](const std::string& name) {
    json st = g.StatusJson();
    for (const auto& w : st["workers"]) {
      if (w.value("name", "") == name) return w;
    }
    return json();
  };
  ASSERT_TRUE(Eventually([&] { return worker("w0").value("kind", "") == "vllm"; }))
      << worker("w0").dump();
  json w0 = worker("w0");
  EXPECT_EQ(w0["reported"]["waiting"], 7) << w0.dump();
  EXPECT_EQ(w0["reported"]["running"], 3);
  EXPECT_TRUE(w0["reported"]["kv_usage"].is_null());  // not in its text: unknown, not 0
  EXPECT_FALSE(w0["missing_metrics"].empty());
  EXPECT_EQ(w0["state"], "healthy");
  ASSERT_TRUE(Eventually([&] { return worker("w1").value("kind", "") == "openai"; }))
      << worker("w1").dump();
  json w1 = worker("w1");
  EXPECT_EQ(w1["load_known"], false);
  EXPECT_TRUE(w1["reported"]["waiting"].is_null()) << w1.dump();
  EXPECT_EQ(w1["state"], "healthy");
  // Both take traffic.
  EXPECT_EQ(g.Chat().status, 200);
  EXPECT_EQ(g.Chat().status, 200);
  EXPECT_EQ(vllm.hits(), 1);
  EXPECT_EQ(plain.hits(), 1);
}

// ---- a request out of its own time ----

TEST(GatewayProxyTest, RequestOutOfItsTimeIs504NotRetriedNorHeldAgainstTheWorker) {
  // Both workers take the request and never answer. 0.3 s is the request's whole allowance.
  auto held = std::make_shared<std::vector<std::shared_ptr<http::Responder>>>();
  auto mu = std::make_shared<std::mutex>();
  auto hang = [held, mu](const http::Request& r, std::shared_ptr<http::Responder> out) {
    if (r.body.find("\"stream\":true") != std::string::npos) {
      out->StartStream(200, "text/event-stream");  // a stream that starts, then stalls
      out->Write(Event("partial"));
    }
    std::lock_guard<std::mutex> lock(*mu);
    held->push_back(std::move(out));
  };
  FakeWorker w0(hang);
  FakeWorker w1(hang);
  // The held answers go before their workers do, however the test ends.
  struct Release {
    std::function<void()> f;
    ~Release() { f(); }
  } release{[held, mu] {
    std::lock_guard<std::mutex> lock(*mu);
    held->clear();
  }};
  TestGateway g({w0.url(), w1.url()}, /*request_timeout_s=*/0.3);
  ASSERT_TRUE(g.ok());
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = g.Chat();
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.status, 504);
    ExpectOpenAiError(r, "server_error", "timeout");
    EXPECT_LT(took, 3s);  // the allowance, not one per worker tried
  }
  EXPECT_EQ(w0.hits() + w1.hits(), 4);  // one worker each: never replayed
  EXPECT_EQ(g.StatusJson()["totals"]["retries"], 0);
  EXPECT_EQ(g.Metric("frugal_gateway_timeouts_total"), 4);
  // Four timeouts, more than eject_after (3): both still healthy, as their checks say.
  EXPECT_EQ(g.StateOf("w0"), "healthy");
  EXPECT_EQ(g.StateOf("w1"), "healthy");

  // A stream out of time ends with a timeout error event and [DONE], not a worker failure.
  auto s = g.Chat(/*stream=*/true);
  EXPECT_EQ(s.status, 200);
  auto events = SseData(s.body);
  ASSERT_GE(events.size(), 2u) << s.body;
  EXPECT_EQ(events.back(), "[DONE]");
  json err = json::parse(events[events.size() - 2], nullptr, false);
  EXPECT_EQ(err["error"].value("code", json()), "timeout") << s.body;
  EXPECT_NE(events.front().find("partial"), std::string::npos) << s.body;
  EXPECT_EQ(g.Metric("frugal_gateway_stream_errors_total"), 0);
}

}  // namespace
}  // namespace frugal::gateway
