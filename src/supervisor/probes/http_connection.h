// HttpConnection: one request over one new connection, driven by the
// EventLoop: a non-blocking connect from a socket made in the pod's
// network namespace, TLS when the scheme is HTTPS, then an exchange that
// turns the request into bytes and the bytes read back into a response
// (HTTP/1.1 in http1_wire, HTTP/2 cleartext in http2_exchange).
//
// TLS does what the kubelet's prober does (S7.2): no certificate or host
// name verification. The OpenSSL context is made on the first HTTPS
// request, never before: a pod without HTTPS probes or hooks never
// initialises OpenSSL's TLS code.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/probes/http1_wire.h"
#include "supervisor/probes/http_client.h"

struct ssl_st;

namespace podvisor::supervisor::probes {

// The protocol spoken once the connection is up.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // Appends what is to be sent now (possibly nothing).
  virtual Status Produce(std::string& out) = 0;
  virtual Status Consume(std::string_view in) = 0;
  virtual Status PeerClosed() = 0;
  virtual bool done() const = 0;
  virtual HttpResponse TakeResponse() = 0;
};

std::unique_ptr<HttpExchange> MakeHttp1Exchange(const HttpRequest& request,
                                                const HttpTarget& target);

class HttpConnection {
 public:
  // Runs once, from the loop, with a response or (received false) why not.
  using Done = std::function<void(HttpResponse)>;
  // Errors before anything is in flight (no socket, no route) are
  // returned; the caller reports them.
  static Result<std::unique_ptr<HttpConnection>> Open(loop::EventLoop& loop,
                                                      const HttpRequest& request,
                                                      const HttpTarget& target, Done done);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

 private:
  enum class State { kConnecting, kHandshake, kExchange };
  HttpConnection(loop::EventLoop& loop, std::unique_ptr<HttpExchange> exchange, bool tls,
                 Done done);
  void OnEvents(uint32_t events);
  // Moves the state machine as far as the socket allows; an error ends it.
  Status Advance();
  Status Exchange();
  // Plain or TLS I/O: bytes moved, 0 at the peer's end, -1 when the socket
  // would block (want_ says for what), or an error.
  Result<long> Send(std::string_view data);
  Result<long> Receive(char* buf, std::size_t size);
  Result<long> TlsResult(int ret, const char* what);
  void Watch(uint32_t events);
  void Fail(const std::string& message);

  loop::EventLoop& loop_;
  Fd fd_;
  std::string peer_;  // "127.0.0.1:8080", for messages
  std::unique_ptr<HttpExchange> exchange_;
  bool tls_;
  ssl_st* ssl_ = nullptr;
  State state_ = State::kConnecting;
  uint32_t watched_ = 0;
  uint32_t want_ = 0;  // what a blocked TLS call waits for
  std::string out_;    // produced, not yet sent
  bool finished_ = false;
  Done done_;
};

}  // namespace podvisor::supervisor::probes
