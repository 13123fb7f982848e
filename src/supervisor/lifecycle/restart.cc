// Lifecycle: the end of an instance and what follows it — restart with
// crash-loop backoff, the next init-list entry, pod failure or completion
// (SEMANTICS S1.2, S2, S3.1, S3.2, S3.4, S4, S9.2).

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

namespace {

// Shown as terminated.message when the container left none (S11.3): the
// reason the supervisor killed it, recorded once (STYLE: a termination
// cause is written once; our own SIGKILL never replaces it).
std::string KillMessage(KillCause cause) {
  switch (cause) {
    case KillCause::kLivenessFailed:
      return "Container failed liveness probe";
    case KillCause::kStartupFailed:
      return "Container failed startup probe";
    case KillCause::kPostStartFailed:
      return "PostStartHook failed";
    case KillCause::kNone:
    case KillCause::kPodTermination:
    case KillCause::kResize:
      break;
  }
  return "";
}

// A probe or hook failure makes the run a failure whatever the exit code,
// as the kubelet restarts such containers under OnFailure.
bool KilledForFailure(KillCause cause) {
  return cause == KillCause::kLivenessFailed || cause == KillCause::kStartupFailed ||
         cause == KillCause::kPostStartFailed;
}

// A termination message for an event: the whole of it, bounded. The last
// bytes are kept when it is longer: a FallbackToLogsOnError message is the
// log's tail, whose last lines say why the container failed (its first
// line alone rarely did). Newlines stay: `events` escapes them (S14.21),
// `events -o json` keeps them.
std::string MessageExcerpt(const std::string& message) {
  constexpr std::size_t kMax = 1024;
  std::string text = message;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() <= kMax) return text;
  std::size_t from = text.size() - kMax;
  // Never start inside a UTF-8 character.
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  return "..." + text.substr(from);
}

}  // namespace

// podvisor's own event (podman's "died"): every exit with its code and
// reason. A Warning when the run counts as a failure and was not ended by
// the pod's own termination.
void Lifecycle::AnnounceExit(const Container& c, const pod::ContainerStateTerminated& t) {
  const bool failure = !c.last_exit_ok || KilledForFailure(c.kill_cause);
  std::string message =
      "Container " + c.spec.name + " exited with code " + std::to_string(t.exit_code);
  if (t.signal != 0) message += " (signal " + std::to_string(t.signal) + ")";
  message += ", reason " + t.reason;
  if (!t.message.empty()) message += ": " + MessageExcerpt(t.message);
  AnnounceFor(c,
              failure && c.kill_cause != KillCause::kPodTermination ? EventType::kWarning
                                                                    : EventType::kNormal,
              "Exited", std::move(message));
}

void Lifecycle::OnContainerExited(const ContainerExited& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c || (c->state != RunState::kRunning && c->state != RunState::kStarting)) return;
  if (!c->started_mono) {
    // The exit overtook the runtime's report that `start` returned.
    c->started_mono = now.mono;
    c->started_wall = now.wall;
    c->ever_started = true;
  }

  pod::ContainerStateTerminated t;
  t.exit_code = e.exit_code;
  t.signal = e.signal;
  // S9.5: OOMKilled comes from the cgroup, never from the exit code; a
  // SIGKILL we sent ourselves is reported as what it is, an Error.
  t.reason = e.oom_killed ? "OOMKilled" : (e.exit_code == 0 ? "Completed" : "Error");
  if (!e.reason.empty()) t.reason = e.reason;  // S15.5: ContainerStatusUnknown
  t.message = e.message.empty() ? KillMessage(c->kill_cause) : e.message;
  t.started_at = c->started_wall;
  t.finished_at = now.wall;
  c->terminated = std::move(t);
  c->last_exit_ok = e.exit_code == 0 && !e.oom_killed;  // S1.2: OOMKilled fails even with 0
  if (e.oom_killed) {
    AnnounceFor(*c, EventType::kWarning, "OOMKilled",
                "Container " + c->spec.name + " was OOM-killed");
  }
  AnnounceExit(*c, *c->terminated);

  // S5.6: hooks end with their container.
  if (c->post_start_running) {
    c->post_start_running = false;
    Emit(CancelHook{c->spec.name, c->instance, HookKind::kPostStart});
  }
  if (c->pre_stop_running) {
    c->pre_stop_running = false;
    Emit(CancelHook{c->spec.name, c->instance, HookKind::kPreStop});
  }
  StopAllProbes(*c);
  if (c->kill_budget_armed) {
    c->kill_budget_armed = false;
    Emit(CancelTimer{TimerId{TimerKind::kKillBudget, c->spec.name, c->instance}});
  }
  if (c->sigkill_at) {
    c->sigkill_at.reset();
    Emit(CancelTimer{TimerId{TimerKind::kSigkill, c->spec.name, c->instance}});
  }
  Emit(DeleteContainer{c->spec.name, c->instance});
  c->instance_exists = false;

  if (c->InRegularList() && !c->start_attempt_finished) {
    c->start_attempt_finished = true;  // S1.4: an exit ends the start too
    StartCreatedRegulars();
  }
  if (c->kill_cause == KillCause::kResize && !Terminating()) {
    // S17.3: the kubelet's own restart to apply resources: at once, under
    // every restartPolicy, without crash-loop backoff.
    BeginNextInstance(*c);
    CreateInstance(*c);
    return;
  }
  InstanceEnded(*c, !c->last_exit_ok || KilledForFailure(c->kill_cause), now);
}

