// The gateway's request path without a model: in-process fake workers on real HTTP servers
// (port 0), the real Gateway in front, the project's HTTP client as the caller. Covers what the
// black-box pytest covers only with subprocesses: proxying, retry before the first byte, refusal
// when every worker refuses, ejection of a dead worker, a stream that breaks midway, bad input.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gateway/gateway.h"
#include "http/client.h"
#include "http/server.h"

namespace frugal::gateway {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

bool Eventually(const std::function<bool()>& f, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

const char kAnswer[] =
    R"({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":)"
    R"({"role":"assistant","content":"from the fake"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}})";

// A worker as the gateway sees one: load reports, a model list, and completions answered as
// `mode` says.
class FakeWorker {
 public:
  enum class Mode { kAnswer, kBusy, kBreakStream };

  explicit FakeWorker(Mode mode) : mode_(mode) {
    http::ServerOptions o;
    o.port = 0;
    o.io_threads = 1;
    auto s = http::Server::Start(o, [this](const http::Request& r, std::shared_ptr<http::Responder> out) {
      Handle(r, std::move(out));
    });
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (s.ok()) server_ = std::move(s).value();
  }
  ~FakeWorker() { Stop(); }

  void Stop() {
    if (server_) server_->Shutdown(100ms);
    server_.reset();
  }
  std::string url() const {
    std::string u = "http://127.0.0.1:";  // appended, not operator+ (GCC 12's false -Wrestrict)
    u += std::to_string(server_->port());
    return u;
  }
  int completions() const { return completions_.load(); }

 private:
  void Handle(const http::Request& r, std::shared_ptr<http::Responder> out) {
    if (r.path == "/queue_depth") {
      out->Send(200, "application/json", R"({"waiting":0,"running":0})");
    } else if (r.path == "/health") {
      out->Send(200, "application/json", R"({"status":"ok"})");
    } else if (r.path == "/v1/models") {
      out->Send(200, "application/json", R"({"object":"list","data":[{"id":"m","object":"model"}]})");
    } else if (r.path == "/v1/chat/completions") {
      ++completions_;
      switch (mode_) {
        case Mode::kAnswer:
          out->Send(200, "application/json", kAnswer);
          break;
        case Mode::kBusy:
          out->Send(503, "application/json", R"({"error":{"message":"queue full","type":"overloaded"}})");
          break;
        case Mode::kBreakStream:
          // One event, then the response ends without [DONE]: the worker died midway.
          out->StartStream(200, "text/event-stream");
          out->Write(R"(data: {"choices":[{"index":0,"delta":{"content":"par"}}]})"
                     "\n\n");
          out->End();
          break;
      }
    } else {
      out->Send(404, "application/json", R"({"error":{"message":"no such route","type":"not_found"}})");
    }
  }

  const Mode mode_;
  std::atomic<int> completions_{0};
  std::unique_ptr<http::Server> server_;
};

struct Stack {
  std::unique_ptr<Gateway> gateway;
  http::Client client;

  explicit Stack(const std::vector<std::string>& worker_urls) {
    GatewayConfig c;
    c.port = 0;
    c.policy = "round_robin";
    c.retry_backoff_ms = 1;
    c.health.interval = 50ms;
    c.health.timeout = 200ms;
    c.cache.enabled = false;
    c.admin_token = "test-admin";
    for (size_t i = 0; i < worker_urls.size(); ++i) {
      std::string name = "w";
      name += std::to_string(i);
      c.workers.push_back({name, worker_urls[i], 1});
    }
    auto g = Gateway::Start(std::move(c), nullptr);
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (g.ok()) gateway = std::move(g).value();
  }
  ~Stack() {
    if (gateway) gateway->Shutdown(500ms);
  }

  http::ClientResponse Call(const std::string& method, const std::string& target, const std::string& body = "",
                            http::Headers headers = {{"Content-Type", "application/json"}}) {
    http::ClientRequest r;
    r.port = gateway->port();
    r.method = method;
    r.target = target;
    r.headers = std::move(headers);
    r.body = body;
    auto resp = client.Fetch(std::move(r));
    EXPECT_TRUE(resp.ok()) << resp.status().message();
    return resp.ok() ? std::move(resp).value() : http::ClientResponse{};
  }
  http::ClientResponse Chat(bool stream = false) {
    json b = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 8}};
    if (stream) b["stream"] = true;
    return Call("POST", "/v1/chat/completions", b.dump());
  }
  std::string WorkerState(const std::string& name) {
    auto r = Call("GET", "/admin/workers", "", {{"X-Admin-Token", "test-admin"}});
    json j = json::parse(r.body, nullptr, false);
    if (!j.is_object()) return "";
    for (const auto& w : j["workers"]) {
      if (w["name"] == name) return w["state"].get<std::string>();
    }
    return "";
  }
};

