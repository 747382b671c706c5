#include "cache/redis_client.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>

namespace frugal::cache {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Converts hiredis' reply; an error reply anywhere in it (EXEC carries per-command errors in its
// array) becomes the failed status.
Status Convert(const redisReply* r, RedisReply* out) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out->type = RedisReply::Type::kString;
      out->str.assign(r->str, r->len);
      return Status::Ok();
    case REDIS_REPLY_STATUS:
      out->type = RedisReply::Type::kStatus;
      out->str.assign(r->str, r->len);
      return Status::Ok();
    case REDIS_REPLY_INTEGER:
      out->type = RedisReply::Type::kInteger;
      out->integer = r->integer;
      return Status::Ok();
    case REDIS_REPLY_NIL:
      out->type = RedisReply::Type::kNil;
      return Status::Ok();
    case REDIS_REPLY_ARRAY:
      out->type = RedisReply::Type::kArray;
      out->elements.resize(r->elements);
      for (size_t i = 0; i < r->elements; ++i)
        FRUGAL_RETURN_IF_ERROR(Convert(r->element[i], &out->elements[i]));
      return Status::Ok();
    case REDIS_REPLY_ERROR:
      return Internal("redis: " + std::string(r->str, r->len));
    default:
      return Internal("redis: unexpected reply type " + std::to_string(r->type));
  }
}

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;

// One command in RESP; the buffer is wiped before it is freed (an AUTH carries the password).
std::string Format(const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  args.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  char* cmd = nullptr;
  const int n =
      redisFormatCommandArgv(&cmd, static_cast<int>(args.size()), args.data(), lens.data());
  if (n < 0 || cmd == nullptr) return {};
  std::string out(cmd, static_cast<size_t>(n));
  OPENSSL_cleanse(cmd, static_cast<size_t>(n));
  redisFreeCommand(cmd);
  return out;
}

// The OpenSSL errors queued on this thread, most specific last; the queue is emptied.
std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    char buf[256];
    if (reason == nullptr) {
      ERR_error_string_n(e, buf, sizeof buf);
      reason = buf;
    }
    if (!out.empty()) out += "; ";
    out += reason;
  }
  return out.empty() ? "unknown TLS error" : out;
}

bool IsIpAddress(const std::string& s) {
  in6_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1 || ::inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// Milliseconds until `deadline` for poll(), rounded up, at least 0.
int MsUntil(SteadyClock::time_point deadline) {
  const auto left = deadline - SteadyClock::now();
  if (left <= SteadyClock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

// Waits until fd is ready for `events` or the deadline passes.
bool WaitFor(int fd, short events, SteadyClock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, MsUntil(deadline));
    if (n > 0) return true;  // ready, or an error/hang-up the next call will report
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the I/O call report it
  }
}

// A socket BIO that sends with MSG_NOSIGNAL: a server that closed the connection is an EPIPE
// error, never a SIGPIPE (OpenSSL's own socket BIO uses write(), which raises it).
int SocketBioWrite(BIO* b, const char* buf, int len) {
  BIO_clear_retry_flags(b);
  const int fd = *static_cast<const int*>(BIO_get_data(b));
  const ssize_t n = ::send(fd, buf, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}
int SocketBioRead(BIO* b, char* buf, int len) {
  BIO_clear_retry_flags(b);
  const int fd = *static_cast<const int*>(BIO_get_data(b));
  const ssize_t n = ::recv(fd, buf, static_cast<size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}
long SocketBioCtrl(BIO* /*b*/, int cmd, long /*num*/,
                   void* /*ptr*/) {  // NOLINT(google-runtime-int)
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}
int SocketBioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}
const BIO_METHOD* SocketBioMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "frugal socket");
    BIO_meth_set_write(m, SocketBioWrite);
    BIO_meth_set_read(m, SocketBioRead);
    BIO_meth_set_ctrl(m, SocketBioCtrl);
    BIO_meth_set_create(m, SocketBioCreate);
    return m;
  }();
  return method;
}

// Whether an OpenSSL failure is the server refusing this client's certificate (an alert it sent).
bool IsCertificateAlert(unsigned long e) {  // NOLINT(google-runtime-int)
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return false;
  switch (ERR_GET_REASON(e)) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
      return true;
    default:
      return false;
  }
}

