// TCP helpers of the tier-3 tests that reach a pod from the host: a free
// port for a hostPort, and a plain HTTP GET with a bounded wait.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace podvisor::e2e {

// GET / over TCP; "" when nothing answered within the timeout.
inline std::string HttpGet(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  std::string out;
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, 3000) == 1 && (p.revents & POLLOUT)) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    std::string req = "GET / HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
    if (err == 0 && ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) > 0) {
      char buf[4096];
      for (;;) {
        pollfd r{fd, POLLIN, 0};
        if (::poll(&r, 1, 3000) != 1) break;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
      }
    }
  }
  ::close(fd);
  return out;
}

// HttpGet until the answer holds `want` (a server the pod just started
// may not listen yet), at most 5 s; the last answer.
inline std::string HttpGetEventually(const std::string& ip, int port, const std::string& want) {
  std::string got;
  for (int i = 0; i < 50; ++i) {
    got = HttpGet(ip, port);
    if (got.find(want) != std::string::npos) break;
    ::usleep(100'000);
  }
  return got;
}

// A TCP port nothing on the host listens on now, for a hostPort: other
// pods and services may run on this host, so no port is fixed.
inline int FreeHostPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace podvisor::e2e
