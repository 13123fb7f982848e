#include "supervisor/probes/http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>

#include "supervisor/probes/net_check.h"

namespace podvisor::supervisor {
namespace {

constexpr std::size_t kBodyMax = 10 * 1024;  // what a probe keeps for its message

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

// The host as it appears in a URL: IPv6 addresses in brackets. Names other
// than "localhost" are refused: resolving them would block the loop.
Result<std::string> UrlHost(const std::string& host) {
  std::string h = host.empty() || host == "localhost" ? "127.0.0.1" : host;
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return h;
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) return "[" + h + "]";
  return Error("host " + host + " is not an IP address");
}

// The host part of an absolute URL, or "" when it does not parse.
std::string HostOf(const char* url) {
  CURLU* u = curl_url();
  if (!u) return "";
  std::string host;
  char* part = nullptr;
  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &part, 0) == CURLUE_OK) {
    host = part;
    curl_free(part);
  }
  curl_url_cleanup(u);
  return Lower(host);
}

std::string SchemeOf(const char* url) {
  std::string_view s(url);
  std::size_t colon = s.find("://");
  return colon == std::string_view::npos ? "" : Lower(std::string(s.substr(0, colon)));
}

long MillisecondsUntil(MonoTime deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<long>(std::max<int64_t>(1, left.count()));
}

}  // namespace

// curl's C callbacks, forwarding to the objects they were registered for.
struct CurlCallbacks {
  static int Socket(CURL*, curl_socket_t fd, int what, void* client, void*) {
    auto* self = static_cast<HttpClient*>(client);
    if (what == CURL_POLL_REMOVE) {
      self->loop_.Remove(fd);
      return 0;
    }
    uint32_t events =
        ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    Status s = self->loop_.Watching(fd) ? self->loop_.Modify(fd, events)
                                        : self->loop_.Add(fd, events, [self, fd](uint32_t got) {
                                            self->OnSocketReady(fd, got);
                                          });
    return s ? 0 : -1;
  }

  static int Timer(CURLM*, long timeout_ms, void* client) {
    static_cast<HttpClient*>(client)->OnTimerRequest(timeout_ms);
    return 0;
  }

  static curl_socket_t OpenSocket(void* client, curlsocktype, curl_sockaddr* address) {
    auto* transfer = static_cast<HttpTransfer*>(client);
    auto fd = SocketInNetns(transfer->request_.netns, address->family, address->socktype);
    if (!fd) {
      transfer->socket_error_ = fd.error().message();
      return CURL_SOCKET_BAD;
    }
    return fd->Release();
  }

  static std::size_t Body(char* data, std::size_t size, std::size_t n, void* client) {
    auto* transfer = static_cast<HttpTransfer*>(client);
    std::string& body = transfer->response_.body;
    std::size_t bytes = size * n;
    if (body.size() < kBodyMax) body.append(data, std::min(bytes, kBodyMax - body.size()));
    return bytes;  // the rest is read and dropped
  }

  // Header lines of the response, and with HTTP/2 its trailers as well.
  static std::size_t Header(char* data, std::size_t size, std::size_t n, void* client) {
    auto* transfer = static_cast<HttpTransfer*>(client);
    std::size_t bytes = size * n;
    std::string_view line(data, bytes);
    std::size_t colon = line.find(':');
    if (line.rfind("HTTP/", 0) != 0 && colon != std::string_view::npos && colon > 0) {
      transfer->response_.headers.emplace_back(Lower(std::string(line.substr(0, colon))),
                                               Trim(line.substr(colon + 1)));
    }
    return bytes;
  }
};

const std::string* HttpResponse::Header(std::string_view lower_name) const {
  const std::string* found = nullptr;
  for (const auto& [name, value] : headers) {
    if (name == lower_name) found = &value;
  }
  return found;
}

// ---- HttpClient --------------------------------------------------------

Result<std::unique_ptr<HttpClient>> HttpClient::Create(EventLoop& loop) {
  // podvisor is single-threaded, so the unsynchronized global init is safe.
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (global != CURLE_OK)
    return Error(std::string("curl_global_init: ") + curl_easy_strerror(global));
  CURLM* multi = curl_multi_init();
  if (!multi) return Error("curl_multi_init failed");
  std::unique_ptr<HttpClient> client(new HttpClient(loop, multi));
  curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &CurlCallbacks::Socket);
  curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, client.get());
  curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &CurlCallbacks::Timer);
  curl_multi_setopt(multi, CURLMOPT_TIMERDATA, client.get());
  return client;
}