// "%40" -> "@"; false on a malformed escape.
bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    unsigned v = 0;  // unsigned: from_chars takes no sign then
    auto [end, ec] = std::from_chars(in.data() + i + 1, in.data() + i + 3, v, 16);
    if (ec != std::errc() || end != in.data() + i + 3) return false;
    out->push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

}  // namespace

std::string RedisReply::Text() const {
  switch (type) {
    case Type::kString:
    case Type::kStatus:
      return str;
    case Type::kInteger:
      return std::to_string(integer);
    default:
      return "";
  }
}

const RedisReply* RedisReply::Field(std::string_view name) const {
  if (type != Type::kArray) return nullptr;
  for (size_t i = 0; i + 1 < elements.size(); i += 2) {
    if (elements[i].type != Type::kArray && elements[i].Text() == name) return &elements[i + 1];
  }
  return nullptr;
}

std::string RedactRedisAddress(std::string_view address) {
  const size_t scheme = address.find("://");
  const size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
  const size_t at = address.rfind('@');
  if (at == std::string_view::npos || at < from) return std::string(address);
  return std::string(address.substr(0, from)) + "***" + std::string(address.substr(at));
}

StatusOr<RedisOptions> ParseRedisAddress(std::string_view address) {
  RedisOptions o;
  const std::string shown = RedactRedisAddress(address);
  auto refused = [&](const std::string& why) {
    return InvalidArgument("Redis address '" + shown + "': " + why);
  };
  std::string_view a = address;
  bool scheme = false;
  if (a.starts_with("redis://")) {
    a.remove_prefix(8);
    scheme = true;
  } else if (a.starts_with("rediss://")) {
    a.remove_prefix(9);
    scheme = o.tls = true;
  }
  while (a.ends_with('/')) a.remove_suffix(1);
  if (const size_t at = a.rfind('@'); at != std::string_view::npos) {
    if (!scheme) return refused("credentials need the URL form, redis://user:password@host:port");
    const std::string_view userinfo = a.substr(0, at);
    a.remove_prefix(at + 1);
    const size_t colon = userinfo.find(':');
    if (!PercentDecode(userinfo.substr(0, colon), &o.user))
      return refused("a malformed %-escape in the user");
    if (colon != std::string_view::npos &&
        !PercentDecode(userinfo.substr(colon + 1), &o.password)) {
      o.password.clear();
      return refused("a malformed %-escape in the password");
    }
  }
  if (a.empty() || a.find_first_of("/?#@") != std::string_view::npos) {
    return refused(
        "expected host:port, redis://[user:password@]host:port or rediss://... (no database, "
        "no options)");
  }
  const size_t colon = a.rfind(':');
  if (colon == std::string_view::npos) {
    o.host = std::string(a);
    return o;
  }
  o.host = std::string(a.substr(0, colon));
  const std::string_view port = a.substr(colon + 1);
  int p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (o.host.empty() || ec != std::errc() || end != port.data() + port.size() || p < 1 ||
      p > 65535) {
    return refused("expected host:port with a port in 1..65535");
  }
  o.port = p;
  return o;
}

// The OpenSSL client context: the CA to verify the server with, the client certificate.
struct RedisClient::Tls {
  SSL_CTX* ctx = nullptr;
  ~Tls() { SSL_CTX_free(ctx); }
};

namespace {

Status CheckReadable(const char* what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return InvalidArgument(std::string("Redis TLS: cannot read the ") + what + " '" + path +
                           "': " + std::strerror(errno));
  std::fclose(f);
  return Status::Ok();
}

// No passphrase prompt on the terminal for an encrypted key: it is refused instead.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

// Called by OpenSSL when the server asks for a client certificate and none is configured: noted
// on the connection (its app data), and the handshake goes on without one. With TLS 1.3 a
// server that requires one drops the connection after the handshake, often without an alert
// that arrives (a reset): the note turns that into a refusal instead of an outage.
int NoteCertificateRequest(SSL* ssl, X509** /*cert*/, EVP_PKEY** /*key*/) {
  if (auto* asked = static_cast<bool*>(SSL_get_app_data(ssl))) *asked = true;
  return 0;
}

}  // namespace

