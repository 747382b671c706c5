#include "http/client.h"

#include <strings.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/thread_annotations.h"

namespace frugal::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr size_t kReadChunk = 16 * 1024;

}  // namespace

const std::string* ClientResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

class ClientOp;

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  ClientOptions opt;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  std::vector<std::thread> threads;
  Mutex mu;
  std::unordered_map<std::string, std::vector<std::unique_ptr<beast::tcp_stream>>> idle
      FRUGAL_GUARDED_BY(mu);
  std::unordered_map<uint64_t, std::weak_ptr<ClientOp>> ops FRUGAL_GUARDED_BY(mu);
  uint64_t next_id FRUGAL_GUARDED_BY(mu) = 1;

  std::unique_ptr<beast::tcp_stream> TakeIdle(const std::string& key) {
    MutexLock lock(mu);
    auto it = idle.find(key);
    if (it == idle.end() || it->second.empty()) return nullptr;
    auto s = std::move(it->second.back());
    it->second.pop_back();
    return s;
  }
  void PutIdle(const std::string& key, std::unique_ptr<beast::tcp_stream> s) {
    MutexLock lock(mu);
    auto& v = idle[key];
    if (v.size() < opt.max_idle_per_host) v.push_back(std::move(s));
  }
};

// One request. Runs on its stream's strand.
class ClientOp : public std::enable_shared_from_this<ClientOp> {
 public:
  ClientOp(std::shared_ptr<Client::Impl> client, uint64_t id, ClientRequest req, ClientCallbacks cb)
      : client_(std::move(client)),
        id_(id),
        req_(std::move(req)),
        cb_(std::move(cb)),
        key_(req_.host + ":" + std::to_string(req_.port)),
        strand_(net::make_strand(client_->ioc)) {}

  void Start() {
    net::dispatch(strand_, [self = shared_from_this()] {
      self->stream_ = self->client_->TakeIdle(self->key_);
      self->reused_ = self->stream_ != nullptr;
      if (self->reused_) {
        self->Write();
      } else {
        self->Connect();
      }
    });
  }

  void Cancel() {
    net::post(strand_, [self = shared_from_this()] {
      if (self->done_) return;
      self->cancelled_ = true;
      if (self->stream_) self->stream_->cancel();
      if (!self->stream_ || !self->busy_) self->Finish(Cancelled("the request was cancelled"));
    });
  }

 private:
  void Connect() {
    busy_ = true;
    stream_ = std::make_unique<beast::tcp_stream>(strand_);
    beast::error_code ec;
    const auto addr = net::ip::make_address(req_.host, ec);
    if (ec) {
      // A host name: resolve it first.
      auto resolver = std::make_shared<tcp::resolver>(strand_);
      resolver->async_resolve(
          req_.host, std::to_string(req_.port),
          [self = shared_from_this(), resolver](beast::error_code rec,
                                                const tcp::resolver::results_type& results) {
            if (rec) {
              self->Finish(IoError("cannot resolve " + self->req_.host + ": " + rec.message()));
              return;
            }
            self->stream_->expires_after(self->client_->opt.connect_timeout);
            self->stream_->async_connect(
                results,
                [self](beast::error_code cec, const tcp::endpoint&) { self->OnConnect(cec); });
          });
      return;
    }
    stream_->expires_after(client_->opt.connect_timeout);
    stream_->async_connect(
        tcp::endpoint(addr, req_.port),
        [self = shared_from_this()](beast::error_code cec) { self->OnConnect(cec); });
  }

  void OnConnect(beast::error_code ec) {
    if (ec) {
      // Not reached in time is the server's failure, not the request running out of its time.
      Finish(ec == beast::error::timeout && !cancelled_
                 ? IoError("connect to " + key_ + ": timed out")
                 : Error("connect to " + key_, ec));
      return;
    }
    beast::error_code ignored;
    stream_->socket().set_option(tcp::no_delay(true), ignored);
    Write();
  }

