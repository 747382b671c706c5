#include "http/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "common/thread_annotations.h"

namespace frugal::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr size_t kMaxHeaderBytes = 64 * 1024;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Chunk(std::string_view data) {
  char head[24];
  const int n = std::snprintf(head, sizeof head, "%zx\r\n", data.size());
  std::string out(head, static_cast<size_t>(n));
  out.append(data);
  out += "\r\n";
  return out;
}

}  // namespace

const std::string& Request::Header(const std::string& name) const {
  static const std::string kEmpty;
  auto it = headers.find(name);
  return it == headers.end() ? kEmpty : it->second;
}

std::string OpenAiErrorBody(int status, std::string_view message, std::string_view code) {
  std::string type = "invalid_request_error";
  if (status == 401) type = "authentication_error";
  if (status == 403) type = "permission_error";
  if (status == 404 && code.empty()) type = "not_found_error";
  if (status == 429) type = "rate_limit_error";
  if (status >= 500) type = status == 503 ? "overloaded_error" : "server_error";
  nlohmann::json j;
  j["error"] = {
      {"message", std::string(message)},
      {"type", type},
      {"param", nullptr},
      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(code))}};
  return j.dump();
}

class Session;

struct Server::Impl {
  // Declared first, destroyed last: handlers destroyed with the io_context unregister sessions.
  Mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions FRUGAL_GUARDED_BY(mu);
  uint64_t next_id FRUGAL_GUARDED_BY(mu) = 0;
  ServerOptions opt;
  Handler handler;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> draining{false};
  std::atomic<int64_t> pending{0};  // responses not yet complete
  uint16_t port = 0;
  std::once_flag shutdown_once;

  explicit Impl(int n_threads) : ioc(n_threads) {}
  void Accept();
  std::string ErrorBody(int status, std::string_view msg) const {
    return opt.error_body ? opt.error_body(status, msg) : OpenAiErrorBody(status, msg);
  }
};