// S17.3: a running instance is stopped (preStop, the pod's grace) and the
// next one created when it has exited; one that is not running picks the
// new resources up at its next create anyway.
void Lifecycle::OnResizeRestart(const ResizeRestart& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c || Terminating()) return;
  KillInstance(*c, KillCause::kResize, std::nullopt, now);
}

// S2.3: a runtime failure is a start error, retried with backoff like a
// crash; it never takes the supervisor down.
void Lifecycle::OnRuntimeFailed(const RuntimeFailed& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c) return;
  if (e.step == RuntimeStep::kCreate) {
    if (c->state != RunState::kCreating) return;  // includes kAbandoned: nothing to undo
    if (c->ahead) {
      // Not its turn yet, so not its failure yet: the turn creates it again
      // and reports what happens then.
      c->ahead = false;
      c->state = RunState::kWaiting;
      return;
    }
    c->start_error = pod::ContainerStateWaiting{"CreateContainerError", e.message};
  } else {
    if (c->state != RunState::kStarting) return;
    c->start_error = pod::ContainerStateWaiting{"RunContainerError", e.message};
    // The instance existed, so it counts as a run that ended (the kubelet's
    // StartError with exit code 128) and the retry is a restart.
    pod::ContainerStateTerminated t;
    t.exit_code = 128;
    t.reason = "StartError";
    t.message = e.message;
    t.finished_at = now.wall;
    c->terminated = std::move(t);
    c->last_exit_ok = false;
    Emit(DeleteContainer{c->spec.name, c->instance});
    c->instance_exists = false;
  }
  AnnounceFor(*c, EventType::kWarning, "Failed", "Error: " + e.message);
  if (c->InRegularList() && !c->start_attempt_finished) {
    c->start_attempt_finished = true;
    StartCreatedRegulars();
  }
  InstanceEnded(*c, /*failed=*/true, now);
}

// What follows the end of an instance.
void Lifecycle::InstanceEnded(Container& c, bool failed, Now now) {
  const pod::RestartPolicy policy = pod_.spec.restart_policy;
  if (Terminating()) {
    // S5.7: only a sidecar that had not yet got its stop signal comes back.
    if (c.IsSidecar() && c.kill_cause != KillCause::kPodTermination) {
      ScheduleRestart(c, now);
    } else {
      c.state = RunState::kExited;
    }
    AdvanceSidecarStops(now);
    CheckEnded(now);
    return;
  }
  if (failed && (c.role == ContainerRole::kInit || c.role == ContainerRole::kRegular) &&
      EndsJob(c, now)) {
    return;
  }
  switch (c.role) {
    case ContainerRole::kInit:
      if (!failed) {
        c.state = RunState::kExited;
        SequenceEntryDone(c, now);  // S1.2
      } else if (policy == pod::RestartPolicy::kNever) {
        // S2.1: the pod fails; running sidecars are stopped by S5.
        c.state = RunState::kExited;
        failed_ = true;
        BeginTermination(TerminationCause::kInitFailed, std::nullopt, std::nullopt, now);
      } else {
        ScheduleRestart(c, now);  // S2.1: the same init again, with backoff
      }
      return;
    case ContainerRole::kSidecar:
      ScheduleRestart(c, now);  // S2.2, S3.1: under every restartPolicy
      return;
    case ContainerRole::kRegular:
      // S3.2.
      if (policy == pod::RestartPolicy::kAlways ||
          (policy == pod::RestartPolicy::kOnFailure && failed)) {
        ScheduleRestart(c, now);
      } else {
        c.state = RunState::kExited;
        CheckCompletion(now);
      }
      return;
    case ContainerRole::kDraftSidecar:
      // S12.2: the pod's restartPolicy, as for any container of the list.
      if (policy == pod::RestartPolicy::kAlways ||
          (policy == pod::RestartPolicy::kOnFailure && failed)) {
        ScheduleRestart(c, now);
        return;
      }
      c.state = RunState::kExited;
      if (!draft_gate_open_) {
        // S12.1: it will never be ready, so the standard containers could
        // never start: the pod fails, as after an init failure under Never
        // (S2.1), rather than hang.
        failed_ = true;
        reason_ = "SidecarExited";
        message_ = "Sidecar container " + c.spec.name +
                   " exited before it was ready; the other containers cannot start";
        Announce(EventType::kWarning, "SidecarExited", "pod", message_);
        BeginTermination(TerminationCause::kSidecarExited, std::nullopt, std::nullopt, now);
      }
      return;
  }
}

