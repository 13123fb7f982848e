// Recovery: removing what a previous supervisor of the same pod left behind
// when it was SIGKILLed (or the machine lost power) mid-run, before a new
// `podvisor run` of that pod starts anything.
//
// A supervisor that dies uncleanly leaves, under its pod's state dir
// DIR/<pod>/ and cgroup parent:
//   - containers still running, known only to the runtime's state under
//     DIR/<pod>/runtime (its --root): deleted with `delete --force` through
//     the same runtime, which kills them (runc kills the whole container);
//   - overlay roots, tmpfs volumes, the pod's /dev/shm and the sandbox's
//     namespace pins mounted under DIR/<pod>: unmounted, deepest first,
//     and the generated directories removed (oci::CleanupPod);
//   - cgroup directories <parent>/<pod>/...: after an unclean end (the
//     stale control.sock shows one), any process still in one (a container
//     whose runtime state was lost, e.g. a create killed half way) is
//     SIGKILLed through a pidfd; then the empty directories go;
//   - a stale control.sock, which ControlServer::Listen replaces;
//   - the pod's CNI attachment (network.json, saved before the first
//     plugin ran): DELeted in reverse order with the saved configuration
//     and result, which releases its address, portmap and firewall rules
//     (the veth went with the namespace when the holder died).
// Any runtime create in flight dies with its supervisor
// (PR_SET_PDEATHSIG). The sandbox holder outlives it once it keeps
// descriptors (S15.4): a pod that is not adopted (adoption.cc) loses its
// holder before this runs. The events.jsonl and logs are kept, as after a
// normal end.
//
// It refuses to touch anything while another supervisor still answers on
// the pod's control socket: two supervisors of one pod must not run, and
// the live one's containers are not leftovers.
//
// This runs in Executor::Setup, before the event loop exists, so it waits
// for its runtime calls synchronously (each bounded by the runtime timeout).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "hostfs/layout.h"
#include "oci/runtime_cli.h"

namespace podvisor::supervisor::executor {

struct RecoveryReport {
  int containers_deleted = 0;  // runtime state entries removed with delete --force
  int mounts_removed = 0;
  int processes_killed = 0;  // found in the pod's cgroups without runtime state
  int cgroups_removed = 0;
  bool network_detached = false;
  bool holder_ended = false;  // S15.4: the sandbox holder a supervisor left
  bool Any() const {
    return containers_deleted + mounts_removed + processes_killed + cgroups_removed > 0 ||
           network_detached || holder_ended;
  }
  std::string ToString() const;
};

struct RecoveryInput {
  const hostfs::PodLayout* layout = nullptr;
  const oci::RuntimeCli* runtime = nullptr;  // with the pod's --root
  std::string pod_cgroup;  // "<parent>/<pod>", relative to each cgroup mount; "" = none
  Duration runtime_timeout = std::chrono::minutes(2);
  // The pod's hostPort claims (host_claim.h) left here are released once
  // its network is detached; "" = none.
  std::filesystem::path host_claims_dir;
};

// The containers the runtime keeps state for under the pod's --root:
// runc, crun and the fake runtime keep one directory per container id.
std::vector<std::string> RuntimeContainerIds(const hostfs::PodLayout& layout);

// Runs one runtime call to its end, at most `timeout` (then SIGKILL):
// for recovery and the pod's last cleanup, where no loop runs any more.
Status RunRuntimeCall(const oci::RuntimeCommand& cmd, Duration timeout);

// S15.4: ends the sandbox holder a previous supervisor left (named by its
// state file, its pid, start time and command line checked) and removes
// that file and the holder's socket; whether a holder was ended.
bool EndLeftHolder(const hostfs::PodLayout& layout);

// Whether a supervisor accepts connections on its control `socket`: a
// socket file left by one that died refuses at once. Non-blocking: a live
// supervisor whose backlog is full (EAGAIN) is alive too, and an event
// loop never waits here.
bool SupervisorAnswers(const std::filesystem::path& socket);

// Fails with EADDRINUSE when a live supervisor serves the pod (nothing is
// touched then), or when a leftover container cannot be deleted.
Result<RecoveryReport> RecoverLeftovers(const RecoveryInput& in);

}  // namespace podvisor::supervisor::executor
