// The HTTP layer against a real socket on 127.0.0.1 (port 0): keep-alive, limits, chunked
// streaming, disconnect detection, timeouts, graceful shutdown and a shutdown that closes
// connections with nothing outstanding without stalling.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/server.h"

namespace frugal::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

std::unique_ptr<Server> StartServer(Handler h, ServerOptions o = {}) {
  o.port = 0;
  auto s = Server::Start(std::move(o), std::move(h));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

struct Client {
  net::io_context ioc;
  tcp::socket sock{ioc};
  beast::flat_buffer buf;
  explicit Client(uint16_t port) {
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }
  void SendRaw(const std::string& data) { net::write(sock, net::buffer(data)); }
  void Send(const std::string& method, const std::string& target, const std::string& body = "",
            bool keep_alive = true) {
    bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method), target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.body() = body;
    req.keep_alive(keep_alive);
    req.prepare_payload();
    bhttp::write(sock, req);
  }
  bhttp::response<bhttp::string_body> Read() {
    bhttp::response<bhttp::string_body> res;
    bhttp::read(sock, buf, res);
    return res;
  }
};

// Waits up to `timeout` for pred.
template <typename P>
bool WaitFor(P pred, std::chrono::milliseconds timeout = 3000ms) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A request the handler keeps unanswered (as one waiting on generation): the test answers it
// later through With(), and sees whether the server took the client for gone (OnClose).
struct HeldResponder {
  std::atomic<bool> closed{false};
  std::mutex mu;
  std::shared_ptr<Responder> res;

  // The handler: `start` runs first on the Responder (e.g. to begin a stream), then it is held.
  Handler Hold(std::function<void(Responder&)> start = {}) {
    return [this, start](const Request&, std::shared_ptr<Responder> r) {
      r->OnClose([this] { closed = true; });
      if (start) start(*r);
      std::lock_guard<std::mutex> lock(mu);
      res = std::move(r);
    };
  }
  bool Arrived() {
    return WaitFor([&] {
      std::lock_guard<std::mutex> lock(mu);
      return res != nullptr;
    });
  }
  template <typename F>
  void With(F f) {
    std::lock_guard<std::mutex> lock(mu);
    f(*res);
  }
  // A Responder must not outlive its Server: call before the server goes.
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    res.reset();
  }
};

TEST(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto server = StartServer([](const Request& req, std::shared_ptr<Responder> res) {
    res->Send(200, "text/plain",
              req.method + " " + req.path + " q=" + req.query + " body=" + req.body +
                  " h=" + req.Header("x-test"));
  });
  Client c(server->port());
  for (int i = 0; i < 3; ++i) {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/echo?i=" + std::to_string(i), 11};
    req.set("X-Test", "v" + std::to_string(i));
    req.body() = "b" + std::to_string(i);
    req.keep_alive(true);
    req.prepare_payload();
    bhttp::write(c.sock, req);
    auto res = c.Read();
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "POST /echo q=i=" + std::to_string(i) + " body=b" + std::to_string(i) +
                              " h=v" + std::to_string(i));
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(server->open_connections(), 1);
}

TEST(HttpServerTest, BodyOverTheLimitGets413WithJsonError) {
  std::atomic<int> handled{0};
  ServerOptions o;
  o.max_body_bytes = 1000;
  auto server = StartServer(
      [&](const Request&, std::shared_ptr<Responder> res) {
        ++handled;
        res->Send(200, "text/plain", "ok");
      },
      o);
  Client c(server->port());
  c.Send("POST", "/x", std::string(5000, 'a'));
  auto res = c.Read();
  EXPECT_EQ(res.result_int(), 413);
  auto j = nlohmann::json::parse(res.body());
  EXPECT_TRUE(j["error"]["message"].get<std::string>().find("1000") != std::string::npos)
      << res.body();
  EXPECT_EQ(handled.load(), 0);
  // The limit is exact: a body of 1000 bytes passes.
  Client c2(server->port());
  c2.Send("POST", "/x", std::string(1000, 'a'));
  EXPECT_EQ(c2.Read().result_int(), 200);
}

