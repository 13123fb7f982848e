#include "process/reaper.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

namespace podvisor::process {
namespace {

// One waitid call, retried on EINTR. Returns the exit, or nullopt when no
// child matches or none has exited yet (WNOHANG leaves si_pid at 0, which
// is why the siginfo is zeroed first).
Result<std::optional<ExitInfo>> WaitOnce(idtype_t idtype, id_t id, int options, const char* what) {
  for (;;) {
    siginfo_t info = {};
    if (::waitid(idtype, id, &info, WEXITED | WNOHANG | options) == 0) {
      if (info.si_pid == 0) return std::optional<ExitInfo>();
      return std::optional<ExitInfo>(ExitInfo::FromSiginfo(info));
    }
    if (errno == EINTR) continue;
    if (errno == ECHILD) return std::optional<ExitInfo>();
    return Error::FromErrno(what);
  }
}

}  // namespace

Status SetChildSubreaper() {
  if (::getpid() == 1) return Ok();
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
    return Error::FromErrno("PR_SET_CHILD_SUBREAPER");
  return Ok();
}

Status ClearChildSubreaper() {
  if (::getpid() == 1) return Ok();
  if (::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) < 0)
    return Error::FromErrno("clearing PR_SET_CHILD_SUBREAPER");
  return Ok();
}

Result<bool> IsChildSubreaper() {
  int flag = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &flag, 0, 0, 0) < 0)
    return Error::FromErrno("PR_GET_CHILD_SUBREAPER");
  return flag != 0;
}

Result<std::optional<ExitInfo>> PeekExitedChild() {
  return WaitOnce(P_ALL, 0, WNOWAIT, "waitid(P_ALL, WNOWAIT)");
}

Result<std::optional<ExitInfo>> ReapExitedChild(pid_t pid) {
  return WaitOnce(P_PID, static_cast<id_t>(pid), 0, "waitid(P_PID)");
}

Result<std::vector<ExitInfo>> ReapAll() {
  std::vector<ExitInfo> reaped;
  for (;;) {
    auto exit = WaitOnce(P_ALL, 0, 0, "waitid(P_ALL)");
    if (!exit) return exit.take_error();
    if (!exit->has_value()) return reaped;
    reaped.push_back(**exit);
  }
}

Status Reaper::Watch(pid_t pid, ExitHandler on_exit) {
  if (pid <= 0) return Error("watching pid " + std::to_string(pid) + ": not a process id", EINVAL);
  if (!handlers_.emplace(pid, std::move(on_exit)).second) {
    return Error("watching pid " + std::to_string(pid) + ": already watched", EEXIST);
  }
  return Ok();
}

Status Reaper::Track(ChildProcess& child, ExitHandler on_exit) {
  if (!child.valid()) return Error("tracking a child: empty process handle", EBADF);
  if (auto watched = Watch(child.pid(), std::move(on_exit)); !watched) return watched;
  child.Commit();
  return Ok();
}

bool Reaper::Unwatch(pid_t pid) {
  return handlers_.erase(pid) != 0;
}

Result<size_t> Reaper::Dispatch() {
  size_t reaped = 0;
  for (;;) {
    auto peeked = PeekExitedChild();
    if (!peeked) return peeked.take_error();
    if (!peeked->has_value()) return reaped;
    pid_t pid = (*peeked)->pid;

    if (!handlers_.count(pid)) {
      // Registered exits first: a handler may claim this one (header).
      auto watched = DispatchWatched();
      if (!watched) return watched.take_error();
      reaped += *watched;
      if (handlers_.count(pid)) continue;                   // claimed: the next peek finds it
      if (hold_orphans_ && hold_orphans_()) return reaped;  // header: SetOrphanHold
      if (on_orphan_) on_orphan_(**peeked);
      if (handlers_.count(pid)) continue;
    }
    auto one = DispatchOne(pid);
    if (!one) return one.take_error();
    // Nothing else in this single-threaded process reaps between the peek
    // and here; if the child is nevertheless gone, stop rather than spin on
    // a peek that keeps answering with it.
    if (*one == 0) return reaped;
    reaped += *one;
  }
}

Result<size_t> Reaper::DispatchWatched() {
  std::vector<pid_t> pids;
  pids.reserve(handlers_.size());
  for (const auto& [pid, handler] : handlers_) pids.push_back(pid);
  size_t reaped = 0;
  for (pid_t pid : pids) {
    if (!handlers_.count(pid)) continue;  // dropped by an earlier handler
    auto one = DispatchOne(pid);          // 0 while it runs
    if (!one) return one.take_error();
    reaped += *one;
  }
  return reaped;
}

Result<size_t> Reaper::DispatchOne(pid_t pid) {
  auto exit = ReapExitedChild(pid);
  if (!exit) return exit.take_error();
  if (!exit->has_value()) return 0;
  auto owner = handlers_.find(pid);
  if (owner == handlers_.end()) {
    ++orphans_reaped_;
    return 1;
  }
  // The registration goes before the handler runs: it may Watch a new
  // process, possibly one that was given the same pid.
  ExitHandler handler = std::move(owner->second);
  handlers_.erase(owner);
  if (handler) handler(**exit);
  return 1;
}

}  // namespace podvisor::process
