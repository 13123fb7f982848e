// ExitInfo: how a child process ended, as waitid(2) reports it.
//
// A process either exits with a code or is killed by a signal (and maybe
// dumps core). The supervisor turns this into a container's terminated
// state; Kubernetes reports a signal death as exit code 128+signal, the
// shell convention, and keeps the signal separately.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <ostream>
#include <string>

namespace podvisor::process {

enum class ExitKind { kExited, kKilled };

// "exited", "killed".
const char* ExitKindName(ExitKind kind);

struct ExitInfo {
  pid_t pid = 0;
  ExitKind kind = ExitKind::kExited;
  int code = 0;    // exit code, when kind == kExited
  int signal = 0;  // terminating signal, when kind == kKilled
  bool core_dumped = false;

  static ExitInfo Exited(pid_t pid, int code) { return {pid, ExitKind::kExited, code, 0, false}; }
  static ExitInfo Killed(pid_t pid, int signo, bool core_dumped = false) {
    return {pid, ExitKind::kKilled, 0, signo, core_dumped};
  }
  // From a siginfo filled by waitid(..., WEXITED): si_code is CLD_EXITED,
  // CLD_KILLED or CLD_DUMPED.
  static ExitInfo FromSiginfo(const siginfo_t& info);

  bool exited() const { return kind == ExitKind::kExited; }
  bool killed() const { return kind == ExitKind::kKilled; }
  bool success() const { return exited() && code == 0; }

  // The exit code Kubernetes reports: the code itself, or 128 + signal for
  // a signal death (SIGKILL -> 137, SIGTERM -> 143).
  int KubernetesExitCode() const;

  // "exited with code 3", "killed by SIGKILL", "killed by SIGSEGV (core
  // dumped)". The pid is left out: callers name the process themselves.
  std::string ToString() const;

  friend bool operator==(const ExitInfo&, const ExitInfo&) = default;
};

std::ostream& operator<<(std::ostream& out, const ExitInfo& info);

}  // namespace podvisor::process
