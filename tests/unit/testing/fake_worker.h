// Fake workers for the gateway's in-process tests: what the gateway asks of a worker
// (/queue_depth and /v1/models, polled by its health checker; the completion routes), with the
// completion answers scripted by each test, on 127.0.0.1 with a port of the kernel's choosing.
//
// - FakeWorker: a real http::Server. Health routes answer like an idle worker serving one model
//   (kFakeModel), or 500 while set_healthy(false); completion requests are recorded, counted and
//   handed to the test's handler (Reply and Stream build the usual ones).
// - RawWorker: below HTTP, for what http::Server cannot be made to do: close a connection without
//   a byte of answer, or cut a response midway. Each connection's request is read whole (so the
//   close is a clean FIN, not a reset that could discard bytes already sent), the script's bytes
//   are written, and the connection closes.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "http/server.h"

namespace frugal::testing {

inline constexpr char kFakeModel[] = "fake-model";
inline constexpr char kIdleLoad[] = R"({"waiting":0,"running":0,"backlog_ms":0})";
inline constexpr char kModelList[] =
    R"({"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"test"}]})";

inline std::string LocalUrl(uint16_t port) {
  std::string u = "http://127.0.0.1:";  // appended: GCC 12 warns wrongly on "lit" + std::string
  u += std::to_string(port);
  return u;
}

class FakeWorker {
 public:
  using Handler = std::function<void(const http::Request&, std::shared_ptr<http::Responder>)>;

  // A whole response, the same for every request.
  static Handler Reply(int status, std::string content_type, std::string body) {
    return [=](const http::Request&, std::shared_ptr<http::Responder> out) {
      out->Send(status, content_type, body);
    };
  }
  // A 200 SSE stream of `chunks`, one write each, then the end of the response.
  static Handler Stream(std::vector<std::string> chunks) {
    return
        [chunks = std::move(chunks)](const http::Request&, std::shared_ptr<http::Responder> out) {
          out->StartStream(200, "text/event-stream");
          for (const auto& c : chunks) out->Write(c);
          out->End();
        };
  }

  explicit FakeWorker(Handler on_completion) : on_completion_(std::move(on_completion)) {
    http::ServerOptions o;
    o.port = 0;
    o.io_threads = 1;
    auto s = http::Server::Start(
        o, [this](const http::Request& r, std::shared_ptr<http::Responder> out) {
          Handle(r, std::move(out));
        });
    if (!s.ok()) {
      std::fprintf(stderr, "FakeWorker: %s\n", s.status().message().c_str());
      std::abort();  // nothing of the test could mean anything without its worker
    }
    server_ = std::move(s).value();
    port_ = server_->port();
  }
  ~FakeWorker() { Stop(); }
  FakeWorker(const FakeWorker&) = delete;
  FakeWorker& operator=(const FakeWorker&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return LocalUrl(port_); }
  // Completion requests received (health polls are not counted).
  int hits() const { return hits_.load(); }
  int health_polls() const { return polls_.load(); }
  std::vector<http::Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // The ids GET /v1/models lists (default: kFakeModel alone).
  void set_models(std::vector<std::string> ids) {
    std::lock_guard<std::mutex> lock(mu_);
    models_ = std::move(ids);
  }
  // Another engine: /queue_depth answers 404 and /metrics `text` ("": 404 too, an OpenAI-
  // compatible server with no load endpoint at all).
  void set_foreign(std::string metrics_text) {
    std::lock_guard<std::mutex> lock(mu_);
    foreign_ = true;
    metrics_ = std::move(metrics_text);
  }
  // false: /queue_depth answers 500, as a worker that is failing does.
  void set_healthy(bool healthy) { healthy_ = healthy; }
  // Closes the port: from now on connections are refused, as a worker that died.
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::milliseconds(100));
  }

 private:
  void Handle(const http::Request& r, std::shared_ptr<http::Responder> out) {
    bool foreign = false;
    std::string metrics;
    {
      std::lock_guard<std::mutex> lock(mu_);
      foreign = foreign_;
      metrics = metrics_;
    }
    if (foreign && (r.path == "/queue_depth" || r.path == "/metrics")) {
      ++polls_;
      if (r.path == "/metrics" && !metrics.empty()) {
        out->Send(200, "text/plain; version=0.0.4", metrics);
      } else {
        out->Send(404, "application/json", http::OpenAiErrorBody(404, "unknown path"));
      }
    } else if (r.path == "/queue_depth") {
      ++polls_;
      if (healthy_) {
        out->Send(200, "application/json", kIdleLoad);
      } else {
        out->Send(500, "application/json", http::OpenAiErrorBody(500, "the worker is failing"));
      }
    } else if (r.path == "/v1/models") {
      std::string list = R"({"object":"list","data":[)";
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < models_.size(); ++i) {
          if (i > 0) list += ",";
          list += R"({"id":")";
          list += models_[i];
          list += R"(","object":"model","owned_by":"test"})";
        }
      }
      out->Send(200, "application/json", list + "]}");
    } else if (r.path == "/v1/chat/completions" || r.path == "/v1/completions") {
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(r);
      }
      ++hits_;
      on_completion_(r, std::move(out));
    } else {
      out->Send(404, "application/json", http::OpenAiErrorBody(404, "unknown path"));
    }
  }

  Handler on_completion_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::atomic<bool> healthy_{true};
  std::atomic<int> hits_{0}, polls_{0};
  mutable std::mutex mu_;
  std::vector<http::Request> requests_;             // guarded by mu_
  std::vector<std::string> models_ = {kFakeModel};  // guarded by mu_
  bool foreign_ = false;                            // guarded by mu_
  std::string metrics_;                             // guarded by mu_
};