// S3.6: what a Job's controller does to its pod. Under OnFailure the pod
// fails once a failed run would need a restart beyond the Job's
// backoffLimit (the restarts of its init and regular containers, as the
// controller sums them; sidecars restart by S3.1 and do not count). Under
// Never the failure itself counts one: it ends the job when the limit is 0
// (a higher limit would have the controller make a new pod, which podvisor
// does not; the pod fails the ordinary way).
bool Lifecycle::EndsJob(Container& c, Now now) {
  if (!pod_.job) return false;
  const int32_t limit = pod_.job->backoff_limit;
  if (pod_.spec.restart_policy == pod::RestartPolicy::kNever) {
    if (limit > 0) return false;
  } else {
    int64_t restarts = 0;
    for (const Container& other : containers_) {
      if (other.role == ContainerRole::kInit || other.role == ContainerRole::kRegular) {
        restarts += other.instance;
      }
    }
    if (restarts < limit) return false;
  }
  c.state = RunState::kExited;
  failed_ = true;
  reason_ = "BackoffLimitExceeded";
  message_ = "Job has reached the specified backoff limit";
  Announce(EventType::kWarning, "BackoffLimitExceeded", "pod",
           message_ + " (" + std::to_string(limit) + "); container " + c.spec.name +
               " failed and is not restarted");
  BeginTermination(TerminationCause::kBackoffLimitExceeded, "BackoffLimitExceeded", std::nullopt,
                   now);
  return true;
}

// S4.1–S4.3.
void Lifecycle::ScheduleRestart(Container& c, Now now) {
  const Duration ran = c.started_mono ? now.mono - *c.started_mono : Duration::zero();
  const Duration delay = c.backoff.NextDelay(ran);
  const MonoTime at = now.mono + delay;
  if (Terminating() && at >= termination_.budget_end) {
    c.state = RunState::kExited;  // S5.7: the backoff does not fit the budget
    return;
  }
  if (delay == Duration::zero()) {
    BeginNextInstance(c);
    CreateInstance(c);
    return;
  }
  c.state = RunState::kBackOff;
  c.backoff_delay = delay;
  c.restart_at = at;
  c.restart_timer_armed = true;
  Emit(ArmTimer{TimerId{TimerKind::kRestart, c.spec.name, c.NextInstance()}, at});
  AnnounceFor(c, EventType::kWarning, "BackOff",
              "Back-off " + FormatDuration(delay) + " restarting failed container " + c.spec.name);
}

void Lifecycle::OnRestartTimer(Container& c, int instance) {
  if (c.state != RunState::kBackOff || !c.restart_timer_armed) return;
  if (instance != c.NextInstance()) return;
  c.restart_timer_armed = false;
  BeginNextInstance(c);
  CreateInstance(c);
}

// S3.4: every regular container exited and none will be restarted. S12.3:
// draft sidecars do not count (role kDraftSidecar), so a job completes
// while they run and BeginTermination stops them.
void Lifecycle::CheckCompletion(Now now) {
  if (Terminating() || !initialized_) return;
  for (const Container& c : containers_) {
    if (c.role == ContainerRole::kRegular && c.state != RunState::kExited) return;
  }
  BeginTermination(TerminationCause::kCompleted, std::nullopt, std::nullopt, now);
}

}  // namespace podvisor::supervisor::lifecycle
