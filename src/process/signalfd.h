// Signal delivery to the supervisor's event loop.
//
// podvisor installs no signal handlers. The signals it cares about are
// blocked in the (single) thread before any child exists, and a signalfd
// turns them into readable records the epoll loop consumes like any other
// descriptor. Blocking first matters: a signal that arrives while it is
// unblocked and has its default disposition would terminate the process
// (SIGTERM) or be discarded (SIGCHLD) before the signalfd ever sees it.
//
// Nothing here restores anything implicitly: destroying a SignalFd closes
// the descriptor but leaves the signals blocked, because the supervisor
// keeps them blocked for its whole life, and silently unblocking a pending
// SIGTERM on some error path would kill it. Code that wants the old mask
// back (tests) saves it from BlockSignals and calls SetSignalMask.
//
// The blocked mask and ignored dispositions are inherited across fork and
// exec; ResetSignalsForChild() undoes both in a freshly forked child so a
// container or hook never starts with SIGTERM blocked.
#pragma once

#include <sys/signalfd.h>

#include <utility>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "process/signal_set.h"

namespace podvisor::process {

// Adds `signals` to the calling thread's blocked mask; returns the mask
// that was in effect before, so a caller may restore it.
Result<SignalSet> BlockSignals(const SignalSet& signals);

// Replaces the calling thread's blocked mask.
Status SetSignalMask(const SignalSet& mask);

// The calling thread's current blocked mask.
SignalSet CurrentSignalMask();

// For the child between fork and exec: every disposition back to SIG_DFL
// and an empty blocked mask. Async-signal-safe (sigaction and sigprocmask
// only, no allocation); errors are ignored because there is nobody to
// report them to and each call is independent. Handlers would be reset by
// exec anyway, but SIG_IGN and the mask survive exec.
void ResetSignalsForChild() noexcept;

class SignalFd {
 public:
  SignalFd() = default;

  // Blocks `signals` in the calling thread, then opens a non-blocking,
  // close-on-exec signalfd for them. The supervisor calls this once at
  // start-up, before any thread or child exists.
  static Result<SignalFd> Create(const SignalSet& signals);

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  const SignalSet& signals() const { return signals_; }

  // Every pending record, draining the descriptor until EAGAIN; empty when
  // nothing is pending. Standard signals coalesce: two SIGCHLDs that arrive
  // before a read yield one record, so SIGCHLD is a hint to reap until
  // there is nothing left, never a count of exited children.
  Result<std::vector<signalfd_siginfo>> Read();

 private:
  SignalFd(Fd fd, SignalSet signals) : fd_(std::move(fd)), signals_(signals) {}

  Fd fd_;
  SignalSet signals_;
};

}  // namespace podvisor::process
