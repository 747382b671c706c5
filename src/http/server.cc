#include "http/server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

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
  std::map<uint64_t, std::weak_ptr<Session>> sessions FRUGAL_GUARDED_BY(mu);  // by age
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
  // Connection limits and what they refused (ServerOptions, ConnectionStats).
  int64_t max_connections = 0;
  std::atomic<int64_t> over_limit{0}, shed{0}, accept_failures{0}, evicted_idle{0};
  int64_t closing FRUGAL_GUARDED_BY(mu) = 0;  // evicted sessions not yet gone from `sessions`
  // Touched only by the accept loop (one accept outstanding at a time).
  net::steady_timer accept_timer{ioc};
  std::chrono::milliseconds accept_pause{0};
  int spare_fd = -1;  // given up to accept and shed one connection when descriptors run out

  explicit Impl(int n_threads) : ioc(n_threads) {}
  ~Impl() {
    if (spare_fd >= 0) ::close(spare_fd);
  }
  void Accept();
  void AcceptFailed(const boost::system::error_code& ec);
  bool Reserved(const std::string& path) const {
    return std::find(opt.reserved_paths.begin(), opt.reserved_paths.end(), path) !=
           opt.reserved_paths.end();
  }
  std::string ErrorBody(int status, std::string_view msg) const {
    return opt.error_body ? opt.error_body(status, msg) : OpenAiErrorBody(status, msg);
  }
};

