// The instance's steps (instance_steps.h): one function per phase of its
// life, each a switch over what can happen in it.
#include "supervisor/executor/instance_steps.h"

namespace podvisor::supervisor::executor {
namespace {

using Step = InstanceStep;
using Input = InstanceInput;
using Action = InstanceAction;

// The start's report (or the create's, for an instance that will not be
// started) comes first; an exit seen meanwhile follows it.
void ReportHeldExit(InstanceTransition& t) {
  if (t.next.exit != ExitStep::kHeld) return;
  t.next.exit = ExitStep::kReported;
  t.actions.push_back(Action::kReportExited);
}

// A record the runtime holds nothing of (its create never ran) is cleaned
// up at once; otherwise the runtime's delete runs first.
void Delete(InstanceTransition& t) {
  t.next.delete_asked = false;
  if (!t.next.runtime_holds_state) {
    t.next.step = Step::kDeleted;
    t.actions.push_back(Action::kFinishDelete);
    return;
  }
  t.next.step = Step::kDeleting;
  t.actions.push_back(Action::kSpawnDelete);
}

// A failed create (or run) never started as far as the pod is concerned:
// an init it started is reaped without a report, the runtime's leftovers
// are deleted, then the failure is reported.
void FailCreate(InstanceTransition& t) {
  t.next.create_failed = true;
  t.next.waiting_for_fork = false;
  if (t.next.exit == ExitStep::kHeld) t.next.exit = ExitStep::kReported;
  Delete(t);
  t.actions.push_back(Action::kReportCreateFailed);
}

void OnAdopted(InstanceTransition& t) {
  t.next.step = t.next.by_run ? Step::kStartedByRun : Step::kCreated;
  t.actions.push_back(Action::kReportCreated);
  // A created instance's exit is reported as it comes; a started-by-run
  // one's waits for the pod's StartContainer, unless the pod gave it up.
  if (t.next.step == Step::kCreated || t.next.delete_asked) ReportHeldExit(t);
  if (t.next.delete_asked) Delete(t);
}

void Creating(InstanceTransition& t, Input input) {
  InstanceState& s = t.next;
  bool creating = s.step == Step::kCreating;
  switch (input) {
    case Input::kCreateSpawned:
    case Input::kRunSpawned:
      if (s.step != Step::kPreparing) return;
      s.step = Step::kCreating;
      s.runtime_holds_state = true;
      s.by_run = input == Input::kRunSpawned;
      return;
    case Input::kCreateFailed:
      if (s.step == Step::kPreparing || creating) FailCreate(t);
      return;
    case Input::kCreateCallExited:
      if (creating && !s.waiting_for_fork) t.actions.push_back(Action::kAdoptInit);
      return;
    case Input::kCreateCallFailed:
      if (creating && !s.waiting_for_fork) FailCreate(t);
      return;
    case Input::kInitHeldByFork:
      if (creating) s.waiting_for_fork = true;
      return;
    case Input::kForkExited:
      if (!creating || !s.waiting_for_fork) return;
      s.waiting_for_fork = false;
      t.actions.push_back(Action::kAdoptInit);
      return;
    case Input::kForkFailed:
      if (creating && s.waiting_for_fork) FailCreate(t);
      return;
    case Input::kInitAdopted:
      if (creating) OnAdopted(t);
      return;
    default:
      return;
  }
}

void Starting(InstanceTransition& t, Input input) {
  InstanceState& s = t.next;
  switch (input) {
    case Input::kStartAsked:
      if (s.step == Step::kCreated) {
        s.step = Step::kStarting;
        t.actions.push_back(Action::kSpawnStart);
      } else if (s.step == Step::kStartedByRun) {
        // Its create was `run --detach`: nothing left to ask the runtime.
        s.step = Step::kStarted;
        t.actions.push_back(Action::kReportStarted);
        ReportHeldExit(t);
      }
      return;
    case Input::kStartReturned:
    case Input::kStartFailed: {
      if (s.step != Step::kStarting) return;
      bool ok = input == Input::kStartReturned;
      s.step = ok ? Step::kStarted : Step::kStartFailed;
      t.actions.push_back(ok ? Action::kReportStarted : Action::kReportStartFailed);
      ReportHeldExit(t);
      if (s.delete_asked) Delete(t);
      return;
    }
    default:
      return;
  }
}

void OnInitExited(InstanceTransition& t) {
  InstanceState& s = t.next;
  if (s.exit != ExitStep::kNone) return;
  if (s.create_failed) {
    s.exit = ExitStep::kReported;  // never started for the pod: nothing to report
    return;
  }
  switch (s.step) {
    case Step::kPreparing:
    case Step::kCreating:
    case Step::kStartedByRun:
    case Step::kStarting:
      s.exit = ExitStep::kHeld;
      return;
    default:
      s.exit = ExitStep::kReported;
      t.actions.push_back(Action::kReportExited);
  }
}

void Deleting(InstanceTransition& t, Input input) {
  InstanceState& s = t.next;
  switch (input) {
    case Input::kDeleteAsked:
      if (s.step == Step::kDeleting || s.step == Step::kDeleted) return;
      if (s.step == Step::kCreating || s.step == Step::kStarting) {
        // Not under a call that runs: deleted once it returned.
        s.delete_asked = true;
        return;
      }
      // S5.8: started by its run, but never to be started for the pod: the
      // delete stops it, and its exit is reported as a created one's.
      if (s.step == Step::kStartedByRun) ReportHeldExit(t);
      Delete(t);
      return;
    case Input::kDeleteSpawnFailed:
      if (s.step == Step::kDeleting) t.actions.push_back(Action::kRetryDeleteLater);
      return;
    case Input::kDeleteRetry:
      if (s.step == Step::kDeleting) t.actions.push_back(Action::kSpawnDelete);
      return;
    case Input::kDeleteExited:
      if (s.step != Step::kDeleting) return;
      s.step = Step::kDeleted;
      s.runtime_holds_state = false;
      t.actions.push_back(Action::kFinishDelete);
      return;
    default:
      return;
  }
}

}  // namespace

InstanceTransition Transition(const InstanceState& state, InstanceInput input) {
  InstanceTransition t{state, {}};
  switch (input) {
    case Input::kStartAsked:
    case Input::kStartReturned:
    case Input::kStartFailed:
      Starting(t, input);
      break;
    case Input::kInitExited:
      OnInitExited(t);
      break;
    case Input::kDeleteAsked:
    case Input::kDeleteSpawnFailed:
    case Input::kDeleteRetry:
    case Input::kDeleteExited:
      Deleting(t, input);
      break;
    default:
      Creating(t, input);
  }
  return t;
}

std::string_view InstanceStepName(InstanceStep step) {
  switch (step) {
    case Step::kPreparing:
      return "Preparing";
    case Step::kCreating:
      return "Creating";
    case Step::kCreated:
      return "Created";
    case Step::kStartedByRun:
      return "StartedByRun";
    case Step::kStarting:
      return "Starting";
    case Step::kStarted:
      return "Started";
    case Step::kStartFailed:
      return "StartFailed";
    case Step::kDeleting:
      return "Deleting";
    case Step::kDeleted:
      return "Deleted";
  }
  return "?";
}

std::string_view ExitStepName(ExitStep step) {
  switch (step) {
    case ExitStep::kNone:
      return "None";
    case ExitStep::kHeld:
      return "Held";
    case ExitStep::kReported:
      return "Reported";
  }
  return "?";
}

std::string_view InstanceInputName(InstanceInput input) {
  switch (input) {
    case Input::kCreateSpawned:
      return "CreateSpawned";
    case Input::kRunSpawned:
      return "RunSpawned";
    case Input::kCreateFailed:
      return "CreateFailed";
    case Input::kCreateCallExited:
      return "CreateCallExited";
    case Input::kCreateCallFailed:
      return "CreateCallFailed";
    case Input::kInitAdopted:
      return "InitAdopted";
    case Input::kInitHeldByFork:
      return "InitHeldByFork";
    case Input::kForkExited:
      return "ForkExited";
    case Input::kForkFailed:
      return "ForkFailed";
    case Input::kInitExited:
      return "InitExited";
    case Input::kStartAsked:
      return "StartAsked";
    case Input::kStartReturned:
      return "StartReturned";
    case Input::kStartFailed:
      return "StartFailed";
    case Input::kDeleteAsked:
      return "DeleteAsked";
    case Input::kDeleteSpawnFailed:
      return "DeleteSpawnFailed";
    case Input::kDeleteRetry:
      return "DeleteRetry";
    case Input::kDeleteExited:
      return "DeleteExited";
  }
  return "?";
}

std::string_view InstanceActionName(InstanceAction action) {
  switch (action) {
    case Action::kAdoptInit:
      return "AdoptInit";
    case Action::kReportCreated:
      return "ReportCreated";
    case Action::kReportCreateFailed:
      return "ReportCreateFailed";
    case Action::kSpawnStart:
      return "SpawnStart";
    case Action::kReportStarted:
      return "ReportStarted";
    case Action::kReportStartFailed:
      return "ReportStartFailed";
    case Action::kReportExited:
      return "ReportExited";
    case Action::kSpawnDelete:
      return "SpawnDelete";
    case Action::kRetryDeleteLater:
      return "RetryDeleteLater";
    case Action::kFinishDelete:
      return "FinishDelete";
  }
  return "?";
}

}  // namespace podvisor::supervisor::executor
