// The Lifecycle's states and causes as words (docs/STYLE.md: enums have
// names), for logs, status and test failures.

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

std::string_view ContainerRoleName(ContainerRole role) {
  switch (role) {
    case ContainerRole::kInit:
      return "init";
    case ContainerRole::kSidecar:
      return "sidecar";
    case ContainerRole::kRegular:
      return "regular";
    case ContainerRole::kDraftSidecar:
      return "draft-sidecar";
  }
  return "?";
}

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kWaiting:
      return "Waiting";
    case RunState::kCreating:
      return "Creating";
    case RunState::kCreated:
      return "Created";
    case RunState::kStarting:
      return "Starting";
    case RunState::kRunning:
      return "Running";
    case RunState::kBackOff:
      return "BackOff";
    case RunState::kExited:
      return "Exited";
    case RunState::kAbandoned:
      return "Abandoned";
  }
  return "?";
}

std::string_view StopStepName(StopStep step) {
  switch (step) {
    case StopStep::kNone:
      return "None";
    case StopStep::kPreStop:
      return "PreStopRunning";
    case StopStep::kWaitingForTurn:
      return "WaitingForTurn";
    case StopStep::kHeld:
      return "HeldForSidecarPreStops";
    case StopStep::kSignalled:
      return "Signalled";
    case StopStep::kKilled:
      return "Killed";
  }
  return "?";
}

std::string_view KillCauseName(KillCause cause) {
  switch (cause) {
    case KillCause::kNone:
      return "None";
    case KillCause::kPodTermination:
      return "PodTermination";
    case KillCause::kLivenessFailed:
      return "LivenessFailed";
    case KillCause::kStartupFailed:
      return "StartupFailed";
    case KillCause::kPostStartFailed:
      return "PostStartFailed";
    case KillCause::kResize:
      return "Resize";
  }
  return "?";
}

std::string_view TerminationCauseName(TerminationCause cause) {
  switch (cause) {
    case TerminationCause::kNone:
      return "None";
    case TerminationCause::kStopRequested:
      return "StopRequested";
    case TerminationCause::kCompleted:
      return "Completed";
    case TerminationCause::kDeadlineExceeded:
      return "DeadlineExceeded";
    case TerminationCause::kInitFailed:
      return "InitFailed";
    case TerminationCause::kSidecarExited:
      return "SidecarExited";
    case TerminationCause::kBackoffLimitExceeded:
      return "BackoffLimitExceeded";
  }
  return "?";
}

}  // namespace podvisor::supervisor::lifecycle
