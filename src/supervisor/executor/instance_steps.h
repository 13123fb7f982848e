// The named steps of one container instance in the shell: create (or
// `run --detach`) → adopt the init → start → exit → delete, as an enum and
// a pure transition function, in the style of the core's StopStep. The
// Executor feeds what happened (a runtime call exited, the init exited,
// the pod asked for a start or a delete) and carries out what comes back;
// the orderings the pod relies on (RuntimeCreated before RuntimeStarted
// before ContainerExited, each once) are decided here, with no I/O, so
// instance_steps_test.cc drives them through every order of exits.
#pragma once

#include <string_view>
#include <vector>

namespace podvisor::supervisor::executor {

enum class InstanceStep {
  kPreparing,     // the record exists; config, overlay and pipes are being made
  kCreating,      // the create (or `run --detach`) call, or the fork it left, runs
  kCreated,       // its init adopted and RuntimeCreated reported; no start asked
  kStartedByRun,  // created and started by `run --detach`: StartContainer has nothing to ask
  kStarting,      // the runtime's start runs
  kStarted,       // RuntimeStarted reported
  kStartFailed,   // RuntimeFailed(start) reported
  kDeleting,      // the runtime's delete runs, or waits to be spawned again (S14.11)
  kDeleted,       // the runtime holds nothing of it any more
};
std::string_view InstanceStepName(InstanceStep step);

// Where the init's exit is. An exit seen while a start is in flight (or
// while the pod has yet to ask for the start of a `run --detach`) is held
// and reported after the start's own report, in order.
enum class ExitStep {
  kNone,      // not seen
  kHeld,      // seen, waiting for the start's report
  kReported,  // ContainerExited fed (a failed create's: dropped, nothing to report)
};
std::string_view ExitStepName(ExitStep step);

struct InstanceState {
  InstanceStep step = InstanceStep::kPreparing;
  ExitStep exit = ExitStep::kNone;
  bool by_run = false;               // its create is `run --detach`
  bool waiting_for_fork = false;     // the runtime's fork still parents the init
  bool runtime_holds_state = false;  // a create was spawned: delete before cleanup
  bool create_failed = false;        // S14.11: its cgroup may hold a remnant
  bool delete_asked = false;         // asked while a call ran: done when it returns

  // Reported or dropped: nothing about the exit is left to do.
  bool Exited() const { return exit == ExitStep::kReported; }
  bool Deleting() const { return step == InstanceStep::kDeleting; }
  bool Deleted() const { return step == InstanceStep::kDeleted; }
  // The pod's end must still delete it from the runtime.
  bool NeedsDelete() const { return runtime_holds_state && !Deleted(); }
};

// What can happen to an instance.
enum class InstanceInput {
  kCreateSpawned,      // `create` runs
  kRunSpawned,         // `run --detach` runs
  kCreateFailed,       // preparing, spawning or adopting failed
  kCreateCallExited,   // the create (or run) call exited 0
  kCreateCallFailed,   // ... exited otherwise (or was killed at --runtime-timeout)
  kInitAdopted,        // the init is our child now
  kInitHeldByFork,     // the runtime's fork still parents it: its exit is awaited
  kForkExited,         // that fork exited 0
  kForkFailed,         // ... exited otherwise
  kInitExited,         // the reaper saw the init exit
  kStartAsked,         // the pod's StartContainer
  kStartReturned,      // the runtime's start exited 0
  kStartFailed,        // ... exited otherwise, or could not be spawned
  kDeleteAsked,        // the pod's DeleteContainer, or its end
  kDeleteSpawnFailed,  // S14.11: the delete could not be spawned
  kDeleteRetry,        // S14.11: its retry timer fired
  kDeleteExited,       // the runtime's delete exited (either way)
};
std::string_view InstanceInputName(InstanceInput input);

// What the shell must do, in the order given.
enum class InstanceAction {
  kAdoptInit,           // read the pid file and adopt the init (or find the fork)
  kReportCreated,       // feed RuntimeCreated
  kReportCreateFailed,  // feed RuntimeFailed(create)
  kSpawnStart,          // spawn the runtime's start
  kReportStarted,       // feed RuntimeStarted
  kReportStartFailed,   // feed RuntimeFailed(start)
  kReportExited,        // feed ContainerExited
  kSpawnDelete,         // spawn the runtime's delete
  kRetryDeleteLater,    // S14.11: arm the delete's retry timer
  kFinishDelete,        // unmount, unbind, remove the environment files, release descriptors
};
std::string_view InstanceActionName(InstanceAction action);

struct InstanceTransition {
  InstanceState next;
  std::vector<InstanceAction> actions;
};

// Pure: the state after `input` and what the shell must do now. An input
// that does not apply to the state changes nothing (a stale report).
InstanceTransition Transition(const InstanceState& state, InstanceInput input);

}  // namespace podvisor::supervisor::executor
