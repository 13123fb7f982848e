// Thin wrappers around the pidfd system calls (Linux 5.3+).
//
// A pidfd names one process for as long as the descriptor is open: unlike a
// pid it is never reused, so a signal sent through it can only reach the
// process we meant, even if that process exited and its pid was handed to
// someone else in between (S5.9). glibc 2.36 has no <sys/pidfd.h> on this
// platform, so the calls go through syscall(2).
//
// The kernel makes every pidfd close-on-exec; the descriptors here are
// owned by an Fd like every other podvisor descriptor.
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/fd.h"
#include "common/result.h"
#include "process/exit_info.h"

namespace podvisor::process {

// pidfd_open(pid): a pidfd for an existing process, including a zombie that
// has not been reaped yet. ESRCH if no such process exists.
Result<Fd> PidfdOpen(pid_t pid);

// pidfd_send_signal(pidfd, signo). The returned Error keeps ESRCH as its
// code when the process has already been reaped (see IsNoSuchProcess): the
// caller decided to signal a process that exited in the meantime, which is
// a normal race, not a failure. A zombie (exited, not yet reaped) still
// accepts signals and ignores them.
Status PidfdSendSignal(int pidfd, int signo);

// True when `error` says the target process no longer exists (ESRCH).
bool IsNoSuchProcess(const Error& error);

// How the process of `pidfd` ended, read from the pidfd itself
// (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux 6.15+): this works for a
// process that is not our child, such as a container init adopted by a
// supervisor that started after its parent died (S15.5). nullopt while the
// kernel has no exit to give: the process runs, or it has exited but its
// parent has not reaped it yet (the kernel records the exit at the reap).
// ENOTTY or EINVAL: the kernel cannot tell (before 6.15).
Result<std::optional<ExitInfo>> PidfdExitInfo(int pidfd);

}  // namespace podvisor::process
