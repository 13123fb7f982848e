// Helpers shared by the signals tests: pipes, waiting on descriptors, and
// running a test body in a forked subprocess.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

#include "common/fd.h"

namespace podvisor::process::testing {

struct Pipe {
  Fd read;
  Fd write;
};

inline Pipe MakePipe() {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) < 0) return {};
  return {Fd(fds[0]), Fd(fds[1])};
}

// Waits until `fd` is readable (a pidfd: the process has exited). The
// timeout only bounds a broken test; nothing relies on it elapsing.
inline bool WaitReadable(int fd, int timeout_ms = 10'000) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    int n = ::poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    return n == 1 && (p.revents & POLLIN) != 0;
  }
}

// Everything until EOF.
inline std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buffer, static_cast<size_t>(n));
  }
}

// Runs `body` in a forked copy of the test process and returns the string
// it returned, or a description of how the subprocess failed. For tests
// that change process-wide state (the subreaper flag) that must not leak
// into the other tests of this binary.
inline std::string RunInForkedProcess(const std::function<std::string()>& body) {
  Pipe pipe = MakePipe();
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    pipe.read.Reset();
    std::string result = body();
    ssize_t ignored = ::write(pipe.write.get(), result.data(), result.size());
    (void)ignored;
    ::_exit(0);
  }
  pipe.write.Reset();
  std::string result = ReadAll(pipe.read.get());
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "subprocess failed: " + result;
  return result;
}

}  // namespace podvisor::process::testing

namespace podvisor::process::testing {

// True when this process has no child at all, running or zombie: the
// strongest "nothing left behind" a test can check.
inline bool HasNoChildren() {
  siginfo_t info = {};
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD;
}

// True while `pid` is our child and has not exited (or exited and was not
// reaped: use with WNOWAIT semantics in mind).
inline bool IsRunningChild(pid_t pid) {
  siginfo_t info = {};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == 0;
}

}  // namespace podvisor::process::testing
