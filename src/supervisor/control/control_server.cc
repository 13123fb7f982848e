#include "supervisor/control/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace podvisor::supervisor::control {

struct ControlServer::Connection {
  Fd fd;
  uint64_t serial;
  std::string in;
  std::string out;
  bool dispatched = false;
  loop::EventLoop::TimerId deadline = 0;
};

namespace {

Result<sockaddr_un> SocketAddress(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string& s = path.native();
  if (s.size() >= sizeof addr.sun_path) {
    return Error("control socket path too long (" + std::to_string(s.size()) + " bytes, at most " +
                     std::to_string(sizeof addr.sun_path - 1) + "): " + s,
                 ENAMETOOLONG);
  }
  std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
  return addr;
}

constexpr int kAcceptsPerWakeup = 64;
// Connections the kernel queues while nobody accepts: a burst of clients,
// or those arriving while a supervisor re-executes (S15.2).
constexpr int kBacklog = 512;
constexpr std::chrono::milliseconds kAcceptPause{100};

}  // namespace

ControlReply::ControlReply(const nlohmann::json& doc)
    : line_(std::make_shared<const std::string>(
          doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {}

ControlReply ControlReply::FromText(std::string json_text) {
  ControlReply reply;
  json_text += "\n";
  reply.line_ = std::make_shared<const std::string>(std::move(json_text));
  return reply;
}

ControlServer::ControlServer(loop::EventLoop& loop, std::filesystem::path path, Fd listen_fd,
                             Handler handler, ControlServerOptions options)
    : loop_(loop),
      path_(std::move(path)),
      listen_fd_(std::move(listen_fd)),
      handler_(std::move(handler)),
      options_(options),
      self_(std::make_shared<ControlServer*>(this)) {}

Result<std::unique_ptr<ControlServer>> ControlServer::Listen(loop::EventLoop& loop,
                                                             const std::filesystem::path& path,
                                                             Handler handler,
                                                             ControlServerOptions options) {
  auto addr = SocketAddress(path);
  if (!addr) return addr.take_error();
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return Error::FromErrno("socket(AF_UNIX)");
  // A socket file left by a supervisor that was SIGKILLed is stale; a live
  // one would answer, and two supervisors of one pod must not run.
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) == 0) {
    return Error("another supervisor is serving " + path.string(), EADDRINUSE);
  }
  ::unlink(path.c_str());
  // The socket is created 0600 from the start (no window with a wider mode).
  mode_t old_umask = ::umask(0177);
  int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof *addr);
  ::umask(old_umask);
  if (rc != 0) return Error::FromErrno("bind " + path.string());
  if (::listen(fd.get(), kBacklog) != 0) return Error::FromErrno("listen " + path.string());
  return Serve(loop, path, std::move(fd), std::move(handler), options);
}

Result<std::unique_ptr<ControlServer>> ControlServer::Adopt(loop::EventLoop& loop,
                                                            const std::filesystem::path& path,
                                                            Fd fd, Handler handler,
                                                            ControlServerOptions options) {
  int listening = 0;
  socklen_t len = sizeof listening;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) {
    return Error::FromErrno("adopting the control socket " + path.string());
  }
  if (listening == 0) {
    return Error("adopting the control socket " + path.string() + ": not a listening socket",
                 EINVAL);
  }
  // It crossed execve, so its close-on-exec flag was cleared; its O_NONBLOCK
  // is the open file's and came along, but is set again for a socket handed
  // over by another program.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0 ||
      ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC) != 0) {
    return Error::FromErrno("adopting the control socket " + path.string());
  }
  return Serve(loop, path, std::move(fd), std::move(handler), options);
}

Result<std::unique_ptr<ControlServer>> ControlServer::Serve(loop::EventLoop& loop,
                                                            const std::filesystem::path& path,
                                                            Fd fd, Handler handler,
                                                            ControlServerOptions options) {
  std::unique_ptr<ControlServer> server(
      new ControlServer(loop, path, std::move(fd), std::move(handler), options));
  ControlServer* raw = server.get();
  if (auto s = loop.Add(raw->listen_fd_.get(), EPOLLIN, [raw](uint32_t) { raw->OnAcceptable(); });
      !s) {
    return s.take_error();
  }
  return server;
}

ControlServer::~ControlServer() {
  *self_ = nullptr;
  if (accept_pause_) loop_.CancelTimer(accept_pause_);
  while (!connections_.empty()) Close(connections_.begin()->first);
  loop_.Remove(listen_fd_.get());
  ::unlink(path_.c_str());
}