  void Write() {
    busy_ = true;
    if (cancelled_) {
      Finish(Cancelled("the request was cancelled"));
      return;
    }
    msg_ = {bhttp::string_to_verb(req_.method), req_.target, 11};
    msg_.set(bhttp::field::host, key_);
    msg_.set(bhttp::field::user_agent, "frugal");
    for (const auto& [k, v] : req_.headers) msg_.set(k, v);
    msg_.body() = req_.body;
    msg_.keep_alive(true);
    msg_.prepare_payload();
    stream_->expires_after(req_.response_timeout.count() > 0 ? req_.response_timeout
                                                             : client_->opt.response_timeout);
    bhttp::async_write(*stream_, msg_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        self->RetryOrFail("send to " + self->key_, ec);
        return;
      }
      self->parser_.emplace();
      // Unlimited (boost::none trips a comparison bug in Beast 1.74 for Content-Length bodies).
      self->parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
      bhttp::async_read_header(*self->stream_, self->buffer_, *self->parser_,
                               [self](beast::error_code hec, size_t n) { self->OnHeader(hec, n); });
    });
  }

  // A pooled connection the server closed meanwhile fails before any byte: use a fresh one.
  void RetryOrFail(const std::string& what, beast::error_code ec) {
    if (reused_ && received_ == 0 && !cancelled_ && ec != beast::error::timeout) {
      reused_ = false;
      Connect();
      return;
    }
    Finish(Error(what, ec));
  }

  void OnHeader(beast::error_code ec, size_t n) {
    received_ += n;
    if (ec) {
      RetryOrFail("response from " + key_, ec);
      return;
    }
    const auto& res = parser_->get();
    Headers headers;
    for (const auto& f : res)
      headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    if (cb_.on_headers) cb_.on_headers(res.result_int(), headers);
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) {
      OnComplete();
      return;
    }
    parser_->get().body().data = chunk_;
    parser_->get().body().size = sizeof chunk_;
    bhttp::async_read_some(
        *stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->received_ += n;
          if (ec == bhttp::error::need_buffer) ec = {};
          if (ec) {
            self->Finish(self->Error("response body from " + self->key_, ec));
            return;
          }
          const size_t got = sizeof self->chunk_ - self->parser_->get().body().size;
          if (got > 0 && self->cb_.on_data) self->cb_.on_data(std::string_view(self->chunk_, got));
          self->ReadBody();
        });
  }

  void OnComplete() {
    const bool keep = parser_->get().keep_alive() && !cancelled_;
    stream_->expires_never();
    if (keep) {
      client_->PutIdle(key_, std::move(stream_));
    }
    Finish(Status::Ok());
  }

  Status Error(const std::string& what, beast::error_code ec) {
    if (cancelled_) return Cancelled("the request was cancelled");
    if (ec == beast::error::timeout) return DeadlineExceeded(what + ": timed out");
    return IoError(what + ": " + ec.message());
  }

  void Finish(const Status& st) {
    if (done_) return;
    done_ = true;
    busy_ = false;
    if (stream_) {
      beast::error_code ec;
      stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
      stream_->close();
      stream_.reset();
    }
    {
      MutexLock lock(client_->mu);
      client_->ops.erase(id_);
    }
    if (cb_.on_done) cb_.on_done(st, received_);
    cb_ = {};
  }

  std::shared_ptr<Client::Impl> client_;
  const uint64_t id_;
  ClientRequest req_;
  ClientCallbacks cb_;
  const std::string key_;
  net::strand<net::io_context::executor_type> strand_;
  std::unique_ptr<beast::tcp_stream> stream_;
  bhttp::request<bhttp::string_body> msg_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  char chunk_[kReadChunk];
  size_t received_ = 0;
  bool reused_ = false, busy_ = false, cancelled_ = false, done_ = false;
};

Client::Client(ClientOptions options) : impl_(std::make_shared<Impl>()) {
  impl_->opt = options;
  for (int i = 0; i < std::max(1, options.io_threads); ++i) {
    impl_->threads.emplace_back([p = impl_.get()] { p->ioc.run(); });
  }
}

Client::~Client() {
  std::vector<std::shared_ptr<ClientOp>> live;
  {
    MutexLock lock(impl_->mu);
    for (auto& [id, w] : impl_->ops) {
      if (auto p = w.lock()) live.push_back(std::move(p));
    }
  }
  for (auto& op : live) op->Cancel();
  live.clear();
  impl_->work.reset();
  // Cancelled operations finish quickly; then the loops run out of work.
  for (auto& t : impl_->threads) t.join();
  MutexLock lock(impl_->mu);
  impl_->idle.clear();
}

uint64_t Client::Send(ClientRequest request, ClientCallbacks callbacks) {
  uint64_t id;
  std::shared_ptr<ClientOp> op;
  {
    MutexLock lock(impl_->mu);
    id = impl_->next_id++;
    op = std::make_shared<ClientOp>(impl_, id, std::move(request), std::move(callbacks));
    impl_->ops[id] = op;
  }
  op->Start();
  return id;
}

void Client::Cancel(uint64_t id) {
  std::shared_ptr<ClientOp> op;
  {
    MutexLock lock(impl_->mu);
    auto it = impl_->ops.find(id);
    if (it != impl_->ops.end()) op = it->second.lock();
  }
  if (op) op->Cancel();
}

StatusOr<ClientResponse> Client::Fetch(ClientRequest request) {
  auto result = std::make_shared<ClientResponse>();
  auto done = std::make_shared<std::promise<Status>>();
  auto fut = done->get_future();
  ClientCallbacks cb;
  cb.on_headers = [result](int status, const Headers& h) {
    result->status = status;
    result->headers = h;
  };
  cb.on_data = [result](std::string_view d) { result->body.append(d); };
  cb.on_done = [done](const Status& st, size_t) { done->set_value(st); };
  Send(std::move(request), std::move(cb));
  Status st = fut.get();
  if (!st.ok()) return st;
  return std::move(*result);
}

void SseParser::Feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  for (char c : bytes) {
    // Lines end with \n, \r or \r\n.
    if (c == '\n' && last_cr_) {
      last_cr_ = false;
      continue;
    }
    last_cr_ = c == '\r';
    if (c != '\n' && c != '\r') {
      line_ += c;
      continue;
    }
    if (line_.empty()) {  // a blank line dispatches the event
      if (has_data_) on_event(current_);
      current_ = {};
      has_data_ = false;
      continue;
    }
    if (line_[0] != ':') {  // ':' starts a comment
      const size_t colon = line_.find(':');
      std::string field = line_.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line_.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      if (field == "data") {
        if (has_data_) current_.data += '\n';
        current_.data += value;
        has_data_ = true;
      } else if (field == "event") {
        current_.event = value;
      } else if (field == "id") {
        current_.id = value;
      }
    }
    line_.clear();
  }
}

}  // namespace frugal::http
