// HttpClient: the HTTP requests of httpGet probes and hooks (S7.2, S8.1)
// and of gRPC health probes (S7.1), made by podvisor itself from inside
// the pod's network namespace, non-blocking inside the EventLoop.
//
// It drives libcurl's multi interface from the loop: curl tells us which
// sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake it
// (CURLMOPT_TIMERFUNCTION); every socket is created in the pod's network
// namespace (CURLOPT_OPENSOCKETFUNCTION with SocketInNetns), so
// "127.0.0.1" is the pod's loopback. No thread per request, and no DNS:
// hosts are IP addresses or "localhost", as a lookup would block or need
// curl's resolver thread.
//
// Redirects are followed here, not by curl, because S7.2 follows only
// same-host ones (the kubelet's rule): a redirect to another host ends the
// request with that 3xx response as the answer, which the caller reports
// as a success with a warning, as the kubelet does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "supervisor/loop/event_loop.h"

struct curl_slist;

namespace podvisor::supervisor {

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
  Status Begin(const std::string& url);
  void OnCurlDone(int curl_code);
  void Finish();
  void FailSoon(const std::string& message);

  HttpClient& client_;
  HttpRequest request_;
  Done done_;
  void* easy_ = nullptr;  // CURL*
  curl_slist* header_list_ = nullptr;
  bool in_multi_ = false;
  MonoTime deadline_{};
  EventLoop::TimerId fail_timer_ = 0;
  HttpResponse response_;
  std::string socket_error_;  // why our open-socket callback failed
  char error_buffer_[256] = {};

  friend struct CurlCallbacks;  // curl's C callbacks, in http_client.cc
};

class HttpClient {
 public:
  static Result<std::unique_ptr<HttpClient>> Create(EventLoop& loop);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `request`; `done` runs once, later, from the loop (never from
  // inside Start). Keep the transfer alive until then.
  std::unique_ptr<HttpTransfer> Start(HttpRequest request, HttpTransfer::Done done);

  std::size_t active_transfers() const { return active_.size(); }

 private:
  friend class HttpTransfer;
  HttpClient(EventLoop& loop, void* multi) : loop_(loop), multi_(multi) {}
  void OnSocketReady(int fd, uint32_t epoll_events);
  void OnTimeout();
  void OnTimerRequest(long timeout_ms);
  void ProcessCompleted();
  // Easy handles are reused: curl_easy_init and cleanup are a good part of
  // a probe's cost, and a pod probes every second.
  void* AcquireEasy();
  void ReleaseEasy(void* easy);

  friend struct CurlCallbacks;

  EventLoop& loop_;
  void* multi_;                   // CURLM*
  std::vector<void*> idle_easy_;  // CURL*, reset, not in the multi handle
  EventLoop::TimerId timer_ = 0;
  std::unordered_map<void*, HttpTransfer*> active_;  // by CURL*, in the multi handle
};

}  // namespace podvisor::supervisor
