// The HTTP client against Frugal's own server on 127.0.0.1: keep-alive reuse, streamed bodies,
// SSE parsing, errors before the first byte, timeouts and cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "http/client.h"
#include "http/server.h"

// GCC 12 warns wrongly on "literal" + std::string temporaries (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

namespace frugal::http {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Server> StartServer(Handler h) {
  ServerOptions o;
  o.port = 0;
  auto s = Server::Start(std::move(o), std::move(h));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

ClientRequest Req(uint16_t port, std::string method, std::string target, std::string body = "") {
  ClientRequest r;
  r.port = port;
  r.method = std::move(method);
  r.target = std::move(target);
  r.body = std::move(body);
  return r;
}

TEST(HttpClientTest, FetchReusesOneKeptAliveConnection) {
  auto server = StartServer([](const Request& req, std::shared_ptr<Responder> res) {
    res->Send(201, "text/plain", req.method + ":" + req.body, {{"X-Echo", req.path}});
  });
  Client client;
  for (int i = 0; i < 3; ++i) {
    auto r = client.Fetch(
        Req(server->port(), "POST", "/p" + std::to_string(i), "b" + std::to_string(i)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 201);
    EXPECT_EQ(r->body, "POST:b" + std::to_string(i));
    ASSERT_NE(r->Header("x-echo"), nullptr);
    EXPECT_EQ(*r->Header("x-echo"), "/p" + std::to_string(i));
  }
  EXPECT_EQ(server->open_connections(), 1);
}

TEST(HttpClientTest, StreamedSseArrivesPieceByPiece) {
  std::vector<std::thread> writers;
  std::mutex mu;
  auto server = StartServer([&](const Request&, std::shared_ptr<Responder> res) {
    res->StartStream(200, "text/event-stream");
    std::lock_guard<std::mutex> lock(mu);
    writers.emplace_back([res] {
      for (int i = 0; i < 3; ++i) {
        res->Write("data: {\"i\": " + std::to_string(i) + "}\n\n");
        std::this_thread::sleep_for(30ms);
      }
      res->Write("data: [DONE]\n\n");
      res->End();
    });
  });
  Client client;
  std::vector<std::string> events;
  int pieces = 0, status = 0;
  SseParser sse;
  std::promise<Status> done;
  ClientCallbacks cb;
  cb.on_headers = [&](int s, const Headers&) { status = s; };
  cb.on_data = [&](std::string_view d) {
    ++pieces;
    sse.Feed(d, [&](const SseEvent& e) { events.push_back(e.data); });
  };
  cb.on_done = [&](const Status& st, size_t) { done.set_value(st); };
  client.Send(Req(server->port(), "GET", "/stream"), cb);
  Status st = done.get_future().get();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(status, 200);
  EXPECT_GE(pieces, 3) << "the body came in one piece: not streamed";
  EXPECT_EQ(events, (std::vector<std::string>{"{\"i\": 0}", "{\"i\": 1}", "{\"i\": 2}", "[DONE]"}));
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : writers) t.join();
}

TEST(HttpClientTest, ConnectionRefusedFailsBeforeAnyByte) {
  uint16_t port;
  {
    auto server =
        StartServer([](const Request&, std::shared_ptr<Responder> res) { res->Send(200, "", ""); });
    port = server->port();
  }  // closed: nothing listens there now
  Client client;
  std::promise<std::pair<Status, size_t>> done;
  ClientCallbacks cb;
  cb.on_done = [&](const Status& st, size_t n) { done.set_value({st, n}); };
  client.Send(Req(port, "GET", "/"), cb);
  auto [st, n] = done.get_future().get();
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_EQ(n, 0u);
}

TEST(HttpClientTest, ResponseTimeoutAndCancelEndTheRequestAndTheServerSeesTheClientGo) {
  std::atomic<int> closes{0};
  std::mutex mu;
  std::vector<std::shared_ptr<Responder>> held;
  auto server = StartServer([&](const Request&, std::shared_ptr<Responder> res) {
    res->OnClose([&] { ++closes; });
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(res);  // never answered
  });
  ClientOptions o;
  o.response_timeout = 200ms;
  Client client(o);
  auto r = client.Fetch(Req(server->port(), "GET", "/never"));
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();

  Client client2;
  std::promise<Status> done;
  ClientCallbacks cb;
  cb.on_done = [&](const Status& st, size_t) { done.set_value(st); };
  const uint64_t id = client2.Send(Req(server->port(), "GET", "/never"), cb);
  for (int i = 0; i < 300; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (held.size() == 2) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  client2.Cancel(id);
  EXPECT_EQ(done.get_future().get().code(), StatusCode::kCancelled);
  for (int i = 0; i < 300 && closes.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(closes.load(), 2) << "the server did not notice both clients leave";
  std::lock_guard<std::mutex> lock(mu);
  held.clear();
}

TEST(SseParserTest, EventsSplitAnywhereWithAnyLineEnding) {
  const std::string stream =
      ": a comment\r\n"
      "event: chunk\r\ndata: first\r\ndata: second\r\nid: 7\r\n\r\n"
      "data:no-space\n\n"
      "data: [DONE]\r\r";
  for (size_t piece : {1u, 2u, 5u, 1000u}) {
    SseParser p;
    std::vector<SseEvent> got;
    for (size_t i = 0; i < stream.size(); i += piece) {
      p.Feed(std::string_view(stream).substr(i, piece),
             [&](const SseEvent& e) { got.push_back(e); });
    }
    ASSERT_EQ(got.size(), 3u) << "piece " << piece;
    EXPECT_EQ(got[0].event, "chunk");
    EXPECT_EQ(got[0].data, "first\nsecond");
    EXPECT_EQ(got[0].id, "7");
    EXPECT_EQ(got[1].data, "no-space");
    EXPECT_EQ(got[2].data, "[DONE]");
  }
}

}  // namespace
}  // namespace frugal::http
