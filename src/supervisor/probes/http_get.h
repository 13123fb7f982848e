// The httpGet action of probes and hooks (S7.2, S8.1) as an HttpRequest,
// and the verdicts on its answer: a probe succeeds on 200 <= status < 400
// (a redirect to another host is not followed and counts by its own 3xx
// status, with a warning, as the kubelet does); a hook fails only when no
// answer came (S8.2: the status code is ignored). Pure: no I/O.
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "pod/model.h"
#include "supervisor/probes/http_client.h"

namespace podvisor::supervisor::probes {

inline constexpr const char* kProbeUserAgent = "kube-probe/1.33";     // S7.2
inline constexpr const char* kHookUserAgent = "kube-lifecycle/1.33";  // as the kubelet's hooks
inline constexpr int kMaxSameHostRedirects = 10;                      // S7.2

// `port`: the resolved port number. The action's headers are sent as given
// (a Host header replaces the default); User-Agent and Accept get the
// kubelet's defaults unless the action sets them.
HttpRequest HttpGetRequest(const pod::HttpGetAction& get, int port, std::string_view user_agent,
                           Duration timeout, std::string netns);

// "http://127.0.0.1:8080/healthz", for messages.
std::string RequestUrl(const HttpRequest& request);

struct HttpGetVerdict {
  bool success = false;
  bool warning = false;  // success, but the kubelet would record a ProbeWarning
  std::string message;
};

HttpGetVerdict JudgeHttpProbe(const HttpRequest& request, const HttpResponse& response);
HttpGetVerdict JudgeHttpHook(const HttpRequest& request, const HttpResponse& response);

}  // namespace podvisor::supervisor::probes
