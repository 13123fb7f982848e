// HttpClient: the HTTP requests of httpGet probes and hooks (S7.2, S8.1)
// and of gRPC health probes (S7.1), made by podvisor itself from inside
// the pod's network namespace, non-blocking inside the EventLoop.
//
// Our own client, not libcurl: a request is one HttpConnection (a
// non-blocking socket made in the pod's namespace with SocketInNetns, so
// "127.0.0.1" is the pod's loopback), HTTP/1.1 from http1_wire, TLS from
// OpenSSL and HTTP/2 cleartext for gRPC from nghttp2. libcurl could not be
// linked statically from Debian's packages (its archive needs Kerberos and
// LDAP, which Debian ships as shared libraries only), and it cost the
// supervisor 40 shared libraries; README.md ("Static build") says more.
// No thread per request, and no DNS: hosts are IP addresses or
// "localhost", as a lookup would block the loop.
//
// Redirects follow S7.2: only same-host ones (the kubelet's rule); a
// redirect to another host ends the request with that 3xx response as the
// answer, which the caller reports as a success with a warning, as the
// kubelet does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::probes {

struct HttpRequest {
  std::string scheme = "http";     // "http" or "https" (no certificate verification, S7.2)
  std::string host = "127.0.0.1";  // an IP address or "localhost"
  int port = 0;
  std::string path = "/";
  // Sent as given; a "Host" entry replaces the default one. An empty value
  // is sent as an empty header.
  std::vector<std::pair<std::string, std::string>> headers;
  bool post = false;  // POST `body` instead of GET
  std::string body;
  bool http2_prior_knowledge = false;  // HTTP/2 cleartext (gRPC); else HTTP/1.1
  int max_redirects = 0;               // same-host redirects followed before failing
  // For the whole request, redirects included; zero: none.
  Duration timeout = std::chrono::seconds(1);
  std::string netns;  // "/proc/<pid>/ns/net", or empty for our own
};

struct HttpResponse {
  bool received = false;  // false: no response; `error` says why
  long status = 0;
  int redirects_followed = 0;
  bool redirect_not_followed = false;  // a 3xx to another host is the answer
  std::string body;                    // its first 10 KiB
  // Response headers and HTTP/2 trailers, names lower-cased, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string error;

  // The last value of a header or trailer, or nullptr.
  const std::string* Header(std::string_view lower_name) const;
};

class HttpClient;
class HttpConnection;
struct HttpTarget;

// One request in flight; destroying it cancels it (its callback never runs).
class HttpTransfer {
 public:
  using Done = std::function<void(const HttpResponse&)>;
  ~HttpTransfer();
  HttpTransfer(const HttpTransfer&) = delete;
  HttpTransfer& operator=(const HttpTransfer&) = delete;

 private:
  friend class HttpClient;
  HttpTransfer(HttpClient& client, HttpRequest request, Done done);
  // Opens a connection for `target`; an error is reported from the loop.
  void Begin(const HttpTarget& target);
  void OnResponse(HttpResponse response, const HttpTarget& target);
  void Finish();
  void FailSoon(const std::string& message);

  HttpClient& client_;
  HttpRequest request_;
  Done done_;
  MonoTime deadline_{};
  loop::EventLoop::TimerId deadline_timer_ = 0;
  loop::EventLoop::TimerId fail_timer_ = 0;
  std::unique_ptr<HttpConnection> connection_;
  HttpResponse response_;
};

class HttpClient {
 public:
  // Cheap: nothing is set up until the first request.
  static Result<std::unique_ptr<HttpClient>> Create(loop::EventLoop& loop);
  ~HttpClient() = default;  // its transfers must be gone already
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `request`; `done` runs once, later, from the loop (never from
  // inside Start). Keep the transfer alive until then.
  std::unique_ptr<HttpTransfer> Start(HttpRequest request, HttpTransfer::Done done);

  std::size_t active_transfers() const { return active_; }

 private:
  friend class HttpTransfer;
  explicit HttpClient(loop::EventLoop& loop) : loop_(loop) {}

  loop::EventLoop& loop_;
  std::size_t active_ = 0;  // transfers started and not finished or destroyed
};

}  // namespace podvisor::supervisor::probes
