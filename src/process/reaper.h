// Reaping: the one place that collects exit statuses.
//
// podvisor is PID 1 or a child subreaper, so besides the processes it
// spawns it inherits every orphan below it: a container init once the OCI
// runtime that created it exits, daemons that hooks leave behind, the
// grandchildren of a probe command. All of them become zombies until
// someone waits for them, and only one waitid(P_ALL) loop may do so, or two
// owners would steal each other's statuses.
//
// Reaper::Dispatch follows systemd's manager_dispatch_sigchld: peek at the
// next exited child with WNOWAIT (it stays a zombie, so /proc/<pid> still
// describes it), attribute the pid to an owner through a registry
// (pid -> handler), then reap exactly that pid and tell the owner. Pids
// nobody registered are orphans: counted, offered to an optional handler
// while still a zombie, and reaped. Before an orphan is reaped, though, the
// registered children that have exited too are dispatched first, since one
// of their handlers may register it: a container init that exited while
// the runtime's `run --detach` was still running is handed to us together
// with that call's exit, and the call's handler adopts it from the pid
// file. Without this the order of the two would be the kernel's order of
// the children list, which is no contract. Like crun it loops until no exited child
// is left (or ECHILD), because SIGCHLD coalesces and one signal may stand
// for many exits.
//
// See child_process.h for how this interacts with ChildProcess: a
// committed child is reaped here, an uncommitted one by its own destructor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "process/child_process.h"
#include "process/exit_info.h"

namespace podvisor::process {

// PR_SET_CHILD_SUBREAPER, so that orphans below this process are
// reparented to it instead of to PID 1. A no-op when this process is PID 1
// (of its pid namespace), which inherits orphans anyway. The flag is not
// inherited by children (fork, clone) and survives execve.
Status SetChildSubreaper();
Status ClearChildSubreaper();
Result<bool> IsChildSubreaper();

// The next exited child, left a zombie (waitid WNOWAIT); nullopt when no
// child has exited, or there are no children at all (ECHILD).
Result<std::optional<ExitInfo>> PeekExitedChild();

// Reaps `pid` if it has exited; nullopt if it is still running or is not
// (or no longer) a child.
Result<std::optional<ExitInfo>> ReapExitedChild(pid_t pid);

// Reaps every exited child, whoever owns it, until none is left or ECHILD.
// For shutdown and tests; the supervisor's loop uses Reaper::Dispatch.
Result<std::vector<ExitInfo>> ReapAll();

class Reaper {
 public:
  using ExitHandler = std::function<void(const ExitInfo&)>;

  // Registers the owner of `pid`: `on_exit` runs once, after the process
  // has been reaped, and the registration is dropped before it runs (so it
  // may Watch a new process). EEXIST if `pid` is already registered.
  Status Watch(pid_t pid, ExitHandler on_exit);

  // Watch(child.pid()) and child.Commit(): from now on the exit is
  // collected here, and the handle's destructor no longer kills.
  Status Track(ChildProcess& child, ExitHandler on_exit);

  // Drops a registration; the exit will then count as an orphan. Returns
  // whether `pid` was registered.
  bool Unwatch(pid_t pid);
  bool IsWatched(pid_t pid) const { return handlers_.count(pid) != 0; }
  size_t watched_count() const { return handlers_.size(); }

  // Called for each orphan *before* it is reaped: the pid is still a zombie
  // while the handler runs, so /proc/<pid>/cgroup and friends can tell
  // where it came from (e.g. a container init that died before the
  // supervisor adopted it from the runtime's pid file). The handler must
  // not reap, but it may claim the process: if it Watches (or Tracks) the
  // pid, the exit goes to that owner and is no orphan.
  void SetOrphanHandler(ExitHandler on_orphan) { on_orphan_ = std::move(on_orphan); }

  // While `hold` answers true, an exited child nobody claims is left a
  // zombie instead of being reaped as an orphan, and Dispatch returns: an
  // owner may be about to claim it. The case: a multithreaded runtime
  // (runc is Go) hands the container init to us when its last thread
  // exits, a moment before the runtime process itself can be waited for,
  // so an init that exited at once can be seen before the call whose
  // handler adopts it. The call's own exit (a SIGCHLD) runs Dispatch
  // again; watched children are still dispatched meanwhile.
  void SetOrphanHold(std::function<bool()> hold) { hold_orphans_ = std::move(hold); }

  // Reaps every exited child as described above. Returns how many were
  // reaped. An Error means waitid itself failed (not ECHILD); the children
  // reaped before it have been dispatched.
  Result<size_t> Dispatch();

  uint64_t orphans_reaped() const { return orphans_reaped_; }

 private:
  // Reaps and dispatches every registered child that has exited; returns
  // how many.
  Result<size_t> DispatchWatched();
  Result<size_t> DispatchOne(pid_t pid);  // reaps `pid` if it exited, tells its owner

  std::unordered_map<pid_t, ExitHandler> handlers_;
  ExitHandler on_orphan_;
  std::function<bool()> hold_orphans_;
  uint64_t orphans_reaped_ = 0;
};

}  // namespace podvisor::process