void ExpectOpenAiError(const http::ClientResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.body;
  ASSERT_TRUE(j.contains("error") && j["error"].is_object()) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(j["error"]["type"].is_string()) << r.body;
}

TEST(GatewayProxyTest, AnAnswerIsProxiedUnchanged) {
  FakeWorker w(FakeWorker::Mode::kAnswer);
  Stack s({w.url()});
  ASSERT_TRUE(s.gateway);
  auto r = s.Chat();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body, nullptr, false), json::parse(kAnswer)) << r.body;
  EXPECT_EQ(w.completions(), 1);
}

TEST(GatewayProxyTest, ABusyWorkerIsRetriedOnAnotherBeforeTheFirstByte) {
  FakeWorker busy(FakeWorker::Mode::kBusy), ok(FakeWorker::Mode::kAnswer);
  Stack s({busy.url(), ok.url()});
  ASSERT_TRUE(s.gateway);
  for (int i = 0; i < 4; ++i) {
    auto r = s.Chat();
    EXPECT_EQ(r.status, 200) << r.body;
  }
  // Round robin sends some first attempts to the busy one; each ends on the other.
  EXPECT_GE(busy.completions(), 1);
  EXPECT_EQ(ok.completions(), 4);
  // Back-pressure, not a fault: the busy worker is not ejected for it.
  EXPECT_EQ(s.WorkerState("w0"), "healthy");
}

TEST(GatewayProxyTest, EveryWorkerRefusingIs503WithRetryAfter) {
  FakeWorker a(FakeWorker::Mode::kBusy), b(FakeWorker::Mode::kBusy);
  Stack s({a.url(), b.url()});
  ASSERT_TRUE(s.gateway);
  auto r = s.Chat();
  EXPECT_EQ(r.status, 503);
  ASSERT_NE(r.Header("Retry-After"), nullptr);
  ExpectOpenAiError(r);
  EXPECT_EQ(a.completions() + b.completions(), 2);  // each tried once, none twice
}

TEST(GatewayProxyTest, ADeadWorkerIsEjectedAndGetsNoRequests) {
  FakeWorker dead(FakeWorker::Mode::kAnswer), ok(FakeWorker::Mode::kAnswer);
  const std::string dead_url = dead.url();
  dead.Stop();  // its port now refuses connections
  Stack s({dead_url, ok.url()});
  ASSERT_TRUE(s.gateway);
  ASSERT_TRUE(Eventually([&] { return s.WorkerState("w0") == "ejected"; })) << s.WorkerState("w0");
  EXPECT_EQ(s.WorkerState("w1"), "healthy");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.Chat().status, 200);
  EXPECT_EQ(ok.completions(), 5);
}

TEST(GatewayProxyTest, AStreamBrokenMidwayEndsWithAnErrorEventAndDone) {
  FakeWorker w(FakeWorker::Mode::kBreakStream);
  Stack s({w.url()});
  ASSERT_TRUE(s.gateway);
  auto r = s.Chat(/*stream=*/true);
  EXPECT_EQ(r.status, 200);  // the client already had bytes: no retry, no other status
  EXPECT_NE(r.body.find("\"par\""), std::string::npos) << r.body;  // what was sent stays
  EXPECT_NE(r.body.find("worker_failed"), std::string::npos) << r.body;
  const std::string done = "data: [DONE]\n\n";
  ASSERT_GE(r.body.size(), done.size());
  EXPECT_EQ(r.body.substr(r.body.size() - done.size()), done) << r.body;
  EXPECT_EQ(w.completions(), 1);
}

TEST(GatewayProxyTest, InvalidJsonIs400AndReachesNoWorker) {
  FakeWorker w(FakeWorker::Mode::kAnswer);
  Stack s({w.url()});
  ASSERT_TRUE(s.gateway);
  auto r = s.Call("POST", "/v1/chat/completions", "{\"model\": \"m\", \"messages\": [");
  EXPECT_EQ(r.status, 400);
  ExpectOpenAiError(r);
  auto no_messages = s.Call("POST", "/v1/chat/completions", R"({"model": "m"})");
  EXPECT_EQ(no_messages.status, 400) << no_messages.body;
  EXPECT_EQ(w.completions(), 0);
}

}  // namespace
}  // namespace frugal::gateway
