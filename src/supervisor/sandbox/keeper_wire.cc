#include "supervisor/sandbox/keeper_wire.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace podvisor::supervisor::sandbox::keeper {

bool ValidKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKey) return false;
  for (char c : key) {
    if (c <= ' ' || c == '\x7f') return false;
  }
  return true;
}

std::pair<std::string_view, std::string_view> SplitVerb(std::string_view text) {
  auto space = text.find(' ');
  if (space == std::string_view::npos) return {text, {}};
  return {text.substr(0, space), text.substr(space + 1)};
}

Status SendMessage(int sock, std::string_view text, std::span<const int> fds) {
  if (fds.size() > kMaxFds) return Error("more than 8 descriptors in one message", EINVAL);
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return Ok();
    if (errno != EINTR) return Error::FromErrno("sending to the sandbox keeper");
  }
}

Result<Message> ReceiveMessage(int sock) {
  Message out;
  char buf[kMaxMessage];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  for (;;) {
    // MSG_CMSG_CLOEXEC: the descriptors are close-on-exec from the first
    // instant, like every other podvisor descriptor.
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n >= 0) break;
    if (errno != EINTR) return Error::FromErrno("receiving from the sandbox keeper");
  }
  // Whatever descriptors arrived are owned before anything else is
  // looked at, so that no path leaks them.
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof fd);
      out.fds.emplace_back(fd);
    }
  }
  if (n == 0 && out.fds.empty()) {
    return Error("the sandbox keeper's connection ended", ECONNRESET);
  }
  out.text.assign(buf, static_cast<std::size_t>(n));
  out.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  return out;
}

bool IsEndOfConnection(const Error& error) {
  return error.code() == EPIPE || error.code() == ECONNRESET || error.code() == ENOTCONN;
}

}  // namespace podvisor::supervisor::sandbox::keeper