TEST(HttpServerTest, MalformedRequestGets400) {
  auto server = StartServer(
      [](const Request&, std::shared_ptr<Responder> res) { res->Send(200, "text/plain", "ok"); });
  Client c(server->port());
  c.SendRaw("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n");
  auto res = c.Read();
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_TRUE(nlohmann::json::parse(res.body()).contains("error"));
}

TEST(HttpServerTest, StreamArrivesAsChunksWrittenFromAnotherThread) {
  std::vector<std::thread> writers;
  std::mutex mu;
  auto server = StartServer([&](const Request&, std::shared_ptr<Responder> res) {
    res->StartStream(200, "text/event-stream");
    std::lock_guard<std::mutex> lock(mu);
    writers.emplace_back([res] {
      for (int i = 0; i < 5; ++i) {
        res->Write("data: " + std::to_string(i) + "\n\n");
        std::this_thread::sleep_for(2ms);
      }
      res->Write("data: [DONE]\n\n");
      res->End();
    });
  });
  Client c(server->port());
  for (int round = 0; round < 2; ++round) {  // the connection stays usable after a stream
    c.Send("GET", "/events");
    auto res = c.Read();
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res[bhttp::field::transfer_encoding], "chunked");
    EXPECT_EQ(res[bhttp::field::content_type], "text/event-stream");
    EXPECT_EQ(res.body(),
              "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\ndata: [DONE]\n\n");
  }
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : writers) t.join();
}

TEST(HttpServerTest, ClientThatDisconnectsWhileWaitingFiresOnClose) {
  HeldResponder held;  // never answered: as a request waiting on generation
  auto server = StartServer(held.Hold());
  {
    Client c(server->port());
    c.Send("POST", "/slow", "{}");
    ASSERT_TRUE(held.Arrived());
    EXPECT_FALSE(held.closed.load());
  }  // the client goes away
  EXPECT_TRUE(WaitFor([&] { return held.closed.load(); }))
      << "OnClose did not run after the client disconnected";
  held.With([](Responder& r) {
    EXPECT_TRUE(r.closed());
    r.Send(200, "text/plain", "too late");  // harmless
  });
  held.Release();
}

TEST(HttpServerTest, SlowRequestIsDroppedAfterTheReadTimeout) {
  ServerOptions o;
  o.read_timeout = 200ms;
  auto server = StartServer(
      [](const Request&, std::shared_ptr<Responder> res) { res->Send(200, "text/plain", "ok"); },
      o);
  Client c(server->port());
  c.SendRaw("GET / HTTP/1.1\r\nHost: x\r\n");  // headers never finish
  char b;
  beast::error_code ec;
  const auto t0 = std::chrono::steady_clock::now();
  c.sock.read_some(net::buffer(&b, 1), ec);  // blocks until the server closes
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset) << ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST(HttpServerTest, GracefulShutdownFinishesInFlightRequestsAndRefusesNewOnes) {
  std::vector<std::thread> workers;
  std::mutex mu;
  auto server = StartServer([&](const Request&, std::shared_ptr<Responder> res) {
    std::lock_guard<std::mutex> lock(mu);
    workers.emplace_back([res] {
      std::this_thread::sleep_for(300ms);
      res->Send(200, "text/plain", "finished");
    });
  });
  const uint16_t port = server->port();
  Client c(port);
  c.Send("POST", "/work");
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !workers.empty();
  }));
  std::thread stopper([&] { server->Shutdown(5000ms); });
  auto res = c.Read();
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "finished");
  EXPECT_FALSE(res.keep_alive());  // draining: the connection closes after this response
  stopper.join();
  net::io_context ioc;
  tcp::socket s(ioc);
  beast::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_TRUE(ec) << "a new connection was accepted after shutdown";
  std::lock_guard<std::mutex> lock(mu);
  for (auto& t : workers) t.join();
}

