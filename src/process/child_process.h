// ChildProcess: the one owner of a child process, after systemd's PidRef
// (pid + pidfd) and crun's pid_to_clean.
//
// The handle holds the pid and a pidfd. The pidfd is what the epoll loop
// waits on (it becomes readable when the process exits) and what signals
// go through (S5.9), so a signal can never reach a process that merely
// inherited a reused pid.
//
// Until it is committed, the handle is responsible for the process: its
// destructor SIGKILLs it and reaps it, so any error path between spawning
// a process and handing it to the supervisor leaves neither a running
// process nor a zombie behind. Commit() transfers the exit to the Reaper
// (the one place that collects exit statuses): the handle keeps the pidfd
// for signalling and polling, and its destructor only closes it.
//
// Who reaps, and why they cannot race:
//  - uncommitted: the destructor reaps with waitid(P_PIDFD, ...), which
//    only ever collects this one process, never another owner's status;
//  - committed: the Reaper reaps with waitid(P_ALL, ...), and the handle
//    never waits.
// The supervisor is single-threaded, so "race" means ordering across loop
// iterations. A child still uncommitted when the Reaper runs is reaped by
// the Reaper as an orphan (PID 1 must reap everything); its destructor
// then finds ECHILD, treats the process as gone, and its SIGKILL goes to
// the dead pidfd (ESRCH), never to a reused pid. The rule for callers is
// therefore: register with the Reaper and Commit() before returning to the
// event loop.
#pragma once

#include <sys/types.h>

#include <utility>

#include "common/fd.h"
#include "common/result.h"
#include "process/exit_info.h"

namespace podvisor::process {

class ChildProcess {
 public:
  ChildProcess() = default;
  // Takes ownership of `pidfd`, which must refer to `pid`; uncommitted.
  ChildProcess(pid_t pid, Fd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}

  // Adopts an existing child: the container init whose pid the OCI
  // runtime wrote to --pid-file and which was reparented to podvisor (PID 1
  // or child subreaper) when the runtime exited. Fails with ESRCH if the
  // process is gone, and with ECHILD if it is not a child of this process
  // (then its exit could never be collected: is podvisor a subreaper?).
  //
  // No pid-reuse race: pidfd_open pins the process first, and a child can
  // only be reaped by us, so between pidfd_open and the parent check the
  // pid cannot change hands. The returned handle is uncommitted.
  static Result<ChildProcess> Adopt(pid_t pid);

  // The child of this process that `pid` descends from: `pid` itself if it
  // is our child, else the ancestor whose exit will reparent it to us (we
  // are PID 1 or a subreaper), looking a few generations up; 0 when there
  // is none. A runtime may exit before a process it forked does: crun's
  // `run --detach` returns while its forked child, the container init's
  // parent, is still on its way out.
  static pid_t ChildAncestorOf(pid_t pid);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, 0)),
        pidfd_(std::move(other.pidfd_)),
        committed_(std::exchange(other.committed_, false)) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  bool valid() const { return pidfd_.valid(); }
  pid_t pid() const { return pid_; }
  // Readable (EPOLLIN) once the process has exited.
  int pidfd() const { return pidfd_.get(); }
  bool committed() const { return committed_; }

  // pidfd_send_signal (S5.9). An Error with code ESRCH (IsNoSuchProcess)
  // means the process has already been reaped; a zombie accepts the signal.
  Status SendSignal(int signo) const;

  // The Reaper now collects this process's exit; the destructor will only
  // close the pidfd.
  void Commit() { committed_ = true; }

  // Gives the process up entirely: returns the pidfd, empties the handle
  // (read pid() first), kills nothing. The caller becomes responsible for
  // the process.
  Fd Release();

  // What the destructor does to an uncommitted child, on demand and with
  // the outcome: SIGKILL, then a blocking waitid(P_PIDFD). Works on a
  // committed child too (the Reaper then never sees it). Empties the
  // handle. ECHILD means someone else reaped it first. The wait blocks
  // only as long as the kernel takes to kill the process (a task stuck in
  // uninterruptible sleep, e.g. on a dead NFS server, delays it).
  Result<ExitInfo> KillAndReap();

 private:
  void Reset();

  pid_t pid_ = 0;
  Fd pidfd_;
  bool committed_ = false;
};

}  // namespace podvisor::process
