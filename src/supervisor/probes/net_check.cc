#include "supervisor/probes/net_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <tuple>
#include <vector>

namespace podvisor::supervisor::probes {

namespace {

// The namespace files stay open once used: 100 containers probed every
// second would otherwise cost two /proc path walks per socket. The paths
// are /proc/<pid>/ns/net of the pod's namespace holder, which lives as
// long as the pod; an open file keeps naming the namespace it was opened
// for, whatever becomes of the pid.
Result<int> OwnNetnsFd() {
  // Outside the bounded cache below: clearing it must never close this
  // one between the two setns calls of SocketInNetns.
  static Fd own;
  if (!own) own = Fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!own) return Error::FromErrno("open /proc/thread-self/ns/net");
  return own.get();
}

Result<int> NetnsFd(const std::string& path) {
  static std::map<std::string, Fd, std::less<>> open_files;
  if (auto it = open_files.find(path); it != open_files.end()) return it->second.get();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("open " + path);
  // A supervisor has one pod; tests use a few namespaces. Bounded anyway.
  if (open_files.size() >= 8) open_files.clear();
  return open_files.emplace(path, std::move(fd)).first->second.get();
}

}  // namespace

Result<Fd> SocketInNetns(const std::string& netns, int domain, int type) {
  if (netns.empty()) {
    Fd s(::socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s) return Error::FromErrno("socket");
    return s;
  }
  // A socket belongs to the namespace it was created in, for good. So a
  // trip into the pod's namespace makes a few at once and keeps the rest
  // for the next probes: two setns calls per kSocketBatch sockets instead
  // of per socket.
  constexpr int kSocketBatch = 8;
  static std::map<std::tuple<std::string, int, int>, std::vector<Fd>> spare;
  std::vector<Fd>& pool = spare[{netns, domain, type}];
  if (pool.empty()) {
    // podvisor is single-threaded, so switching the namespace of the one
    // thread for the duration of socket() affects nothing else.
    auto own = OwnNetnsFd();
    if (!own) return own.error();
    auto target = NetnsFd(netns);
    if (!target) return target.error();
    if (::setns(*target, CLONE_NEWNET) != 0) return Error::FromErrno("setns " + netns);
    int socket_errno = 0;
    for (int i = 0; i < kSocketBatch; ++i) {
      Fd s(::socket(domain, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (!s) {
        socket_errno = errno;
        break;
      }
      pool.push_back(std::move(s));
    }
    if (::setns(*own, CLONE_NEWNET) != 0) {
      // Staying in the pod's namespace would be wrong for every later call.
      pool.clear();
      return Error::FromErrno("setns back to the supervisor's network namespace");
    }
    if (pool.empty()) return Error::FromErrno("socket", socket_errno);
  }
  Fd s = std::move(pool.back());
  pool.pop_back();
  return s;
}

void NetCheck::FailSoon(const std::string& message) {
  // Never call back from inside Start: the owner has not stored us yet.
  timer_ = loop_.AddTimer(loop_.Now(), [this, message] {
    timer_ = 0;
    Finish({false, message});
  });
}

std::unique_ptr<NetCheck> NetCheck::Start(loop::EventLoop& loop, const std::string& netns,
                                          const NetCheckSpec& spec, Duration timeout, Done done) {
  std::unique_ptr<NetCheck> check(new NetCheck(loop, spec, std::move(done)));
  NetCheck* raw = check.get();
  std::string host = spec.host.empty() || spec.host == "localhost" ? "127.0.0.1" : spec.host;
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  bool is_v6 = false;
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(spec.port));
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    is_v6 = true;
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(spec.port));
  } else {
    raw->FailSoon("host " + host + " is not an IP address");
    return check;
  }
  auto fd = SocketInNetns(netns, is_v6 ? AF_INET6 : AF_INET, SOCK_STREAM);
  if (!fd) {
    raw->FailSoon(fd.error().message());
    return check;
  }
  raw->fd_ = std::move(*fd);
  int rc = is_v6 ? ::connect(raw->fd_.get(), reinterpret_cast<sockaddr*>(&v6), sizeof v6)
                 : ::connect(raw->fd_.get(), reinterpret_cast<sockaddr*>(&v4), sizeof v4);
  if (rc != 0 && errno != EINPROGRESS) {
    raw->FailSoon(Error::FromErrno("connect " + host + ":" + std::to_string(spec.port)).message());
    return check;
  }
  raw->timer_ = loop.AddTimer(loop.Now() + timeout, [raw, timeout] {
    raw->timer_ = 0;
    raw->Finish(
        {false, "timed out after " +
                    std::to_string(
                        std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                    "ms"});
  });
  if (auto s = loop.Add(raw->fd_.get(), EPOLLOUT, [raw](uint32_t ev) { raw->OnReady(ev); }); !s) {
    loop.CancelTimer(raw->timer_);
    raw->FailSoon(s.error().message());
  }
  return check;
}

NetCheck::~NetCheck() {
  if (timer_) loop_.CancelTimer(timer_);
  if (fd_) loop_.Remove(fd_.get());
}

void NetCheck::OnReady(uint32_t) {
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    Finish({false, Error::FromErrno("connect " + spec_.host + ":" + std::to_string(spec_.port), err)
                       .message()});
    return;
  }
  Finish({true, "connected"});
}

void NetCheck::Finish(const NetCheckResult& result) {
  if (finished_) return;
  finished_ = true;
  if (timer_) loop_.CancelTimer(timer_);
  timer_ = 0;
  if (fd_) loop_.Remove(fd_.get());
  fd_.Reset();
  // The owner may destroy this object from the callback.
  Done done = std::move(done_);
  if (done) done(result);
}

}  // namespace podvisor::supervisor::probes