// A connection can have nothing outstanding on its socket: its request is being answered
// elsewhere and the next pipelined request has begun to arrive (so the close watch is done).
// Shutdown must keep the event loop running until it has closed such a connection, not let
// the loop run out of work and then wait its 500 ms for closes that never run.
TEST(HttpServerTest, ShutdownClosesAConnectionWithNothingOutstandingPromptly) {
  std::mutex mu;
  std::shared_ptr<Responder> held;
  auto server = StartServer([&](const Request&, std::shared_ptr<Responder> res) {
    std::lock_guard<std::mutex> lock(mu);
    held = res;
  });
  Client c(server->port());
  c.Send("POST", "/slow", "{}");
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held != nullptr;
  }));
  c.SendRaw("G");  // the first byte of a pipelined request
  std::this_thread::sleep_for(100ms);
  std::thread answer([&] {  // answers (too late) after the grace, while Shutdown waits
    std::this_thread::sleep_for(150ms);
    std::lock_guard<std::mutex> lock(mu);
    held->Send(200, "text/plain", "late");
    held.reset();  // a Responder must not outlive its Server
  });
  const auto t0 = std::chrono::steady_clock::now();
  server->Shutdown(50ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  answer.join();
  EXPECT_LT(took, 400ms) << "Shutdown waited for closes that did not run";
  // The server closed the connection itself (its destructor has not run yet).
  pollfd pfd{c.sock.native_handle(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 1000), 1) << "the connection is still open after Shutdown";
  char b;
  beast::error_code ec;
  c.sock.read_some(net::buffer(&b, 1), ec);
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset) << ec.message();
}

TEST(HttpServerTest, ManyConcurrentOpenStreamsNeedNoThreadEach) {
  // 200 requests held open at once on a server with one event-loop thread.
  std::mutex mu;
  std::vector<std::shared_ptr<Responder>> open;
  ServerOptions o;
  o.io_threads = 1;
  auto server = StartServer(
      [&](const Request&, std::shared_ptr<Responder> res) {
        res->StartStream(200, "text/event-stream");
        res->Write("data: hello\n\n");
        std::lock_guard<std::mutex> lock(mu);
        open.push_back(res);
      },
      o);
  constexpr int kN = 200;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kN; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    clients.back()->Send("GET", "/s");
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return open.size() == kN;
  }));
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& r : open) r->End();
  }
  for (auto& c : clients) EXPECT_EQ(c->Read().body(), "data: hello\n\n");
  std::lock_guard<std::mutex> lock(mu);
  open.clear();  // a Responder must not outlive its Server
}

// A client that shuts its sending side after the request (as `nc -N` does) still reads the
// answer: a half-close is not a departure. The server tells them apart with an interim 100.
TEST(HttpServerTest, HalfClosedClientStillGetsItsAnswer) {
  HeldResponder held;
  auto server = StartServer(held.Hold());
  Client c(server->port());
  c.Send("POST", "/slow", "{}", /*keep_alive=*/false);
  ASSERT_TRUE(held.Arrived());
  c.sock.shutdown(tcp::socket::shutdown_send);
  std::this_thread::sleep_for(300ms);  // the server has seen the FIN and probed
  EXPECT_FALSE(held.closed.load()) << "a half-closed client was taken for gone";
  held.With([](Responder& r) {
    EXPECT_FALSE(r.closed());
    r.Send(200, "text/plain", "answer");
  });
  auto first = c.Read();
  if (first.result_int() == 100) first = c.Read();  // the interim response, then the answer
  EXPECT_EQ(first.result_int(), 200);
  EXPECT_EQ(first.body(), "answer");
  EXPECT_FALSE(held.closed.load());
  held.Release();
}

// The same in an event stream already begun: the probe is an SSE comment, the stream goes on.
TEST(HttpServerTest, HalfClosedClientKeepsItsEventStream) {
  HeldResponder held;
  auto server = StartServer(held.Hold([](Responder& r) {
    r.StartStream(200, "text/event-stream");
    r.Write("data: one\n\n");
  }));
  Client c(server->port());
  c.Send("GET", "/events", "", /*keep_alive=*/false);
  ASSERT_TRUE(held.Arrived());
  c.sock.shutdown(tcp::socket::shutdown_send);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(held.closed.load()) << "a half-closed client was taken for gone";
  held.With([](Responder& r) {
    r.Write("data: two\n\n");
    r.End();
  });
  auto r = c.Read();
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "data: one\n\n:\n\ndata: two\n\n");
  EXPECT_FALSE(held.closed.load());
  held.Release();
}

