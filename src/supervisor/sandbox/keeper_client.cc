// The supervisor's side of the keeper protocol (keeper_wire.h).
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "supervisor/sandbox/keeper_wire.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor::sandbox {
namespace {

// The holder answers from memory, in microseconds; these bound a holder
// that is stuck or gone, not one that is slow.
constexpr timeval kSendTimeout{1, 0};
constexpr timeval kReceiveTimeout{2, 0};

}  // namespace

Status Sandbox::ConnectKeeper() {
  keeper_.Reset();
  const std::string path = options_.keeper_socket.string();
  std::string what = "connecting to the sandbox keeper " + path;
  if (path.empty()) return Error("the pod sandbox has no keeper socket", ENOTCONN);
  if (!holder_.valid()) return Error(what + ": the sandbox was destroyed", ENOTCONN);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return Error(what + ": path too long", ENAMETOOLONG);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return Error::FromErrno("socket");
  // SO_SNDTIMEO bounds a unix connect too (a full backlog would block it).
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &kSendTimeout, sizeof kSendTimeout);
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &kReceiveTimeout, sizeof kReceiveTimeout);
  while (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINTR) return Error::FromErrno(what);
  }
  // Whoever listens there must be the holder we checked, not a process
  // that took the path after it died.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) {
    return Error::FromErrno(what + ": SO_PEERCRED");
  }
  if (peer.pid != holder_.pid()) {
    return Error(what + ": it is served by pid " + std::to_string(peer.pid) +
                     ", not by the holder, pid " + std::to_string(holder_.pid()),
                 ECONNREFUSED);
  }
  keeper_ = std::move(sock);
  return Ok();
}

// Sends one request and collects the answer: one message, or with
// `until_end` every message up to `end`. Each request is idempotent, so
// one that met a connection the holder had already dropped (it serves the
// newest) is sent again over a new one. After any other failure the
// connection is closed, so that a late answer is never read as the answer
// to the next request.
Result<std::vector<keeper::Message>> Sandbox::Ask(std::string_view request,
                                                  std::span<const int> fds, bool until_end) {
  for (int attempt = 0;; ++attempt) {
    if (!keeper_) {
      if (auto s = ConnectKeeper(); !s) return s.error();
    }
    std::vector<keeper::Message> answer;
    Error error;
    if (auto sent = keeper::SendMessage(keeper_.get(), request, fds); !sent) {
      error = sent.error();
    } else {
      for (;;) {
        auto message = keeper::ReceiveMessage(keeper_.get());
        if (!message) {
          error = message.error();
          if (error.code() == EAGAIN) error = Error("the sandbox keeper did not answer", ETIMEDOUT);
          break;
        }
        bool end = !until_end || message->text == "end";
        answer.push_back(std::move(*message));
        if (end) return answer;
      }
    }
    keeper_.Reset();
    if (attempt > 0 || !keeper::IsEndOfConnection(error)) return error;
  }
}

Status Sandbox::Keep(std::string_view key, std::span<const int> fds) {
  std::string what = "keeping " + std::string(key) + " in the pod sandbox";
  if (!keeper::ValidKey(key)) return Error(what + ": not a valid key", EINVAL);
  if (fds.empty() || fds.size() > keeper::kMaxFds) {
    return Error(what + ": 1 to 8 descriptors at a time", EINVAL);
  }
  auto answer = Ask("keep " + std::string(key), fds, /*until_end=*/false);
  if (!answer) return answer.error().Wrap(what);
  if (answer->front().text != "ok") return Error(what + ": " + answer->front().text, EPROTO);
  return Ok();
}

Status Sandbox::Drop(std::string_view key) {
  std::string what = "dropping " + std::string(key) + " from the pod sandbox";
  if (!keeper::ValidKey(key)) return Error(what + ": not a valid key", EINVAL);
  auto answer = Ask("drop " + std::string(key), {}, /*until_end=*/false);
  if (!answer) return answer.error().Wrap(what);
  if (answer->front().text != "ok") return Error(what + ": " + answer->front().text, EPROTO);
  return Ok();
}

Result<std::map<std::string, std::vector<Fd>>> Sandbox::FetchKept() {
  std::string what = "fetching what the pod sandbox keeps";
  auto answer = Ask("fetch", {}, /*until_end=*/true);
  if (!answer) return answer.take_error().Wrap(what);
  std::map<std::string, std::vector<Fd>> kept;
  for (keeper::Message& message : *answer) {
    if (message.text == "end") break;
    auto [verb, key] = keeper::SplitVerb(message.text);
    if (verb != "kept" || !keeper::ValidKey(key) || message.truncated) {
      return Error(what + ": unexpected answer " + message.text, EPROTO);
    }
    kept[std::string(key)] = std::move(message.fds);
  }
  return kept;
}

}  // namespace podvisor::supervisor::sandbox
