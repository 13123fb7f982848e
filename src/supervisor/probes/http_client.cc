#include "supervisor/probes/http_client.h"

#include <arpa/inet.h>

#include <cctype>

#include "supervisor/probes/http1_wire.h"
#include "supervisor/probes/http_connection.h"

namespace podvisor::supervisor::probes {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool IsIp(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

// A Location header resolved against the URL it answered: an absolute URL
// ("https://10.0.0.1:8443/x"), an absolute path ("/x") or a relative one
// ("x", next to the current path). `host` is left as written (lower
// case, IPv6 without brackets) so the caller can tell another host.
std::optional<HttpTarget> ResolveLocation(const HttpTarget& current, std::string_view location) {
  HttpTarget next = current;
  std::size_t scheme_end = location.find("://");
  std::size_t first_special = location.find_first_of("/?#");
  if (scheme_end != std::string_view::npos &&
      (first_special == std::string_view::npos || scheme_end < first_special)) {
    next.scheme = Lower(location.substr(0, scheme_end));
    if (next.scheme != "http" && next.scheme != "https") return std::nullopt;
    std::string_view rest = location.substr(scheme_end + 3);
    std::size_t path_at = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, path_at);
    std::string_view path =
        path_at == std::string_view::npos ? std::string_view("/") : rest.substr(path_at);
    if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
      authority.remove_prefix(at + 1);  // user info is not part of the host
    }
    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {
      std::size_t close = authority.find(']');
      if (close == std::string_view::npos) return std::nullopt;
      next.host = Lower(authority.substr(1, close - 1));
      if (close + 1 < authority.size() && authority[close + 1] == ':') {
        port = authority.substr(close + 2);
      }
    } else {
      std::size_t colon = authority.find(':');
      next.host = Lower(authority.substr(0, colon));
      if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    }
    next.port = next.scheme == "https" ? 443 : 80;
    if (!port.empty()) {
      int p = 0;
      for (char ch : port) {
        if (ch < '0' || ch > '9' || p > 65535) return std::nullopt;
        p = p * 10 + (ch - '0');
      }
      if (p == 0 || p > 65535) return std::nullopt;
      next.port = p;
    }
    next.path = path.front() == '/' ? std::string(path) : "/" + std::string(path);
  } else if (!location.empty() && location.front() == '/') {
    if (location.size() > 1 && location[1] == '/') return std::nullopt;  // scheme-relative
    next.path = std::string(location);
  } else {
    std::string base = current.path.substr(0, current.path.find('?'));
    next.path = base.substr(0, base.rfind('/') + 1) + std::string(location);
  }
  std::size_t fragment = next.path.find('#');
  if (fragment != std::string::npos) next.path.resize(fragment);
  return next;
}

}  // namespace

const std::string* HttpResponse::Header(std::string_view lower_name) const {
  const std::string* found = nullptr;
  for (const auto& [name, value] : headers) {
    if (name == lower_name) found = &value;
  }
  return found;
}

// ---- HttpClient --------------------------------------------------------

Result<std::unique_ptr<HttpClient>> HttpClient::Create(loop::EventLoop& loop) {
  return std::unique_ptr<HttpClient>(new HttpClient(loop));
}

std::unique_ptr<HttpTransfer> HttpClient::Start(HttpRequest request, HttpTransfer::Done done) {
  std::unique_ptr<HttpTransfer> transfer(
      new HttpTransfer(*this, std::move(request), std::move(done)));
  HttpTransfer& t = *transfer;
  ++active_;
  HttpTarget target;
  target.scheme = Lower(t.request_.scheme);
  target.host =
      t.request_.host.empty() || t.request_.host == "localhost" ? "127.0.0.1" : t.request_.host;
  target.port = t.request_.port;
  target.path = t.request_.path.empty() ? "/" : t.request_.path;
  if (target.path.front() != '/') target.path.insert(0, "/");
  if (!IsIp(target.host)) {
    t.FailSoon("host " + t.request_.host + " is not an IP address");
    return transfer;
  }
  if (t.request_.timeout > Duration::zero()) {
    t.deadline_ = loop_.Now() + t.request_.timeout;
    t.deadline_timer_ = loop_.AddTimer(t.deadline_, [&t] {
      t.deadline_timer_ = 0;
      t.connection_.reset();
      t.response_ = HttpResponse{};
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.request_.timeout).count();
      t.response_.error = "timed out after " + std::to_string(ms) + "ms";
      t.Finish();
    });
  } else {
    t.deadline_ = MonoTime::max();
  }
  t.Begin(target);
  return transfer;
}

// ---- HttpTransfer ------------------------------------------------------

HttpTransfer::HttpTransfer(HttpClient& client, HttpRequest request, Done done)
    : client_(client), request_(std::move(request)), done_(std::move(done)) {}

HttpTransfer::~HttpTransfer() {
  if (fail_timer_) client_.loop_.CancelTimer(fail_timer_);
  if (deadline_timer_) client_.loop_.CancelTimer(deadline_timer_);
  if (done_) --client_.active_;  // cancelled before it finished
}

void HttpTransfer::FailSoon(const std::string& message) {
  // Never call back from inside Start: the owner has not stored us yet.
  fail_timer_ = client_.loop_.AddTimer(client_.loop_.Now(), [this, message] {
    fail_timer_ = 0;
    connection_.reset();
    response_ = HttpResponse{};
    response_.error = message;
    Finish();
  });
}

void HttpTransfer::Begin(const HttpTarget& target) {
  auto connection = HttpConnection::Open(
      client_.loop_, request_, target,
      [this, target](HttpResponse response) { OnResponse(std::move(response), target); });
  if (!connection) {
    FailSoon(connection.error().message());
    return;
  }
  connection_ = std::move(*connection);
}

void HttpTransfer::OnResponse(HttpResponse response, const HttpTarget& target) {
  // The connection has called us as its last act; it can go now, but not
  // from inside its own call: it is released when this function returns.
  std::unique_ptr<HttpConnection> finished = std::move(connection_);
  int followed = response_.redirects_followed;
  response_ = std::move(response);
  response_.redirects_followed = followed;
  const std::string* location = response_.Header("location");
  if (!response_.received || response_.status < 300 || response_.status >= 400 || !location) {
    Finish();
    return;
  }
  auto next = ResolveLocation(target, *location);
  // S7.2: only redirects to the same host are followed (the kubelet
  // compares host names, so the port and scheme may change).
  if (!next || next->host != Lower(target.host)) {
    response_.redirect_not_followed = true;
    Finish();
    return;
  }
  if (response_.redirects_followed >= request_.max_redirects) {
    response_ = HttpResponse{};
    response_.error = "stopped after " + std::to_string(request_.max_redirects) + " redirects";
    Finish();
    return;
  }
  response_ = HttpResponse{};
  response_.redirects_followed = followed + 1;
  Begin(*next);
}

void HttpTransfer::Finish() {
  if (deadline_timer_) client_.loop_.CancelTimer(deadline_timer_);
  deadline_timer_ = 0;
  if (done_) --client_.active_;
  // The owner may destroy this object from the callback.
  Done done = std::move(done_);
  done_ = nullptr;
  HttpResponse response = std::move(response_);
  if (done) done(response);
}

}  // namespace podvisor::supervisor::probes