class RawWorker {
 public:
  struct RawRequest {
    std::string method, path, head, body;
  };
  // The bytes written in answer to one completion request before the connection closes; ""
  // closes it with nothing sent.
  using Script = std::function<std::string(const RawRequest&)>;

  // The head of a 200 SSE response with chunked transfer encoding.
  static std::string StreamHead() {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
           "\r\n";
  }
  // One chunk of a chunked body.
  static std::string Chunk(std::string_view data) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out = size;
    out.append(data);
    out += "\r\n";
    return out;
  }

  explicit RawWorker(Script on_completion) : on_completion_(std::move(on_completion)) {
    namespace net = boost::asio;
    using tcp = net::ip::tcp;
    const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawWorker() {
    stop_ = true;
    // Wakes the blocking accept: a connection of our own that Serve sees and drops.
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket poke(io_);
    poke.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }
  RawWorker(const RawWorker&) = delete;
  RawWorker& operator=(const RawWorker&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return LocalUrl(port_); }
  int hits() const { return hits_.load(); }

 private:
  // One connection at a time: the gateway's traffic in these tests is a request or two at once,
  // and a health poll waits for its turn well within its timeout.
  void Serve() {
    namespace net = boost::asio;
    while (!stop_) {
      net::ip::tcp::socket s(io_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stop_) continue;
      RawRequest r;
      if (!Read(s, r)) continue;
      std::string answer;
      if (r.path == "/queue_depth") {
        answer = Whole("200 OK", kIdleLoad);
      } else if (r.path == "/v1/models") {
        answer = Whole("200 OK", kModelList);
      } else if (r.path == "/v1/chat/completions" || r.path == "/v1/completions") {
        ++hits_;
        answer = on_completion_(r);
      } else {
        answer = Whole("404 Not Found", R"({"error":{"message":"unknown path","type":"x"}})");
      }
      if (!answer.empty()) net::write(s, net::buffer(answer), ec);
      s.shutdown(net::ip::tcp::socket::shutdown_both, ec);
      s.close(ec);
    }
  }

  static std::string Whole(const std::string& status, std::string_view body) {
    // Appended piece by piece: GCC 12 warns wrongly on "literal" + std::string (bug 105329).
    std::string out = "HTTP/1.1 ";
    out.append(status).append("\r\nContent-Type: application/json\r\nContent-Length: ");
    out.append(std::to_string(body.size())).append("\r\nConnection: close\r\n\r\n");
    out.append(body);
    return out;
  }

  // The request line, head and Content-Length body; false when the peer went away first.
  static bool Read(boost::asio::ip::tcp::socket& s, RawRequest& r) {
    namespace net = boost::asio;
    std::string buf;
    boost::system::error_code ec;
    const size_t head_end = net::read_until(s, net::dynamic_buffer(buf), "\r\n\r\n", ec);
    if (ec) return false;
    r.head = buf.substr(0, head_end);
    const size_t sp1 = r.head.find(' '), sp2 = r.head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
    r.method = r.head.substr(0, sp1);
    r.path = r.head.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string lower = r.head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t length = 0;
    if (const size_t at = lower.find("\r\ncontent-length:"); at != std::string::npos) {
      length = std::stoul(lower.substr(at + 17));
    }
    r.body = buf.substr(head_end);
    if (r.body.size() < length) {
      std::string rest(length - r.body.size(), '\0');
      net::read(s, net::buffer(rest), ec);
      if (ec) return false;
      r.body += rest;
    }
    return true;
  }

  Script on_completion_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> hits_{0};
  std::thread thread_;
};

}  // namespace frugal::testing
