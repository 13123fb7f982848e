#include "supervisor/probes/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "supervisor/probes/http2_exchange.h"
#include "supervisor/probes/net_check.h"

namespace podvisor::supervisor::probes {
namespace {

class Http1Exchange final : public HttpExchange {
 public:
  Http1Exchange(const HttpRequest& request, const HttpTarget& target)
      : request_(FormatHttp1Request(request, target)) {}
  Status Produce(std::string& out) override {
    out.append(request_);
    request_.clear();
    return Ok();
  }
  Status Consume(std::string_view in) override { return parser_.Feed(in); }
  Status PeerClosed() override { return parser_.Eof(); }
  bool done() const override { return parser_.done(); }
  HttpResponse TakeResponse() override { return std::move(parser_.response()); }

 private:
  std::string request_;
  Http1ResponseParser parser_;
};

// The one TLS client context, made on the first HTTPS request and kept:
// making one loads OpenSSL's ciphers and costs more than a handshake.
Result<SSL_CTX*> ClientContext() {
  static SSL_CTX* context = nullptr;
  if (context) return context;
  // No openssl.cnf: a VM image or pod sandbox may have none, and nothing
  // in it applies to a prober that verifies nothing.
  if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr) != 1) {
    return Error("OpenSSL cannot be initialised");
  }
  SSL_CTX* made = SSL_CTX_new(TLS_client_method());
  if (!made) return Error("OpenSSL: cannot make a TLS context");
  // S7.2: the kubelet's prober skips certificate verification.
  SSL_CTX_set_verify(made, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_mode(made, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  context = made;
  return context;
}

std::string TlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace

std::unique_ptr<HttpExchange> MakeHttp1Exchange(const HttpRequest& request,
                                                const HttpTarget& target) {
  return std::make_unique<Http1Exchange>(request, target);
}

HttpConnection::HttpConnection(loop::EventLoop& loop, std::unique_ptr<HttpExchange> exchange,
                               bool tls, Done done)
    : loop_(loop), exchange_(std::move(exchange)), tls_(tls), done_(std::move(done)) {}

HttpConnection::~HttpConnection() {
  if (watched_) loop_.Remove(fd_.get());
  if (ssl_) SSL_free(ssl_);
}

Result<std::unique_ptr<HttpConnection>> HttpConnection::Open(loop::EventLoop& loop,
                                                             const HttpRequest& request,
                                                             const HttpTarget& target, Done done) {
  std::unique_ptr<HttpExchange> exchange;
  if (request.http2_prior_knowledge) {
    auto h2 = MakeHttp2Exchange(request, target);
    if (!h2) return h2.take_error();
    exchange = std::move(*h2);
  } else {
    exchange = MakeHttp1Exchange(request, target);
  }
  bool tls = target.scheme == "https";
  std::unique_ptr<HttpConnection> c(
      new HttpConnection(loop, std::move(exchange), tls, std::move(done)));
  c->peer_ = target.Authority();

  sockaddr_storage address{};
  socklen_t address_len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (::inet_pton(AF_INET, target.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(target.port));
    address_len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, target.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(target.port));
    address_len = sizeof *v6;
  } else {
    return Error("host " + target.host + " is not an IP address");
  }
  auto fd = SocketInNetns(request.netns, address.ss_family, SOCK_STREAM);
  if (!fd) return fd.take_error();
  c->fd_ = std::move(*fd);
  if (::connect(c->fd_.get(), reinterpret_cast<sockaddr*>(&address), address_len) != 0 &&
      errno != EINPROGRESS) {
    return Error::FromErrno("connect " + c->peer_);
  }
  if (tls) {
    auto context = ClientContext();
    if (!context) return context.take_error();
    c->ssl_ = SSL_new(*context);
    if (!c->ssl_ || SSL_set_fd(c->ssl_, c->fd_.get()) != 1) {
      return Error("OpenSSL: cannot make a TLS session: " + TlsErrors());
    }
    SSL_set_connect_state(c->ssl_);
  }
  // Writable: the connect has ended, one way or the other.
  if (auto s =
          loop.Add(c->fd_.get(), EPOLLOUT, [raw = c.get()](uint32_t ev) { raw->OnEvents(ev); });
      !s) {
    return s.take_error();
  }
  c->watched_ = EPOLLOUT;
  return c;
}

void HttpConnection::Watch(uint32_t events) {
  if (events == watched_) return;
  if (auto s = loop_.Modify(fd_.get(), events); !s) {
    Fail(s.error().message());
    return;
  }
  watched_ = events;
}

void HttpConnection::Fail(const std::string& message) {
  if (finished_) return;
  finished_ = true;
  HttpResponse failed;
  failed.error = message;
  Done done = std::move(done_);
  done(std::move(failed));  // may destroy this object
}

void HttpConnection::OnEvents(uint32_t) {
  if (finished_) return;
  if (auto s = Advance(); !s) Fail(s.error().message());
}

Status HttpConnection::Advance() {
  if (state_ == State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return Error::FromErrno("connect " + peer_, err);
    state_ = tls_ ? State::kHandshake : State::kExchange;
  }
  if (state_ == State::kHandshake) {
    ERR_clear_error();
    int ret = SSL_do_handshake(ssl_);
    if (ret != 1) {
      auto r = TlsResult(ret, "TLS handshake");
      if (!r) return r.take_error();
      if (*r == 0)
        return Error("TLS handshake with " + peer_ + ": the server closed the connection");
      Watch(want_);
      return Ok();
    }
    state_ = State::kExchange;
  }
  return Exchange();
}

Status HttpConnection::Exchange() {
  char buf[16 * 1024];
  for (;;) {
    if (auto s = exchange_->Produce(out_); !s) return s;
    while (!out_.empty()) {
      auto sent = Send(out_);
      if (!sent) return sent.take_error();
      if (*sent < 0) break;
      out_.erase(0, static_cast<std::size_t>(*sent));
    }
    if (!out_.empty() && want_ == EPOLLOUT) {
      Watch(EPOLLOUT);
      return Ok();
    }
    auto got = Receive(buf, sizeof buf);
    if (!got) return got.take_error();
    if (*got < 0) {
      Watch(want_ | (out_.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT)));
      return Ok();
    }
    Status s = *got == 0
                   ? exchange_->PeerClosed()
                   : exchange_->Consume(std::string_view(buf, static_cast<std::size_t>(*got)));
    if (!s) return s;
    if (exchange_->done()) {
      finished_ = true;
      HttpResponse response = exchange_->TakeResponse();
      response.received = true;
      Done done = std::move(done_);
      done(std::move(response));  // may destroy this object
      return Ok();
    }
    if (*got == 0) return Error("the connection to " + peer_ + " ended early");
  }
}