// A connection: a non-blocking socket, TLS over it when configured, and the reply parser. Every
// wait is a poll() with a deadline.
class RedisClient::Connection {
 public:
  Connection() = default;
  ~Connection() {
    if (ssl_ != nullptr) {
      // close_notify, without waiting for the server's; not after a fatal error (OpenSSL's rule).
      if (!ssl_failed_ && SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
      ERR_clear_error();
      SSL_free(ssl_);
    }
    if (fd_ >= 0) ::close(fd_);
    if (reader_ != nullptr) redisReaderFree(reader_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // TCP, then the TLS handshake (when tls != null), both before `deadline`. A failure is
  // IoError, except a certificate that fails verification (InvalidArgument).
  Status Open(const RedisOptions& o, const Tls* tls, const std::string& where,
              SteadyClock::time_point deadline) {
    reader_ = redisReaderCreate();
    if (reader_ == nullptr) return Internal("out of memory");
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(o.port);
    if (const int rc = ::getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found); rc != 0)
      return IoError("Redis at " + where + ": " + ::gai_strerror(rc));
    std::string why = "no address";
    for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
      const int fd =
          ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        why = std::strerror(errno);
        continue;
      }
      int err = 0;
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
          if (!WaitFor(fd, POLLOUT, deadline)) {
            err = ETIMEDOUT;
          } else {
            socklen_t len = sizeof err;
            if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
          }
        }
      }
      if (err != 0) {
        why = err == ETIMEDOUT ? "Connection timed out" : std::strerror(err);
        ::close(fd);
        continue;
      }
      fd_ = fd;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) return IoError("Redis at " + where + ": " + why);
    const int one = 1;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    if (tls == nullptr) return Status::Ok();
    return Handshake(o, *tls, where, deadline);
  }

  // Sends all of `data`; each wait for the socket at most `timeout`.
  Status Write(std::string_view data, std::chrono::milliseconds timeout, const std::string& where) {
    return Refusal(DoWrite(data, timeout, where), where);
  }
  // The next reply; each wait for bytes at most `timeout`.
  StatusOr<ReplyPtr> Read(std::chrono::milliseconds timeout, const std::string& where) {
    auto r = DoRead(timeout, where);
    if (r.ok()) return r;
    return Refusal(r.status(), where);
  }

  // Whether the last failure was the server closing the connection (EOF, reset, broken pipe):
  // what a pooled connection to a restarted Redis sees first.
  bool eof() const { return eof_; }

 private:
  // A server that asked for a client certificate (none is configured) and then closed the
  // connection before its first reply has refused this client.
  Status Refusal(const Status& st, const std::string& where) const {
    if (st.ok() || !certificate_asked_ || answered_ || !eof_) return st;
    std::string why = st.message();
    if (const std::string own = "Redis at " + where + ": "; why.starts_with(own))
      why.erase(0, own.size());
    return InvalidArgument("Redis at " + where +
                           " refused this client: it asks for a TLS client certificate and none "
                           "is configured (" +
                           why + ")");
  }

  Status DoWrite(std::string_view data, std::chrono::milliseconds timeout,
                 const std::string& where) {
    size_t off = 0;
    while (off < data.size()) {
      const size_t chunk = std::min<size_t>(data.size() - off, INT_MAX);
      short wait = 0;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int n = SSL_write(ssl_, data.data() + off, static_cast<int>(chunk));
        if (n > 0) {
          off += static_cast<size_t>(n);
          continue;
        }
        FRUGAL_ASSIGN_OR_RETURN(wait, SslWait(n, where));
      } else {
        const ssize_t n = ::send(fd_, data.data() + off, chunk, MSG_NOSIGNAL);
        if (n >= 0) {
          off += static_cast<size_t>(n);
          continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return SocketError(errno, where);
        wait = POLLOUT;
      }
      if (!WaitFor(fd_, wait, SteadyClock::now() + timeout))
        return IoError("Redis at " + where + ": timed out sending a command");
    }
    return Status::Ok();
  }

  StatusOr<ReplyPtr> DoRead(std::chrono::milliseconds timeout, const std::string& where) {
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
        return IoError("Redis at " + where + ": protocol error (" + std::string(reader_->errstr) +
                       ")");
      }
      if (raw != nullptr) {
        answered_ = true;
        return ReplyPtr(static_cast<redisReply*>(raw));
      }
      char buf[16 * 1024];
      short wait = 0;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int n = SSL_read(ssl_, buf, sizeof buf);
        if (n > 0) {
          redisReaderFeed(reader_, buf, static_cast<size_t>(n));
          continue;
        }
        FRUGAL_ASSIGN_OR_RETURN(wait, SslWait(n, where));
      } else {
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
          redisReaderFeed(reader_, buf, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) {
          eof_ = true;
          return IoError("Redis at " + where + ": Server closed the connection");
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return SocketError(errno, where);
        wait = POLLIN;
      }
      if (!WaitFor(fd_, wait, SteadyClock::now() + timeout))
        return IoError("Redis at " + where + ": timed out waiting for a reply");
    }
  }

  Status Handshake(const RedisOptions& o, const Tls& tls, const std::string& where,
                   SteadyClock::time_point deadline) {
    ssl_ = SSL_new(tls.ctx);
    BIO* bio = ssl_ != nullptr ? BIO_new(SocketBioMethod()) : nullptr;
    if (bio == nullptr) return Internal("Redis TLS: " + OpenSslErrors());
    BIO_set_data(bio, &fd_);  // the connection outlives its SSL and BIO
    SSL_set_bio(ssl_, bio, bio);
    SSL_set_app_data(ssl_, &certificate_asked_);
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const std::string& name = o.tls_server_name.empty() ? o.host : o.tls_server_name;
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const bool ip = IsIpAddress(name);
    // SNI carries host names only (RFC 6066); an address is checked against the IP SANs.
    if (!ip && SSL_set_tlsext_host_name(ssl_, name.c_str()) != 1)
      return InvalidArgument("Redis TLS: bad server name '" + name + "'");
    if ((ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
            : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size())) != 1) {
      return InvalidArgument("Redis TLS: bad server name '" + name + "'");
    }
    SSL_set_verify(ssl_, SSL_VERIFY_PEER, nullptr);
    for (;;) {
      ERR_clear_error();
      const int n = SSL_connect(ssl_);
      if (n == 1) return Status::Ok();
      const long verify = SSL_get_verify_result(ssl_);  // NOLINT(google-runtime-int)
      if (verify != X509_V_OK) {
        ERR_clear_error();
        return InvalidArgument("Redis at " + where + ": the server's TLS certificate failed " +
                               "verification for '" + name +
                               "': " + X509_verify_cert_error_string(verify));
      }
      FRUGAL_ASSIGN_OR_RETURN(const short wait, SslWait(n, where, "TLS handshake failed"));
      if (!WaitFor(fd_, wait, deadline))
        return IoError("Redis at " + where + ": TLS handshake timed out");
    }
  }

  // After an SSL call returned n <= 0: the event to wait for, or the failure.
  StatusOr<short> SslWait(int n, const std::string& where, const char* what = "TLS error") {
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_SSL) ssl_failed_ = true;
    switch (err) {
      case SSL_ERROR_WANT_READ:
        return static_cast<short>(POLLIN);
      case SSL_ERROR_WANT_WRITE:
        return static_cast<short>(POLLOUT);
      case SSL_ERROR_ZERO_RETURN:
        eof_ = true;
        return IoError("Redis at " + where + ": Server closed the connection");
      case SSL_ERROR_SYSCALL: {
        const int e = errno;
        if (ERR_peek_error() == 0) {
          eof_ = true;
          if (e == 0 || n == 0)
            return IoError("Redis at " + where + ": Server closed the connection");
          return SocketError(e, where);
        }
        break;
      }
      default:
        break;
    }
    const unsigned long e = ERR_peek_last_error();  // NOLINT(google-runtime-int)
    if (IsCertificateAlert(e)) {
      return InvalidArgument("Redis at " + where +
                             (certificate_asked_
                                  ? " refused this client: it asks for a TLS client certificate "
                                    "and none is configured: "
                                  : " refused this client's TLS certificate: ") +
                             OpenSslErrors());
    }
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
      eof_ = true;
    return IoError("Redis at " + where + ": " + what + ": " + OpenSslErrors());
  }

  Status SocketError(int err, const std::string& where) {
    if (err == EPIPE || err == ECONNRESET) eof_ = true;
    return IoError("Redis at " + where + ": " + std::strerror(err));
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  redisReader* reader_ = nullptr;
  bool eof_ = false;
  bool ssl_failed_ = false;         // a fatal TLS error: no close_notify then
  bool certificate_asked_ = false;  // the server asked for a client certificate we do not have
  bool answered_ = false;           // a reply came on this connection
};