void ControlServer::OnAcceptable() {
  // At most one epoll batch worth of new connections per wakeup: the
  // listening socket stays readable, so the rest are taken on the next
  // loop iteration, after the container exits, timers and replies that
  // are ready now. A flood of clients thus cannot delay a transition by
  // more than one batch of requests.
  // A request read here is dispatched at once, and its handler may end
  // the pod and destroy this server (a stop of a pod with nothing
  // running): the cell outlives it and says so.
  const std::shared_ptr<ControlServer*> self = self_;
  for (int accepted = 0; accepted < kAcceptsPerWakeup; ++accepted) {
    Fd conn(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!conn) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the pending connection stays queued and the
        // listening socket readable, so a level-triggered watch would spin.
        // Stop watching it for a moment; closing connections frees room.
        log::Warn("control socket: cannot accept: {}; pausing for {} ms", std::strerror(errno),
                  kAcceptPause.count());
        if (accept_pause_ == 0 && loop_.Modify(listen_fd_.get(), 0)) {
          accept_pause_ = loop_.AddTimer(loop_.Now() + kAcceptPause, [this] {
            accept_pause_ = 0;
            (void)loop_.Modify(listen_fd_.get(), EPOLLIN);
          });
        }
      }
      return;  // EAGAIN: every pending connection has been taken
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    bool allowed = ::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                   (cred.uid == 0 || cred.uid == ::geteuid());
    if (!allowed || connections_.size() >= options_.max_connections) {
      if (!allowed) ++refused_peers_;
      std::string reply =
          (allowed ? ControlErrorReply(ControlCode::kUnavailable, "too many connections")
                   : ControlErrorReply(ControlCode::kPermissionDenied, "permission denied"))
              .dump() +
          "\n";
      // Best effort: a refused peer gets one non-blocking write and is gone.
      ssize_t ignored = ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
      (void)ignored;
      continue;
    }
    int fd = conn.get();
    auto c = std::make_unique<Connection>();
    c->fd = std::move(conn);
    c->serial = next_serial_++;
    connections_.emplace(fd, std::move(c));
    if (!loop_.Add(fd, EPOLLIN | EPOLLRDHUP, [this, fd](uint32_t ev) { OnEvent(fd, ev); })) {
      Close(fd);
      continue;
    }
    // A client writes its request right after connecting, so it is usually
    // here by now: read it at once instead of one more trip through epoll,
    // and arm the request deadline only for one that is not complete yet.
    // (Only this function adds connections, so one still under `fd` is
    // this one.)
    OnReadable(fd);
    if (*self == nullptr) return;  // destroyed by the request it served
    auto it = connections_.find(fd);
    if (it != connections_.end() && !it->second->dispatched) {
      it->second->deadline = loop_.AddTimer(loop_.Now() + options_.request_timeout,
                                            [this, fd] { OnRequestTimeout(fd); });
    }
  }
}

void ControlServer::OnEvent(int fd, uint32_t events) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (events & EPOLLOUT) {
    OnWritable(fd);
  } else if (it->second->dispatched) {
    // Waiting for a deferred reply, the connection is watched for EPOLLHUP
    // only: a client that half-closed after its request (EPOLLRDHUP) is
    // still there to read the reply; one that closed entirely is not.
    if (events & (EPOLLHUP | EPOLLERR)) Close(fd);
  } else {
    OnReadable(fd);
  }
}

void ControlServer::OnRequestTimeout(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  c.deadline = 0;  // this timer has fired
  if (c.dispatched) return;
  // A truncated request (no newline and no end of input in time) is
  // answered, like any other bad request, before the connection closes.
  c.dispatched = true;
  if (!loop_.Modify(fd, 0)) {
    Close(fd);
    return;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(options_.request_timeout).count();
  Respond(
      fd, c.serial,
      ControlErrorReply(ControlCode::kInvalidArgument,
                        c.in.empty() ? "no request within " + std::to_string(ms) + " ms"
                                     : "incomplete request: no newline or end of input within " +
                                           std::to_string(ms) + " ms"));
}

void ControlServer::OnReadable(int fd) {
  Connection& c = *connections_.at(fd);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<std::size_t>(n));
      if (c.in.size() > options_.max_request_bytes) {
        c.dispatched = true;
        loop_.CancelTimer(c.deadline);
        c.deadline = 0;
        Respond(fd, c.serial,
                ControlErrorReply(ControlCode::kInvalidArgument,
                                  "request larger than " +
                                      std::to_string(options_.max_request_bytes) + " bytes"));
        return;
      }
      // A newline ends the request, so clients need not half-close.
      if (c.in.find('\n') != std::string::npos) break;
      continue;
    }
    if (n == 0) break;  // the client half-closed: the request is complete
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return;
    Close(fd);
    return;
  }
  Dispatch(fd);
}

