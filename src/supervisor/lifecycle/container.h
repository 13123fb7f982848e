// The Lifecycle's per-container record: everything the decision core knows
// about one container of the pod. Internal to supervisor::Lifecycle; it is a
// header of its own only to keep lifecycle.h readable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "pod/model.h"
#include "pod/status.h"
#include "supervisor/lifecycle/backoff.h"
#include "supervisor/lifecycle/types.h"

namespace podvisor::supervisor::lifecycle {

// kSidecar is KEP-753's (an init-list entry with restartPolicy Always);
// kDraftSidecar is an entry of spec.containers with the 2018–2020 draft's
// lifecycle.type Sidecar (S12); kRegular is every other entry of
// spec.containers, a *standard* container in S12's words.
enum class ContainerRole { kInit, kSidecar, kRegular, kDraftSidecar };
std::string_view ContainerRoleName(ContainerRole role);

// Where a container is in its life.
enum class RunState {
  kWaiting,    // its turn in the start plan has not come (S1)
  kCreating,   // CreateContainer issued
  kCreated,    // created; its start waits for its turn (S1.4, or S1.1 when created ahead)
  kStarting,   // StartContainer issued
  kRunning,    // its process runs; StopStep says whether it is being stopped
  kBackOff,    // ended; a restart is scheduled (S4)
  kExited,     // ended and will not run again
  kAbandoned,  // the pod terminated before this instance started (S5.8)
};
std::string_view RunStateName(RunState state);

// The termination steps of a running instance (S5.2–S5.5, S3.3, S8.2).
enum class StopStep {
  kNone,            // not being stopped
  kPreStop,         // its preStop hook runs; the stop signal waits for it
  kWaitingForTurn,  // a sidecar whose preStop ended, waiting for S5.4/S12.5 order
  kHeld,            // S12.5: a standard container waiting for the draft sidecars' preStops
  kSignalled,       // stop signal sent; SIGKILL armed (the KillArmed state)
  kKilled,          // SIGKILL sent; waiting for the exit
};
std::string_view StopStepName(StopStep step);

// Why the supervisor is killing an instance. Written once per instance: a
// later cause (the pod stopping, our own SIGKILL) never replaces it.
enum class KillCause {
  kNone,
  kPodTermination,
  kLivenessFailed,
  kStartupFailed,
  kPostStartFailed,
  kResize,  // S17.3: resizePolicy RestartContainer
};
std::string_view KillCauseName(KillCause cause);

// A probe's bit in ContainerRecord::probes_active.
constexpr unsigned ProbeBit(ProbeKind kind) {
  return 1u << static_cast<unsigned>(kind);
}

inline const std::optional<pod::Probe>& ProbeOf(const pod::Container& spec, ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kStartup:
      return spec.startup_probe;
    case ProbeKind::kReadiness:
      return spec.readiness_probe;
    case ProbeKind::kLiveness:
      break;
  }
  return spec.liveness_probe;
}

struct ContainerRecord {
  ContainerRecord(pod::Container spec_in, ContainerRole role_in, size_t list_index_in,
                  BackoffOptions backoff_options)
      : spec(std::move(spec_in)),
        role(role_in),
        list_index(list_index_in),
        backoff(backoff_options) {}

  pod::Container spec;
  ContainerRole role;
  size_t list_index;  // index in spec.initContainers or spec.containers
  RunState state = RunState::kWaiting;

  // The current instance (== restart count when it was created). A create
  // that failed is retried under the same number: no container existed.
  int instance = 0;
  bool instance_exists = false;  // the runtime holds this instance
  bool ever_started = false;     // any instance ever ran
  std::string container_id;

  // The current instance's run.
  std::optional<MonoTime> started_mono;  // set once it runs
  WallTime started_wall{};
  bool post_start_running = false;
  bool post_start_done = false;
  bool startup_succeeded = false;
  bool readiness_success = false;  // S7.3: initial result failure
  unsigned probes_active = 0;      // bit per ProbeKind
  bool pre_stop_running = false;
  StopStep stop = StopStep::kNone;
  KillCause kill_cause = KillCause::kNone;
  std::optional<MonoTime> kill_budget_end;  // own budget of S3.3/S8.2 kills
  bool kill_budget_armed = false;
  MonoTime signalled_at{};
  std::optional<MonoTime> sigkill_at;   // set while the SIGKILL timer is armed
  bool start_attempt_finished = false;  // S1.4 gate, first start only
  // Created ahead of its turn in the init list (S1.1 orders the starts,
  // not the creates): nothing of it shows in status or events until its
  // turn comes. One try per container: a failed one is not reported, and
  // the turn creates it the ordinary way.
  bool ahead = false;

  // History, for status (S9.2).
  std::optional<pod::ContainerStateTerminated> terminated;       // this instance's end
  std::optional<pod::ContainerStateTerminated> last_terminated;  // the instance before
  std::optional<pod::ContainerStateWaiting> start_error;         // until a start succeeds
  bool last_exit_ok = false;  // exit 0 and not OOMKilled (S3.2, S9.1)

  // S16.6: pulls of this container's image that failed in a row; the
  // next pull waits the kubelet's image backoff. Zero again once a create
  // succeeds.
  int image_pull_failures = 0;
  bool image_pending = false;  // S16.5: the shell holds its create until its image is here

  CrashLoopBackoff backoff;
  Duration backoff_delay{};  // the current wait, for the CrashLoopBackOff message
  MonoTime restart_at{};
  bool restart_timer_armed = false;

  bool IsSidecar() const { return role == ContainerRole::kSidecar; }
  bool IsDraftSidecar() const { return role == ContainerRole::kDraftSidecar; }
  // An entry of spec.containers: a standard container or a draft sidecar.
  bool InRegularList() const {
    return role == ContainerRole::kRegular || role == ContainerRole::kDraftSidecar;
  }
  // The instance a restart creates: a new number only if the current one
  // existed (a failed create is retried under its own number).
  int NextInstance() const { return terminated ? instance + 1 : instance; }
  std::string Object() const { return "container/" + spec.name; }
};

}  // namespace podvisor::supervisor::lifecycle