RedisClient::RedisClient(RedisOptions options) : opt_(std::move(options)) {
  if (!opt_.tls) return;
  setup_ = [this]() -> Status {
    if (opt_.tls_cert_file.empty() != opt_.tls_key_file.empty())
      return InvalidArgument("Redis TLS: a client certificate needs both its cert and key files");
    auto tls = std::make_unique<Tls>();
    ERR_clear_error();
    tls->ctx = SSL_CTX_new(TLS_client_method());
    if (tls->ctx == nullptr) return Internal("Redis TLS: " + OpenSslErrors());
    SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(tls->ctx, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_default_passwd_cb(tls->ctx, NoPassphrase);
    SSL_CTX_set_client_cert_cb(tls->ctx, NoteCertificateRequest);
    if (!opt_.tls_ca_file.empty()) {
      FRUGAL_RETURN_IF_ERROR(CheckReadable("CA file", opt_.tls_ca_file));
      if (SSL_CTX_load_verify_locations(tls->ctx, opt_.tls_ca_file.c_str(), nullptr) != 1) {
        return InvalidArgument("Redis TLS: the CA file '" + opt_.tls_ca_file +
                               "' holds no usable certificate: " + OpenSslErrors());
      }
    } else if (SSL_CTX_set_default_verify_paths(tls->ctx) != 1) {
      return InvalidArgument("Redis TLS: the system's CA store cannot be read: " + OpenSslErrors());
    }
    if (!opt_.tls_cert_file.empty()) {
      FRUGAL_RETURN_IF_ERROR(CheckReadable("certificate file", opt_.tls_cert_file));
      FRUGAL_RETURN_IF_ERROR(CheckReadable("key file", opt_.tls_key_file));
      if (SSL_CTX_use_certificate_chain_file(tls->ctx, opt_.tls_cert_file.c_str()) != 1) {
        return InvalidArgument("Redis TLS: the certificate file '" + opt_.tls_cert_file +
                               "' cannot be used: " + OpenSslErrors());
      }
      if (SSL_CTX_use_PrivateKey_file(tls->ctx, opt_.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
          SSL_CTX_check_private_key(tls->ctx) != 1) {
        return InvalidArgument(
            "Redis TLS: the key file '" + opt_.tls_key_file +
            "' cannot be used (an unencrypted PEM key of the certificate): " + OpenSslErrors());
      }
    }
    tls_ = std::move(tls);
    return Status::Ok();
  }();
}

RedisClient::~RedisClient() = default;

void RedisClient::MarkDown(const Status& why) {
  const bool refused = why.code() == StatusCode::kInvalidArgument;
  {
    MutexLock lock(mu_);
    down_until_ = SteadyClock::now() + opt_.retry_after;
    down_why_ = why;
  }
  const int to = refused ? kRefused : kUnreachable;
  if (state_.exchange(to) == to) return;
  if (refused) {
    std::fprintf(stderr, "frugal: %s; the cache misses until that is fixed\n",
                 why.message().c_str());
  } else {
    std::string text = why.message();
    if (const std::string own = "Redis at " + address() + ": "; text.starts_with(own))
      text.erase(0, own.size());
    std::fprintf(stderr,
                 "frugal: Redis at %s unreachable (%s); the cache misses until it is back\n",
                 address().c_str(), text.c_str());
  }
}

void RedisClient::MarkUp() {
  if (state_.exchange(kUp) != kUp)
    std::fprintf(stderr, "frugal: Redis at %s reachable again\n", address().c_str());
}

StatusOr<std::unique_ptr<RedisClient::Connection>> RedisClient::Take(bool* reused) {
  FRUGAL_RETURN_IF_ERROR(setup_);
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      *reused = true;
      return c;
    }
    *reused = false;
    if (SteadyClock::now() < down_until_) {
      if (down_why_.code() == StatusCode::kInvalidArgument) return down_why_;
      return IoError("Redis at " + address() + " is unreachable (retrying shortly)");
    }
  }
  auto c = Connect();
  if (!c.ok()) MarkDown(c.status());
  return c;
}