// At the limit, idle connections make room for new ones; with every connection busy, a new one
// may still reach a reserved path (a health check) and gets 503 for anything else; past the
// overflow too, it is closed at once.
TEST(HttpServerTest, ConnectionLimitEvictsIdleThenServesOnlyReservedPaths) {
  std::mutex mu;
  std::vector<std::shared_ptr<Responder>> held;
  ServerOptions o;
  o.max_connections = 2;
  o.overflow_connections = 1;
  auto server = StartServer(
      [&](const Request& req, std::shared_ptr<Responder> res) {
        if (req.path == "/health" || req.path == "/fast") {
          res->Send(200, "text/plain", "ok");
          return;
        }
        std::lock_guard<std::mutex> lock(mu);
        held.push_back(res);  // busy until the test ends
      },
      o);
  EXPECT_EQ(server->connection_stats().limit, 2);
  // Two idle connections; a third evicts the oldest of them and is served normally.
  auto idle1 = std::make_unique<Client>(server->port());
  auto idle2 = std::make_unique<Client>(server->port());
  ASSERT_TRUE(WaitFor([&] { return server->open_connections() == 2; }));
  {
    Client c(server->port());
    c.Send("GET", "/fast");
    EXPECT_EQ(c.Read().result_int(), 200);
  }
  EXPECT_EQ(server->connection_stats().evicted_idle, 1);
  char b;
  beast::error_code ec;
  idle1->sock.read_some(net::buffer(&b, 1), ec);  // the oldest was closed
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset) << ec.message();
  idle1.reset();
  idle2.reset();
  ASSERT_TRUE(WaitFor([&] { return server->open_connections() == 0; }));

  // Two busy connections: nothing idle to evict.
  std::vector<std::unique_ptr<Client>> busy;
  for (int i = 0; i < 2; ++i) {
    busy.push_back(std::make_unique<Client>(server->port()));
    busy.back()->Send("POST", "/slow", "{}");
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return held.size() == 2;
  }));
  {
    Client c(server->port());  // overflow: a health check is answered
    c.Send("GET", "/health");
    auto r = c.Read();
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_FALSE(r.keep_alive());
  }
  ASSERT_TRUE(WaitFor([&] { return server->open_connections() == 2; }));
  {
    Client c(server->port());  // overflow: anything else is refused, with a JSON error
    c.Send("POST", "/slow", "{}");
    auto r = c.Read();
    EXPECT_EQ(r.result_int(), 503);
    EXPECT_EQ(r[bhttp::field::retry_after], "1");
    const auto j = nlohmann::json::parse(r.body());
    EXPECT_NE(j["error"]["message"].get<std::string>().find("too many open connections"),
              std::string::npos);
  }
  ASSERT_TRUE(WaitFor([&] { return server->open_connections() == 2; }));
  Client overflow(server->port());  // holds the one overflow place
  ASSERT_TRUE(WaitFor([&] { return server->open_connections() == 3; }));
  {
    Client shed(server->port());  // past the overflow: closed at once
    shed.Send("GET", "/health");
    beast::error_code rec;
    shed.sock.read_some(net::buffer(&b, 1), rec);
    EXPECT_TRUE(rec == net::error::eof || rec == net::error::connection_reset) << rec.message();
  }
  const auto st = server->connection_stats();
  EXPECT_EQ(st.shed, 1);
  EXPECT_EQ(st.over_limit, 2);
  std::lock_guard<std::mutex> lock(mu);
  for (auto& r : held) r->Send(200, "text/plain", "done");
  held.clear();
}

}  // namespace
}  // namespace frugal::http