void ControlServer::Dispatch(int fd) {
  Connection& c = *connections_.at(fd);
  c.dispatched = true;
  loop_.CancelTimer(c.deadline);  // the reply may legitimately take long
  c.deadline = 0;
  if (!loop_.Modify(fd, 0)) {  // level-triggered EPOLLIN at EOF would spin
    Close(fd);
    return;
  }
  auto request = nlohmann::json::parse(c.in, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    Respond(fd, c.serial,
            ControlErrorReply(ControlCode::kInvalidArgument, "malformed JSON request"));
    return;
  }
  if (!request.is_object()) {
    Respond(fd, c.serial,
            ControlErrorReply(ControlCode::kInvalidArgument, "request must be a JSON object"));
    return;
  }
  std::weak_ptr<ControlServer*> weak = self_;
  uint64_t serial = c.serial;
  handler_(request, [weak, fd, serial](const ControlReply& reply) {
    if (auto self = weak.lock(); self && *self) (*self)->Respond(fd, serial, reply);
  });
}

void ControlServer::Respond(int fd, uint64_t serial, const ControlReply& reply) {
  auto it = connections_.find(fd);
  // The serial check keeps a late reply from reaching a new connection that
  // got the same descriptor number.
  if (it == connections_.end() || it->second->serial != serial) return;
  Connection& c = *it->second;
  if (!c.out.empty()) return;  // answered already
  c.out = reply.line();
  OnWritable(fd);
}

void ControlServer::OnWritable(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  while (!c.out.empty()) {
    ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // The client is slow to read: wait for room, bounded by a deadline.
      if (!loop_.Modify(fd, EPOLLOUT)) Close(fd);
      if (c.deadline == 0) {
        c.deadline =
            loop_.AddTimer(loop_.Now() + options_.request_timeout, [this, fd] { Close(fd); });
      }
      return;
    }
    break;  // EPIPE and friends: the client is gone
  }
  Close(fd);
}

bool ControlServer::Flush(Duration bound) {
  // The loop's clock may be a test's; this wait is on the real one.
  const auto deadline = std::chrono::steady_clock::now() + bound;
  std::vector<pollfd> waiting;
  for (;;) {
    waiting.clear();
    for (const auto& [fd, c] : connections_) {
      if (!c->out.empty()) waiting.push_back({fd, POLLOUT, 0});
    }
    if (waiting.empty()) return true;
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int ready = ::poll(waiting.data(), waiting.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return false;
    for (const pollfd& p : waiting) {
      // Writes what fits; closes the connection once all of it is written
      // or the client is gone (POLLERR, POLLHUP: the send fails).
      if (p.revents != 0) OnWritable(p.fd);
    }
  }
}

void ControlServer::Close(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (it->second->deadline) loop_.CancelTimer(it->second->deadline);
  loop_.Remove(fd);
  connections_.erase(it);  // closes the descriptor
}

Result<nlohmann::json> ControlRequest(const std::filesystem::path& socket_path,
                                      const nlohmann::json& request, Duration timeout) {
  auto addr = SocketAddress(socket_path);
  if (!addr) return addr.take_error();
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error::FromErrno("socket(AF_UNIX)");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) != 0) {
    return Error::FromErrno("connecting to " + socket_path.string());
  }
  std::string text = request.dump() + "\n";
  // A server that refuses us answers and closes before reading: a failed
  // send is then no error yet, the reply already waiting says why.
  std::optional<Error> send_error;
  if (::send(fd.get(), text.data(), text.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(text.size())) {
    send_error = Error::FromErrno("sending request to " + socket_path.string());
  }
  ::shutdown(fd.get(), SHUT_WR);
  MonoTime deadline = std::chrono::steady_clock::now() + timeout;
  std::string reply;
  char buf[65536];
  for (;;) {
    int wait_ms = -1;
    if (timeout.count() > 0) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Error("no reply from " + socket_path.string(), ETIMEDOUT);
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{fd.get(), POLLIN, 0};
    int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Error::FromErrno("poll");
    if (r == 0) continue;
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && reply.empty() && send_error) return *send_error;
    // A server that answered without reading all of our request closes
    // with unread data, which AF_UNIX reports as ECONNRESET after the reply.
    if (n < 0 && errno == ECONNRESET && !reply.empty()) break;
    if (n < 0) return Error::FromErrno("reading reply from " + socket_path.string());
    if (n == 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  if (reply.empty() && send_error) return *send_error;
  auto doc = nlohmann::json::parse(reply, nullptr, false);
  if (doc.is_discarded()) {
    return Error("malformed reply from " + socket_path.string() +
                 (reply.empty() ? " (connection closed without a reply)" : ""));
  }
  return doc;
}

}  // namespace podvisor::supervisor::control