StatusOr<std::unique_ptr<RedisClient::Connection>> RedisClient::Connect() {
  const std::string where = address();
  auto c = std::make_unique<Connection>();
  FRUGAL_RETURN_IF_ERROR(
      c->Open(opt_, tls_.get(), where, SteadyClock::now() + opt_.connect_timeout));
  if (opt_.password.empty()) return c;
  std::vector<std::string> auth = {"AUTH"};
  if (!opt_.user.empty()) auth.push_back(opt_.user);
  auth.push_back(opt_.password);
  std::string cmd = Format(auth);
  Status sent = c->Write(cmd, opt_.command_timeout, where);
  OPENSSL_cleanse(cmd.data(), cmd.size());
  FRUGAL_RETURN_IF_ERROR(sent);
  FRUGAL_ASSIGN_OR_RETURN(ReplyPtr reply, c->Read(opt_.command_timeout, where));
  if (reply->type == REDIS_REPLY_ERROR) {
    // Redis's text (WRONGPASS ..., ERR AUTH ... without any password configured) never holds
    // the password; it is taken out anyway, should a server echo it.
    std::string text(reply->str, reply->len);
    for (size_t at; !opt_.password.empty() && (at = text.find(opt_.password)) != std::string::npos;)
      text.replace(at, opt_.password.size(), "***");
    return InvalidArgument("Redis at " + where + " refused the credentials" +
                           (opt_.user.empty() ? "" : " of user '" + opt_.user + "'") + ": " + text);
  }
  return c;
}