Result<long> HttpConnection::TlsResult(int ret, const char* what) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      want_ = EPOLLIN;
      return -1L;
    case SSL_ERROR_WANT_WRITE:
      want_ = EPOLLOUT;
      return -1L;
    case SSL_ERROR_ZERO_RETURN:
      return 0L;
    case SSL_ERROR_SYSCALL:
      if (errno != 0 && ret < 0) return Error::FromErrno(std::string(what) + " with " + peer_);
      // An end without close_notify: HTTP/1.1 servers often just close.
      return 0L;
    default:
      return Error(std::string(what) + " with " + peer_ + ": " + TlsErrors());
  }
}

Result<long> HttpConnection::Send(std::string_view data) {
  if (ssl_) {
    ERR_clear_error();
    errno = 0;
    int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
    if (n > 0) return static_cast<long>(n);
    auto r = TlsResult(n, "TLS write");
    if (r && *r == 0) return Error("the connection to " + peer_ + " was closed");
    return r;
  }
  ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
  if (n >= 0) return static_cast<long>(n);
  if (errno == EAGAIN || errno == EINTR) {
    want_ = EPOLLOUT;
    return -1L;
  }
  return Error::FromErrno("send to " + peer_);
}

Result<long> HttpConnection::Receive(char* buf, std::size_t size) {
  if (ssl_) {
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(ssl_, buf, static_cast<int>(size));
    if (n > 0) return static_cast<long>(n);
    return TlsResult(n, "TLS read");
  }
  ssize_t n = ::recv(fd_.get(), buf, size, 0);
  if (n >= 0) return static_cast<long>(n);
  if (errno == EAGAIN || errno == EINTR) {
    want_ = EPOLLIN;
    return -1L;
  }
  return Error::FromErrno("recv from " + peer_);
}

}  // namespace podvisor::supervisor::probes