// One connection. All members are touched only on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Server::Impl& srv, uint64_t id)
      : stream_(std::move(socket)), srv_(srv), id_(id) {}
  ~Session() {
    MutexLock lock(srv_.mu);
    srv_.sessions.erase(id_);
  }

  void Start() {
    beast::error_code ec;
    stream_.socket().non_blocking(true, ec);  // for the peek in WatchClose; async ops unaffected
    stream_.socket().set_option(tcp::no_delay(true), ec);
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // On the strand: close now if no response is pending (shutdown of idle connections).
  void CloseIfIdle() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }
  void ForceClose() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->ClientGone();
      self->Close();
    });
  }

  // Responder calls, posted to the strand.
  void Send(int status, std::string ct, std::string body, Headers headers) {
    net::post(
        stream_.get_executor(),
        [self = shared_from_this(), status, ct = std::move(ct), body = std::move(body),
         headers = std::move(headers)]() mutable { self->DoSend(status, ct, body, headers); });
  }
  void StartStream(int status, std::string ct, Headers headers) {
    net::post(stream_.get_executor(), [self = shared_from_this(), status, ct = std::move(ct),
                                       headers = std::move(headers)] {
      if (self->closed_ || self->responded_) return;
      self->responded_ = true;
      self->streaming_ = true;
      self->Enqueue(self->Head(status, ct, headers, /*chunked=*/true, 0));
    });
  }
  void Write(std::string data) {
    if (data.empty()) return;  // an empty chunk would end the stream
    net::post(stream_.get_executor(), [self = shared_from_this(), data = std::move(data)] {
      if (self->closed_ || !self->streaming_ || self->ended_) return;
      self->Enqueue(Chunk(data));
    });
  }
  void End() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->closed_ || !self->streaming_ || self->ended_) return;
      self->ended_ = true;
      self->Enqueue("0\r\n\r\n");
    });
  }
  void SetOnClose(std::function<void()> f) {
    MutexLock lock(on_close_mu_);
    on_close_ = std::move(f);
  }
  bool closed() const { return closed_flag_.load(); }

 private:
  void Read() {
    if (srv_.draining || closed_) {
      Close();
      return;
    }
    parser_.emplace();
    parser_->body_limit(srv_.opt.max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(requests_ == 0 ? srv_.opt.read_timeout : srv_.opt.idle_timeout);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      BeginResponse(false);
      DoSend(413, "application/json",
             srv_.ErrorBody(413, "the request body is larger than the limit of " +
                                     std::to_string(srv_.opt.max_body_bytes) + " bytes"),
             {});
      return;
    }
    if (ec == bhttp::error::header_limit) {
      BeginResponse(false);
      DoSend(431, "application/json", srv_.ErrorBody(431, "the request headers are too large"), {});
      return;
    }
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
        ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
      BeginResponse(false);
      DoSend(400, "application/json",
             srv_.ErrorBody(400, "malformed HTTP request: " + ec.message()), {});
      return;
    }
    if (ec) {  // closed by the client, timed out, reset
      Close();
      return;
    }
    stream_.expires_never();
    ++requests_;
    auto& m = parser_->get();
    Request req;
    req.method = std::string(m.method_string());
    const std::string_view target(m.target().data(), m.target().size());
    const size_t q = target.find('?');
    req.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) req.query = std::string(target.substr(q + 1));
    for (const auto& f : m)
      req.headers[Lower(std::string(f.name_string()))] = std::string(f.value());
    req.body = std::move(m.body());
    BeginResponse(m.keep_alive());
    version_ = m.version();
    WatchClose();
    auto responder = std::make_shared<SessionResponder>(shared_from_this());
    try {
      srv_.handler(req, responder);
    } catch (const std::exception& e) {
      DoSend(500, "application/json",
             srv_.ErrorBody(500, std::string("internal error: ") + e.what()), {});
    }
  }

  void BeginResponse(bool keep_alive) {
    busy_ = true;
    responded_ = streaming_ = ended_ = false;
    keep_alive_ = keep_alive;
    ++watch_gen_;
    srv_.pending.fetch_add(1);
  }

  void CompleteResponse() {
    if (!busy_) return;
    busy_ = false;
    ++watch_gen_;
    srv_.pending.fetch_sub(1);
  }

  // Notices a client that disconnects while its response is pending: the socket becomes
  // readable and a peek reads 0 bytes (or fails).
  void WatchClose() {
    const uint64_t gen = watch_gen_;
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        net::bind_executor(
            stream_.get_executor(), [self = shared_from_this(), gen](beast::error_code ec) {
              if (ec || gen != self->watch_gen_ || !self->busy_ || self->closed_) return;
              char c;
              beast::error_code peek_ec;
              const size_t n = self->stream_.socket().receive(net::buffer(&c, 1),
                                                              tcp::socket::message_peek, peek_ec);
              if (peek_ec == net::error::would_block || peek_ec == net::error::try_again) {
                self->WatchClose();
              } else if (peek_ec || n == 0) {
                self->ClientGone();
                self->Close();
              }
              // Otherwise the client sent more (a pipelined request): it is read after this
              // response.
            }));
  }

  void ClientGone() {
    if (closed_) return;
    closed_ = true;
    closed_flag_ = true;
    std::function<void()> f;
    {
      MutexLock lock(on_close_mu_);
      f.swap(on_close_);
    }
    const bool pending = busy_;
    CompleteResponse();
    if (pending && f) f();
  }

  std::string Head(int status, const std::string& ct, const Headers& headers, bool chunked,
                   size_t length) {
    bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version_};
    res.set(bhttp::field::server, "frugal");
    for (const auto& [k, v] : srv_.opt.default_headers) res.set(k, v);
    if (!ct.empty()) res.set(bhttp::field::content_type, ct);
    for (const auto& [k, v] : headers) res.set(k, v);
    if (chunked) {
      res.chunked(true);
      res.set(bhttp::field::cache_control, "no-cache");
    } else {
      res.content_length(length);
    }
    res.keep_alive(keep_alive_ && !srv_.draining);
    std::ostringstream os;
    os << res.base();
    return os.str();
  }

  void DoSend(int status, const std::string& ct, const std::string& body, const Headers& headers) {
    if (closed_ || responded_) return;
    responded_ = true;
    ended_ = true;
    std::string msg = Head(status, ct, headers, false, body.size());
    msg += body;
    Enqueue(std::move(msg));
  }

  void Enqueue(std::string data) {
    out_.push_back(std::move(data));
    Pump();
  }

  void Pump() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    current_ = std::move(out_.front());
    out_.pop_front();
    stream_.expires_after(srv_.opt.idle_timeout);  // a client that stops reading is dropped
    net::async_write(stream_, net::buffer(current_),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (ec) {
                         self->ClientGone();
                         self->Close();
                         return;
                       }
                       if (!self->out_.empty()) {
                         self->Pump();
                         return;
                       }
                       self->stream_.expires_never();
                       if (self->ended_ && self->busy_) {
                         const bool keep = self->keep_alive_ && !self->srv_.draining;
                         self->CompleteResponse();
                         if (keep) {
                           self->Read();
                         } else {
                           self->Close();
                         }
                       }
                     });
  }

  void Close() {
    if (socket_closed_) return;
    socket_closed_ = true;
    closed_flag_ = true;
    CompleteResponse();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  class SessionResponder : public Responder {
   public:
    explicit SessionResponder(std::shared_ptr<Session> s) : s_(std::move(s)) {}
    void Send(int status, std::string ct, std::string body, Headers headers) override {
      s_->Send(status, std::move(ct), std::move(body), std::move(headers));
    }
    void StartStream(int status, std::string ct, Headers headers) override {
      s_->StartStream(status, std::move(ct), std::move(headers));
    }
    void Write(std::string data) override { s_->Write(std::move(data)); }
    void End() override { s_->End(); }
    void OnClose(std::function<void()> f) override { s_->SetOnClose(std::move(f)); }
    bool closed() const override { return s_->closed(); }

   private:
    std::shared_ptr<Session> s_;
  };

  beast::tcp_stream stream_;
  Server::Impl& srv_;
  const uint64_t id_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  unsigned version_ = 11;
  int64_t requests_ = 0;
  bool busy_ = false;  // a request is being answered
  bool keep_alive_ = false;
  bool responded_ = false, streaming_ = false, ended_ = false;
  bool writing_ = false;
  bool closed_ = false;  // the client is gone (or we closed): no more output
  bool socket_closed_ = false;
  uint64_t watch_gen_ = 0;
  std::deque<std::string> out_;
  std::string current_;
  Mutex on_close_mu_;
  std::function<void()> on_close_ FRUGAL_GUARDED_BY(on_close_mu_);
  std::atomic<bool> closed_flag_{false};
};

