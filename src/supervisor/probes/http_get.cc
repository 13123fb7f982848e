#include "supervisor/probes/http_get.h"

#include <strings.h>

namespace podvisor::supervisor::probes {
namespace {

constexpr std::size_t kBodyInMessage = 1024;

bool Has(const std::vector<std::pair<std::string, std::string>>& headers, const char* name) {
  for (const auto& h : headers) {
    if (strcasecmp(h.first.c_str(), name) == 0) return true;
  }
  return false;
}

std::string TransportError(const HttpRequest& request, const HttpResponse& response) {
  return "Get \"" + RequestUrl(request) + "\": " + response.error;
}

}  // namespace

HttpRequest HttpGetRequest(const pod::HttpGetAction& get, int port, std::string_view user_agent,
                           Duration timeout, std::string netns) {
  HttpRequest req;
  req.scheme = get.scheme == "HTTPS" ? "https" : "http";
  req.host = get.host.empty() ? "127.0.0.1" : get.host;  // S7.2: the pod address
  req.port = port;
  req.path = get.path.empty() ? "/" : get.path;
  for (const auto& h : get.http_headers) req.headers.emplace_back(h.name, h.value);
  if (!Has(req.headers, "User-Agent"))
    req.headers.emplace_back("User-Agent", std::string(user_agent));
  if (!Has(req.headers, "Accept")) req.headers.emplace_back("Accept", "*/*");
  req.max_redirects = kMaxSameHostRedirects;
  req.timeout = timeout;
  req.netns = std::move(netns);
  return req;
}

std::string RequestUrl(const HttpRequest& request) {
  std::string host =
      request.host.find(':') != std::string::npos ? "[" + request.host + "]" : request.host;
  std::string path =
      request.path.empty() || request.path.front() != '/' ? "/" + request.path : request.path;
  return request.scheme + "://" + host + ":" + std::to_string(request.port) + path;
}

HttpGetVerdict JudgeHttpProbe(const HttpRequest& request, const HttpResponse& response) {
  if (!response.received) return {false, false, TransportError(request, response)};
  long code = response.status;
  if (code < 200 || code >= 400) {
    return {false, false, "HTTP probe failed with statuscode: " + std::to_string(code)};
  }
  if (code >= 300) {
    // A redirect that was not followed (another host) is the answer.
    return {
        true, true,
        "Probe terminated redirects, Response body: " + response.body.substr(0, kBodyInMessage)};
  }
  return {true, false, response.body.substr(0, kBodyInMessage)};
}

HttpGetVerdict JudgeHttpHook(const HttpRequest& request, const HttpResponse& response) {
  if (!response.received) return {false, false, TransportError(request, response)};
  return {true, false, ""};  // S8.2: any status will do
}

}  // namespace podvisor::supervisor::probes
