// Network checks for probes and httpGet hooks, performed by podvisor itself
// from inside the pod's network namespace (S7.1, S7.2), non-blocking in the
// event loop: a TCP connect, or an HTTP/1.1 GET whose status line decides.
//
// The socket is created inside the pod's network namespace (a socket keeps
// the namespace it was created in), so "127.0.0.1" is the pod's loopback.
// Only IP addresses and "localhost" are accepted as hosts: a DNS lookup
// would block the loop. HTTPS and redirects are not followed here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "supervisor/event_loop.h"

namespace podvisor::supervisor {

struct NetCheckSpec {
  std::string host = "127.0.0.1";
  int port = 0;
  bool http = false;  // false: succeed on connect
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;  // sent as given
};

struct NetCheckResult {
  bool connected = false;
  int http_status = 0;  // 0 without a parsed status line
  std::string message;  // why it failed, or the status line
};

// A check in flight; destroying it cancels it (the callback never runs).
class NetCheck {
 public:
  using Done = std::function<void(const NetCheckResult&)>;
  // `netns`: a network namespace file ("/proc/<pid>/ns/net"), or empty for
  // the supervisor's own.
  static std::unique_ptr<NetCheck> Start(EventLoop& loop, const std::string& netns,
                                         const NetCheckSpec& spec, Duration timeout, Done done);
  ~NetCheck();
  NetCheck(const NetCheck&) = delete;
  NetCheck& operator=(const NetCheck&) = delete;

 private:
  NetCheck(EventLoop& loop, NetCheckSpec spec, Done done)
      : loop_(loop), spec_(std::move(spec)), done_(std::move(done)) {}
  void OnReady(uint32_t events);
  void FailSoon(std::string message);
  void Finish(NetCheckResult result);

  EventLoop& loop_;
  NetCheckSpec spec_;
  Done done_;
  Fd fd_;
  EventLoop::TimerId timer_ = 0;
  bool connected_ = false;
  std::string request_;
  std::string response_;
  bool finished_ = false;
};

// Opens a socket of `type` inside the network namespace file `netns`
// (empty: ours), returning to our own namespace before it returns.
Result<Fd> SocketInNetns(const std::string& netns, int domain, int type);

}  // namespace podvisor::supervisor