HttpClient::~HttpClient() {
  // Transfers hold a reference to us: their owners must be gone already.
  if (timer_) loop_.CancelTimer(timer_);
  for (void* easy : idle_easy_) curl_easy_cleanup(easy);
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

void* HttpClient::AcquireEasy() {
  if (idle_easy_.empty()) return curl_easy_init();
  void* easy = idle_easy_.back();
  idle_easy_.pop_back();
  return easy;
}

void HttpClient::ReleaseEasy(void* easy) {
  // As many as were ever in flight at once, up to a bound.
  constexpr std::size_t kMaxIdle = 256;
  if (idle_easy_.size() >= kMaxIdle) {
    curl_easy_cleanup(easy);
    return;
  }
  // Back to the defaults; a reused handle never carries options or
  // callbacks of the transfer before. Connections are never reused
  // (FORBID_REUSE), so none stays open in between.
  curl_easy_reset(easy);
  idle_easy_.push_back(easy);
}

std::unique_ptr<HttpTransfer> HttpClient::Start(HttpRequest request, HttpTransfer::Done done) {
  std::unique_ptr<HttpTransfer> transfer(
      new HttpTransfer(*this, std::move(request), std::move(done)));
  HttpTransfer& t = *transfer;
  t.deadline_ = t.request_.timeout > Duration::zero()
                    ? std::chrono::steady_clock::now() + t.request_.timeout
                    : MonoTime::max();
  auto host = UrlHost(t.request_.host);
  if (!host) {
    t.FailSoon(host.error().message());
    return transfer;
  }
  std::string path = t.request_.path.empty() ? "/" : t.request_.path;
  if (path.front() != '/') path.insert(0, "/");
  std::string url =
      Lower(t.request_.scheme) + "://" + *host + ":" + std::to_string(t.request_.port) + path;
  if (auto s = t.Begin(url); !s) t.FailSoon(s.error().message());
  return transfer;
}

void HttpClient::OnSocketReady(int fd, uint32_t epoll_events) {
  int flags = 0;
  if (epoll_events & (EPOLLIN | EPOLLHUP)) flags |= CURL_CSELECT_IN;
  if (epoll_events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
  if (epoll_events & EPOLLERR) flags |= CURL_CSELECT_ERR;
  int running = 0;
  curl_multi_socket_action(static_cast<CURLM*>(multi_), fd, flags, &running);
  ProcessCompleted();
}

// curl asks to be woken after `timeout_ms` (-1: never). It must not be
// called back from inside this callback, so even 0 goes through the loop.
void HttpClient::OnTimerRequest(long timeout_ms) {
  if (timer_) loop_.CancelTimer(timer_);
  timer_ = 0;
  if (timeout_ms < 0) return;
  timer_ = loop_.AddTimer(std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms),
                          [this] {
                            timer_ = 0;
                            OnTimeout();
                          });
}

void HttpClient::OnTimeout() {
  int running = 0;
  curl_multi_socket_action(static_cast<CURLM*>(multi_), CURL_SOCKET_TIMEOUT, 0, &running);
  ProcessCompleted();
}

// One message at a time: a callback may destroy other transfers, and
// removing a handle from the multi drops its pending message, so nothing
// read here can refer to a transfer that is gone.
void HttpClient::ProcessCompleted() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(static_cast<CURLM*>(multi_), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    auto it = active_.find(msg->easy_handle);
    if (it == active_.end()) continue;
    it->second->OnCurlDone(static_cast<int>(msg->data.result));
  }
}

// ---- HttpTransfer ------------------------------------------------------

HttpTransfer::HttpTransfer(HttpClient& client, HttpRequest request, Done done)
    : client_(client), request_(std::move(request)), done_(std::move(done)) {}

HttpTransfer::~HttpTransfer() {
  if (fail_timer_) client_.loop_.CancelTimer(fail_timer_);
  if (in_multi_) {
    client_.active_.erase(easy_);
    curl_multi_remove_handle(static_cast<CURLM*>(client_.multi_), easy_);
  }
  if (easy_) client_.ReleaseEasy(easy_);
  if (header_list_) curl_slist_free_all(header_list_);
}

