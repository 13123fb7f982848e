// tcpSocket probes (S7.2: success on connect), performed by podvisor itself
// from inside the pod's network namespace, non-blocking in the event loop.
// HTTP requests (httpGet, gRPC) go through HttpClient, which creates its
// sockets with SocketInNetns below.
//
// The socket is created inside the pod's network namespace (a socket keeps
// the namespace it was created in), so "127.0.0.1" is the pod's loopback.
// Only IP addresses and "localhost" are accepted as hosts: a DNS lookup
// would block the loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::probes {

struct NetCheckSpec {
  std::string host = "127.0.0.1";
  int port = 0;
};

struct NetCheckResult {
  bool connected = false;
  std::string message;  // why it failed
};

// A check in flight; destroying it cancels it (the callback never runs).
class NetCheck {
 public:
  using Done = std::function<void(const NetCheckResult&)>;
  // `netns`: a network namespace file ("/proc/<pid>/ns/net"), or empty for
  // the supervisor's own.
  static std::unique_ptr<NetCheck> Start(loop::EventLoop& loop, const std::string& netns,
                                         const NetCheckSpec& spec, Duration timeout, Done done);
  ~NetCheck();
  NetCheck(const NetCheck&) = delete;
  NetCheck& operator=(const NetCheck&) = delete;

 private:
  NetCheck(loop::EventLoop& loop, NetCheckSpec spec, Done done)
      : loop_(loop), spec_(std::move(spec)), done_(std::move(done)) {}
  void OnReady(uint32_t events);
  void FailSoon(const std::string& message);
  void Finish(const NetCheckResult& result);

  loop::EventLoop& loop_;
  NetCheckSpec spec_;
  Done done_;
  Fd fd_;
  loop::EventLoop::TimerId timer_ = 0;
  bool finished_ = false;
};

// A non-blocking socket of `type` inside the network namespace file
// `netns` (empty: ours); the thread is back in its own namespace when it
// returns. Sockets for a namespace are made a few at a time and handed out
// from a pool, so a pod's namespace costs a few idle descriptors.
Result<Fd> SocketInNetns(const std::string& netns, int domain, int type);

}  // namespace podvisor::supervisor::probes