void RedisClient::Give(std::unique_ptr<Connection> c, bool broken) {
  if (!broken) {
    MutexLock lock(mu_);
    if (idle_.size() < opt_.max_idle) {
      idle_.push_back(std::move(c));
      return;
    }
  }
  c.reset();
}

StatusOr<RedisReply> RedisClient::Command(const std::vector<std::string>& argv) {
  FRUGAL_ASSIGN_OR_RETURN(std::vector<RedisReply> r, Pipeline({argv}));
  return std::move(r.front());
}

StatusOr<std::vector<RedisReply>> RedisClient::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return std::vector<RedisReply>{};
  bool stale = false;
  auto r = Send(commands, &stale);
  if (stale) {
    // A pooled connection the server had closed (a Redis restart): the command never ran; the
    // other pooled ones are stale too.
    std::vector<std::unique_ptr<Connection>> old;
    {
      MutexLock lock(mu_);
      old.swap(idle_);
    }
    old.clear();
    r = Send(commands, &stale);
  }
  return r;
}

StatusOr<std::vector<RedisReply>> RedisClient::Send(
    const std::vector<std::vector<std::string>>& commands, bool* stale) {
  *stale = false;
  bool reused = false;
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Connection> c, Take(&reused));
  const std::string where = address();
  std::string out;
  for (const auto& argv : commands) {
    std::string cmd = Format(argv);
    if (cmd.empty()) {
      Give(std::move(c), false);
      return InvalidArgument("redis: a command could not be encoded");
    }
    out += cmd;
  }
  // A failure to send or receive: this connection's stream is out of step, drop it.
  auto broke = [&](const Status& st, bool first) -> Status {
    const bool eof = c->eof();
    Give(std::move(c), true);
    if (reused && eof && first) {
      *stale = true;
      return st;
    }
    MarkDown(st);
    return st;
  };
  if (Status st = c->Write(out, opt_.command_timeout, where); !st.ok()) return broke(st, true);
  std::vector<RedisReply> replies(commands.size());
  Status first_error = Status::Ok();
  for (size_t i = 0; i < commands.size(); ++i) {
    auto raw = c->Read(opt_.command_timeout, where);
    if (!raw.ok()) return broke(raw.status(), i == 0);
    const redisReply* r = raw->get();
    if (r->type == REDIS_REPLY_ERROR && std::string_view(r->str, r->len).starts_with("NOAUTH")) {
      // The server wants a password this client did not give (or a restarted server lost the
      // ACL user): a refusal, not an error of this command.
      Status why = InvalidArgument("Redis at " + where +
                                   " refused this client: " + std::string(r->str, r->len) +
                                   (opt_.password.empty() ? " (no password is configured)" : ""));
      Give(std::move(c), true);
      MarkDown(why);
      return why;
    }
    Status st = Convert(r, &replies[i]);
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  Give(std::move(c), false);
  MarkUp();
  if (!first_error.ok()) return first_error;
  return replies;
}

}  // namespace frugal::cache
