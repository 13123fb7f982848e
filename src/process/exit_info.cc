#include "process/exit_info.h"

#include "common/signal_names.h"

namespace podvisor::process {

const char* ExitKindName(ExitKind kind) {
  switch (kind) {
    case ExitKind::kExited:
      return "exited";
    case ExitKind::kKilled:
      return "killed";
  }
  return "unknown";
}

ExitInfo ExitInfo::FromSiginfo(const siginfo_t& info) {
  switch (info.si_code) {
    case CLD_KILLED:
      return Killed(info.si_pid, info.si_status, false);
    case CLD_DUMPED:
      return Killed(info.si_pid, info.si_status, true);
    default:
      // CLD_EXITED. Stop/continue reports (CLD_STOPPED, CLD_CONTINUED,
      // CLD_TRAPPED) never reach here: nothing waits with WSTOPPED or
      // WCONTINUED.
      return Exited(info.si_pid, info.si_status);
  }
}

int ExitInfo::KubernetesExitCode() const {
  return exited() ? code : 128 + signal;
}

std::string ExitInfo::ToString() const {
  if (exited()) return "exited with code " + std::to_string(code);
  std::string out = "killed by " + SignalName(signal);
  if (core_dumped) out += " (core dumped)";
  return out;
}

std::ostream& operator<<(std::ostream& out, const ExitInfo& info) {
  return out << "pid " << info.pid << ' ' << info.ToString();
}

}  // namespace podvisor::process