// One connection. All members are touched only on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // overflow: accepted past the connection limit, for one request to a reserved path.
  Session(tcp::socket&& socket, Server::Impl& srv, uint64_t id, bool overflow)
      : stream_(std::move(socket)),
        srv_(srv),
        id_(id),
        overflow_(overflow),
        probe_timer_(stream_.get_executor()) {}
  ~Session() {
    MutexLock lock(srv_.mu);
    srv_.sessions.erase(id_);
    if (evicted) --srv_.closing;
  }

  bool evicted = false;  // chosen to make room (guarded by the server's mu)

  void Start() {
    beast::error_code ec;
    stream_.socket().non_blocking(true, ec);  // for the peek in WatchClose; async ops unaffected
    stream_.socket().set_option(tcp::no_delay(true), ec);
    const auto peer = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = peer.address().to_string();
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
      self->sse_ = ct.starts_with("text/event-stream");
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

  // Waiting for a request (none in progress): may be closed to make room (Impl::Accept).
  bool idle() const { return idle_.load(); }
  bool overflow() const { return overflow_; }

 private:
  void Read() {
    if (srv_.draining || closed_) {
      Close();
      return;
    }
    idle_ = true;
    parser_.emplace();
    parser_->body_limit(srv_.opt.max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    auto timeout = requests_ == 0 ? srv_.opt.read_timeout : srv_.opt.idle_timeout;
    if (overflow_) timeout = std::min<std::chrono::milliseconds>(timeout, kOverflowReadTimeout);
    stream_.expires_after(timeout);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    idle_ = false;
    if (ec == bhttp::error::body_limit) {
      BeginResponse(false);
      linger_ = true;
      DoSend(413, "application/json",
             srv_.ErrorBody(413, "the request body is larger than the limit of " +
                                     std::to_string(srv_.opt.max_body_bytes) + " bytes"),
             {});
      return;
    }
    if (ec == bhttp::error::header_limit) {
      BeginResponse(false);
      linger_ = true;
      DoSend(431, "application/json", srv_.ErrorBody(431, "the request headers are too large"), {});
      return;
    }
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
        ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
      BeginResponse(false);
      linger_ = true;
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
    req.remote = remote_;
    BeginResponse(m.keep_alive() && !overflow_);
    version_ = m.version();
    if (overflow_) {
      srv_.over_limit.fetch_add(1);
      if (!srv_.Reserved(req.path)) {
        DoSend(503, "application/json",
               srv_.ErrorBody(503, "the server has too many open connections (limit " +
                                       std::to_string(srv_.max_connections) + "); retry later"),
               {{"Retry-After", "1"}});
        return;
      }
    }
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
              } else if (peek_ec == net::error::eof || (!peek_ec && n == 0)) {
                self->PeerEnded();
              } else if (peek_ec) {
                self->ClientGone();
                self->Close();
              }
              // Otherwise the client sent more (a pipelined request): it is read after this
              // response.
            }));
  }

  // The client's side ended (FIN) while its response is pending. It may have gone, or only
  // half-closed after sending its request (shutdown(SHUT_WR)) and still be reading. A probe is
  // written that the client must accept: before the answer an interim 1xx response (any HTTP/1.1
  // client must parse one), in a started event stream an SSE comment; a reset in return within
  // a few round trips means it has gone. A whole answer being written needs no probe (its
  // writes tell); a stream of another type cannot take one, and HTTP/1.0 no 1xx: gone.
  void PeerEnded() {
    if (version_ < 11) {
      ClientGone();
      Close();
      return;
    }
    if (probed_ || (responded_ && !streaming_)) return;  // the probe's, or the answer's writes
    if (streaming_ && !sse_) {  // a stream cannot carry a probe without changing its body
      ClientGone();
      Close();
      return;
    }
    probed_ = true;
    // Before the answer, an interim response; in an event stream, an SSE comment (ignored by
    // every SSE reader).
    Enqueue(responded_ ? Chunk(":\n\n") : "HTTP/1.1 100 Continue\r\n\r\n");
    tcp_info info{};
    socklen_t len = sizeof info;
    std::chrono::milliseconds wait{50};
    if (::getsockopt(stream_.socket().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &len) == 0) {
      wait = std::max(wait, std::chrono::milliseconds(4 * info.tcpi_rtt / 1000));
    }
    probe_timer_.expires_after(std::min<std::chrono::milliseconds>(wait, kMaxProbeWait));
    probe_timer_.async_wait([self = shared_from_this(), gen = watch_gen_](beast::error_code ec) {
      if (ec || gen != self->watch_gen_ || !self->busy_ || self->closed_) return;
      // After the FIN, reads only ever say "end of stream"; a reset shows in the connection's
      // state (closed) and its pending error.
      const int fd = self->stream_.socket().native_handle();
      tcp_info ti{};
      socklen_t ti_len = sizeof ti;
      int err = 0;
      socklen_t err_len = sizeof err;
      const bool reset = (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &ti_len) == 0 &&
                          ti.tcpi_state == TCP_CLOSE) ||
                         (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) == 0 && err != 0);
      if (reset) {
        self->ClientGone();  // nobody reads any more
        self->Close();
      }
      // Else half-closed and still there: the response goes out when ready.
    });
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
                         } else if (self->linger_) {
                           self->LingeringClose();
                         } else {
                           self->Close();
                         }
                       }
                     });
  }

  // After an error answered before the request was read (413, 431, 400): the client may still
  // be sending. Closing with its bytes unread would reset the connection and could destroy the
  // answer on its way; instead the sending side is shut, and what arrives is read and dropped
  // for a while (at most kLingerBytes, kLingerTime), as nginx's lingering close does.
  void LingeringClose() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(kLingerTime);
    Drain(0);
  }
  void Drain(size_t drained) {
    linger_buf_.resize(64 * 1024);
    stream_.async_read_some(net::buffer(linger_buf_),
                            [self = shared_from_this(), drained](beast::error_code ec, size_t n) {
                              if (ec || drained + n >= kLingerBytes) {
                                self->Close();
                                return;
                              }
                              self->Drain(drained + n);
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

  static constexpr std::chrono::milliseconds kOverflowReadTimeout{5'000};
  static constexpr std::chrono::milliseconds kMaxProbeWait{2'000};
  static constexpr std::chrono::milliseconds kLingerTime{2'000};
  static constexpr size_t kLingerBytes = 4 << 20;

  beast::tcp_stream stream_;
  Server::Impl& srv_;
  const uint64_t id_;
  const bool overflow_;
  std::string remote_;  // the peer's address
  net::steady_timer probe_timer_;
  bool probed_ = false;  // a probe went out to tell a half-closed client from a gone one
  bool sse_ = false;     // the stream is text/event-stream
  bool linger_ = false;  // answered before the request was read: close by LingeringClose
  std::string linger_buf_;
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
  std::atomic<bool> idle_{false};
};

void Server::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      AcceptFailed(ec);
      return;
    }
    accept_pause = std::chrono::milliseconds(0);
    if (!draining) {
      std::shared_ptr<Session> s, victim;
      {
        MutexLock lock(mu);
        const auto open = static_cast<int64_t>(sessions.size()) - closing;
        bool overflow = false;
        if (open >= max_connections) {
          // At the limit, a connection waiting for a request (kept alive, or never used) makes
          // room, the oldest first: idle connections cannot lock new clients out. (An overflow
          // connection frees no place within the limit; its short read timeout ends it.)
          for (auto& [id, w] : sessions) {
            auto p = w.lock();
            if (p && p->idle() && !p->evicted && !p->overflow()) {
              victim = std::move(p);
              victim->evicted = true;
              ++closing;
              break;
            }
          }
          overflow = victim == nullptr;
        }
        if (overflow && open >= max_connections + opt.overflow_connections) {
          shed.fetch_add(1);  // closed with the socket, at the end of this block
        } else {
          const uint64_t id = next_id++;
          s = std::make_shared<Session>(std::move(socket), *this, id, overflow);
          sessions[id] = s;
        }
      }
      if (victim) {
        evicted_idle.fetch_add(1);
        victim->CloseIfIdle();
      }
      if (s) s->Start();
    }
    if (!draining) Accept();
  });
}

// accept() failed. Out of descriptors (EMFILE/ENFILE), the pending connection would make every
// new accept fail at once: the spare descriptor is given up to accept it and close it (shed),
// then taken back. Any failure pauses the loop (10 ms, doubling to 1 s while failures go on)
// instead of retrying at once, which spun a core and starved the connections already open.
void Server::Impl::AcceptFailed(const boost::system::error_code& ec) {
  accept_failures.fetch_add(1);
  const bool no_fds = ec == net::error::no_descriptors ||
                      (ec.category() == boost::system::system_category() && ec.value() == ENFILE);
  if (no_fds && spare_fd >= 0) {
    ::close(spare_fd);
    const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      shed.fetch_add(1);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  accept_pause =
      std::clamp(accept_pause * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  accept_timer.expires_after(accept_pause);
  accept_timer.async_wait([this](beast::error_code wec) {
    if (!wec && !draining && acceptor.is_open()) Accept();
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
  // The spare descriptor's accept must not block when no connection waits.
  impl->acceptor.non_blocking(true, ec);
  impl->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  impl->max_connections = impl->opt.max_connections;
  if (impl->max_connections <= 0) {
    rlimit nofile{};
    const int64_t fds = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                            ? static_cast<int64_t>(nofile.rlim_cur)
                            : 65536;
    impl->max_connections = std::max<int64_t>(16, fds / 2);
  }
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

void AddConnectionMetrics(MetricsRegistry& metrics, const std::string& prefix,
                          std::function<const Server*()> server) {
  auto add = [&](const std::string& name, const std::string& help,
                 int64_t ConnectionStats::*field) {
    metrics.AddGauge(prefix + name, help, [server, field] {
      const Server* s = server();
      return s ? static_cast<double>(s->connection_stats().*field) : 0.0;
    });
  };
  add("_http_connections", "client connections open now", &ConnectionStats::open);
  add("_http_connection_limit", "connections served normally (beyond: reserved paths only)",
      &ConnectionStats::limit);
  add("_http_connections_over_limit_total",
      "connections past the limit: a reserved path answered, or 503", &ConnectionStats::over_limit);
  add("_http_connections_shed_total", "connections closed at once: past the limit and overflow",
      &ConnectionStats::shed);
  add("_http_connections_evicted_idle_total", "idle connections closed to make room at the limit",
      &ConnectionStats::evicted_idle);
  add("_http_accept_failures_total",
      "failed accepts (out of descriptors, ...), each followed by a pause",
      &ConnectionStats::accept_failures);
}

ConnectionStats Server::connection_stats() const {
  ConnectionStats st;
  st.open = open_connections();
  st.limit = impl_->max_connections;
  st.over_limit = impl_->over_limit.load();
  st.shed = impl_->shed.load();
  st.accept_failures = impl_->accept_failures.load();
  st.evicted_idle = impl_->evicted_idle.load();
  return st;
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
      s.accept_timer.cancel();
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
