#include "process/child_process.h"

#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <string>

#include "common/file_io.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"

namespace podvisor::process {
Result<ChildProcess> ChildProcess::Adopt(pid_t pid) {
  std::string what = "adopting pid " + std::to_string(pid);
  if (pid <= 0) return Error(what + ": not a process id", EINVAL);
  auto pidfd = PidfdOpen(pid);
  if (!pidfd) return pidfd.error().Wrap(what);
  // The process is pinned by the pidfd; if it is our child, nobody else can
  // reap it, so /proc/<pid> below still describes the same process.
  pid_t parent = ParentOf(pid);
  if (parent != ::getpid()) {
    return Error(what + ": its parent is pid " + std::to_string(parent) +
                     ", not this process (is podvisor PID 1 or a child subreaper?)",
                 ECHILD);
  }
  return ChildProcess(pid, std::move(*pidfd));
}

pid_t ChildProcess::ChildAncestorOf(pid_t pid) {
  // A runtime's process tree is shallow; the bound keeps a walk through
  // an unrelated tree (as PID 1, every process is our descendant) short.
  constexpr int kMaxGenerations = 4;
  pid_t self = ::getpid();
  for (int generation = 0; generation < kMaxGenerations && pid > 1; ++generation) {
    pid_t parent = ParentOf(pid);
    if (parent == self) return pid;
    pid = parent;
  }
  return 0;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Reset();
    pid_ = std::exchange(other.pid_, 0);
    pidfd_ = std::move(other.pidfd_);
    committed_ = std::exchange(other.committed_, false);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  Reset();
}

void ChildProcess::Reset() {
  if (pidfd_.valid() && !committed_) (void)KillAndReap();
  pidfd_.Reset();
  pid_ = 0;
  committed_ = false;
}

Status ChildProcess::SendSignal(int signo) const {
  std::string what = "signalling pid " + std::to_string(pid_);
  if (!pidfd_.valid()) return Error(what + ": no process handle", EBADF);
  if (auto sent = PidfdSendSignal(pidfd_.get(), signo); !sent) return sent.error().Wrap(what);
  return Ok();
}

Fd ChildProcess::Release() {
  pid_ = 0;
  committed_ = false;
  return std::move(pidfd_);
}

Result<ExitInfo> ChildProcess::KillAndReap() {
  std::string what = "killing pid " + std::to_string(pid_);
  if (!pidfd_.valid()) return Error(what + ": no process handle", EBADF);
  Fd pidfd = std::move(pidfd_);
  pid_t pid = std::exchange(pid_, 0);
  committed_ = false;

  // ESRCH: already reaped (by the Reaper, see the header); the wait below
  // then reports ECHILD. Any other failure (EPERM cannot happen for our
  // own child) is reported by the wait as well.
  (void)PidfdSendSignal(pidfd.get(), SIGKILL);

  siginfo_t info = {};
  for (;;) {
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd.get()), &info, WEXITED) ==
        0) {
      break;
    }
    if (errno == EINTR) continue;
    return Error::FromErrno("waiting for pid " + std::to_string(pid));
  }
  return ExitInfo::FromSiginfo(info);
}

}  // namespace podvisor::process
