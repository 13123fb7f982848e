// The supervisor's descriptor limit (docs/SEMANTICS.md S14.10).
//
// A supervisor holds several descriptors per container (log pipes, its
// log file, the init's pidfd, a pidfd and pipes per runtime call, probe
// sockets), so the usual soft RLIMIT_NOFILE of 1024 runs out near a
// hundred containers, while the hard limit (systemd's default 524288) is
// there to be used. Every role that supervises (`run`, the PID-1 init
// mode, the containerd shim) raises its soft limit to the hard one at
// start. What it starts (runtimes, hooks, and through them containers)
// gets the soft limit podvisor started with back, as systemd and Go do: a
// select() loop breaks on descriptors above 1024, and a container's limit
// is the operator's choice, not a side effect of ours.
//
// This file only owns the process-wide limit; how many descriptors a pod
// needs is the Executor's estimate (DescriptorsNeeded).
#pragma once

#include <cstdint>

namespace podvisor::process {

struct FdLimit {
  uint64_t original_soft = 0;  // what we started with, and what children get
  uint64_t soft = 0;           // now
  uint64_t hard = 0;
};

// Raises RLIMIT_NOFILE's soft limit to the hard one and remembers the
// original soft limit for children. Idempotent; when the limit cannot be
// read or raised, it stays as it was.
FdLimit RaiseFdLimit();

// The limit now (RLIM_INFINITY reads as UINT64_MAX).
FdLimit CurrentFdLimit();

// In a child between fork and exec (async-signal-safe: one getrlimit and
// one setrlimit, no allocation): puts back the soft limit podvisor
// started with, if RaiseFdLimit raised it. A failure is ignored: the
// child keeps the higher limit, which is no reason not to run it.
void RestoreFdLimitInChild();

}  // namespace podvisor::process
