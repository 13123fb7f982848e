#include "process/pidfd.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

namespace {

// <linux/pidfd.h>'s struct pidfd_info, its first published size (64
// bytes, PIDFD_INFO_SIZE_VER0): glibc 2.36's headers predate it. The
// ioctl's size field tells the kernel which version we read.
struct PidfdInfo {
  uint64_t mask;
  uint64_t cgroupid;
  uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  int32_t exit_code;
};
static_assert(sizeof(PidfdInfo) == 64);
constexpr uint64_t kPidfdInfoExit = 1U << 3;                         // PIDFD_INFO_EXIT
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);  // PIDFD_GET_INFO

}  // namespace

Result<std::optional<ExitInfo>> PidfdExitInfo(int pidfd) {
  PidfdInfo info{};
  info.mask = kPidfdInfoExit;
  if (::ioctl(pidfd, kPidfdGetInfo, &info) != 0) {
    // ESRCH: gone and no exit recorded (reaped before the kernel kept
    // exits); the caller cannot learn more either way.
    if (errno == ESRCH) return std::optional<ExitInfo>();
    return Error::FromErrno("PIDFD_GET_INFO");
  }
  if ((info.mask & kPidfdInfoExit) == 0) return std::optional<ExitInfo>();
  const int status = info.exit_code;
  const auto pid = static_cast<pid_t>(info.pid);
  if (WIFSIGNALED(status)) {
    return std::optional<ExitInfo>(ExitInfo::Killed(pid, WTERMSIG(status), WCOREDUMP(status)));
  }
  return std::optional<ExitInfo>(ExitInfo::Exited(pid, WEXITSTATUS(status)));
}

}  // namespace podvisor::process