void Server::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    } else if (!draining) {
      std::shared_ptr<Session> s;
      {
        MutexLock lock(mu);
        const uint64_t id = next_id++;
        s = std::make_shared<Session>(std::move(socket), *this, id);
        sessions[id] = s;
      }
      s->Start();
    }
    if (!draining) Accept();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Shutdown(std::chrono::milliseconds(0)); }

StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options, Handler handler) {
  if (options.io_threads < 1) return InvalidArgument("the HTTP server needs at least one thread");
  auto impl = std::make_unique<Impl>(options.io_threads);
  impl->opt = std::move(options);
  impl->handler = std::move(handler);
  beast::error_code ec;
  const auto addr = net::ip::make_address(impl->opt.host, ec);
  if (ec) return InvalidArgument("not an IP address: '" + impl->opt.host + "'");
  const tcp::endpoint ep(addr, impl->opt.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return IoError("cannot listen on " + impl->opt.host + ":" + std::to_string(impl->opt.port) +
                   ": " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  Impl* p = impl.get();
  for (int i = 0; i < impl->opt.io_threads; ++i) impl->threads.emplace_back([p] { p->ioc.run(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

uint16_t Server::port() const { return impl_->port; }

int64_t Server::open_connections() const {
  MutexLock lock(impl_->mu);
  return static_cast<int64_t>(impl_->sessions.size());
}

void Server::Shutdown(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  std::call_once(s.shutdown_once, [&] {
    // The io_context runs only while it has work. Once the acceptor is closed, a connection
    // with no operation outstanding (its request being answered elsewhere, a pipelined byte
    // already seen by WatchClose) leaves it none: without this guard the threads would return
    // before the closes posted below ran, and the wait for them would sit out its 500 ms.
    auto work = net::make_work_guard(s.ioc);
    s.draining = true;
    net::post(s.ioc, [&s] {
      beast::error_code ec;
      s.acceptor.close(ec);
    });
    auto each_session = [&s](auto f) {
      std::vector<std::shared_ptr<Session>> live;
      {
        MutexLock lock(s.mu);
        for (auto& [id, w] : s.sessions) {
          if (auto p = w.lock()) live.push_back(std::move(p));
        }
      }
      for (auto& p : live) f(*p);
    };
    each_session([](Session& x) { x.CloseIfIdle(); });
    const auto until = std::chrono::steady_clock::now() + grace;
    while (s.pending.load() > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    each_session([](Session& x) { x.ForceClose(); });
    // Let the closes run, then stop the loops.
    const auto stop_by = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (open_connections() > 0 && std::chrono::steady_clock::now() < stop_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    work.reset();
    s.ioc.stop();
    for (auto& t : s.threads) t.join();
  });
}

}  // namespace frugal::http
