#include "process/pidfd.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>

#include "common/signal_names.h"

namespace podvisor::process {

Result<Fd> PidfdOpen(pid_t pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return Error::FromErrno("pidfd_open pid " + std::to_string(pid));
  return Fd(fd);
}

Status PidfdSendSignal(int pidfd, int signo) {
  if (::syscall(SYS_pidfd_send_signal, pidfd, signo, nullptr, 0) < 0) {
    return Error::FromErrno("pidfd_send_signal " + SignalName(signo));
  }
  return Ok();
}

bool IsNoSuchProcess(const Error& error) {
  return error.code() == ESRCH;
}

}  // namespace podvisor::process