void HttpTransfer::FailSoon(const std::string& message) {
  // Never call back from inside Start: the owner has not stored us yet.
  fail_timer_ = client_.loop_.AddTimer(std::chrono::steady_clock::now(), [this, message] {
    fail_timer_ = 0;
    response_ = HttpResponse{};
    response_.error = message;
    Finish();
  });
}

// Sets up (the first time) and adds the easy handle for `url`.
Status HttpTransfer::Begin(const std::string& url) {
  if (!easy_) {
    easy_ = client_.AcquireEasy();
    if (!easy_) return Error("curl_easy_init failed");
    CURL* e = easy_;
    curl_easy_setopt(e, CURLOPT_PRIVATE, this);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error_buffer_);
    // A probe talks to the pod directly: no proxy from our environment.
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    // Like the kubelet's prober: no keep-alive, a new connection each time.
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    // The request goes out in one write; Nagle changes nothing, and the
    // setsockopt is one syscall less per probe.
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 0L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // S7.2: same-host only, below
    // S7.2: TLS without verification for scheme HTTPS.
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     request_.http2_prior_knowledge
                         ? static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
                         : static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &CurlCallbacks::OpenSocket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, this);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &CurlCallbacks::Body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &CurlCallbacks::Header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, this);
    for (const auto& [name, value] : request_.headers) {
      // "Name;" is curl's way to send a header with an empty value.
      std::string line = name;
      line.append(value.empty() ? ";" : ": ").append(value);
      curl_slist* next = curl_slist_append(header_list_, line.c_str());
      if (!next) return Error("out of memory for the request headers");
      header_list_ = next;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, header_list_);
    if (request_.post) {
      curl_easy_setopt(e, CURLOPT_POST, 1L);
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, request_.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(request_.body.size()));
    }
  }
  CURL* e = easy_;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  long ms = deadline_ == MonoTime::max() ? 0L : MillisecondsUntil(deadline_);  // 0: none
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms);
  error_buffer_[0] = '\0';
  socket_error_.clear();
  response_.body.clear();
  response_.headers.clear();
  CURLMcode rc = curl_multi_add_handle(static_cast<CURLM*>(client_.multi_), e);
  if (rc != CURLM_OK)
    return Error(std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc));
  in_multi_ = true;
  client_.active_[easy_] = this;
  return {};
}

void HttpTransfer::OnCurlDone(int curl_code) {
  CURL* e = easy_;
  client_.active_.erase(easy_);
  curl_multi_remove_handle(static_cast<CURLM*>(client_.multi_), e);
  in_multi_ = false;
  auto code = static_cast<CURLcode>(curl_code);
  if (code != CURLE_OK) {
    response_.received = false;
    response_.error = !socket_error_.empty() ? socket_error_
                      : error_buffer_[0]     ? std::string(error_buffer_)
                                             : std::string(curl_easy_strerror(code));
    Finish();
    return;
  }
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  response_.received = true;
  response_.status = status;
  char* location = nullptr;
  if (status >= 300 && status < 400 &&
      curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) {
    std::string next = location;
    std::string scheme = SchemeOf(next.c_str());
    char* current = nullptr;
    curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &current);
    // S7.2: only redirects to the same host are followed (the kubelet
    // compares host names, so the port and scheme may change).
    bool same_host = current && HostOf(next.c_str()) == HostOf(current) &&
                     (scheme == "http" || scheme == "https");
    if (!same_host) {
      response_.redirect_not_followed = true;
      Finish();
      return;
    }
    if (response_.redirects_followed >= request_.max_redirects) {
      response_.received = false;
      response_.error = "stopped after " + std::to_string(request_.max_redirects) + " redirects";
      Finish();
      return;
    }
    ++response_.redirects_followed;
    if (std::chrono::steady_clock::now() >= deadline_) {
      response_.received = false;
      response_.error = "timed out following a redirect to " + next;
      Finish();
      return;
    }
    if (auto s = Begin(next); !s) {
      response_.received = false;
      response_.error = s.error().message();
      Finish();
    }
    return;
  }
  Finish();
}

void HttpTransfer::Finish() {
  // The owner may destroy this object from the callback.
  Done done = std::move(done_);
  done_ = nullptr;
  HttpResponse response = std::move(response_);
  if (done) done(response);
}

}  // namespace podvisor::supervisor
