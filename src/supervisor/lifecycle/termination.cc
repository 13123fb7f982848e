// Lifecycle: killing containers and terminating the pod (SEMANTICS S3.3,
// S3.5, S5, S6, S8.2, S8.3).
//
// Every kill walks the same steps of a running instance (StopStep):
//
//   None ─▶ [Held: standard containers while draft sidecars' preStops run]
//        ─▶ PreStopRunning ─▶ [WaitingForTurn: sidecars in pod termination]
//        ─▶ Signalled (stop signal sent, SIGKILL armed) ─▶ Killed ─▶ exit
//
// The pod's stop order, when every kind is present (S5.4, S12.5, S12.6):
// draft sidecars' preStops; standard containers' preStops and stop
// signals; once they exited, the draft sidecars' stop signals; once those
// exited, KEP-753 sidecars in reverse spec order.
//
// and all grace arithmetic is here:
//   - the pod budget (S5.1) ends at termination start + grace, ≥ 1 s, and a
//     later stop request may only move it earlier;
//   - an instance killed on its own (liveness/startup failure, postStart
//     failure) has its own budget: start of the kill + the probe's
//     terminationGracePeriodSeconds, else the pod's; while the pod
//     terminates the earlier of the two applies (BudgetEnd);
//   - SIGKILL comes at max(budget end, stop signal + 2 s) (S5.3); when a
//     budget runs out every instance still short of its stop signal gets it
//     at once and so its SIGKILL 2 s later (S5.5).

#include <algorithm>
#include <csignal>

#include "common/signal_names.h"
#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

namespace {

constexpr Duration kMinimumGrace = std::chrono::seconds(1);        // S5.1
constexpr Duration kSigkillAfterSignal = std::chrono::seconds(2);  // S5.3, S5.5

bool HasPreStop(const pod::Container& spec) {
  return spec.lifecycle && spec.lifecycle->pre_stop.has_value();
}

}  // namespace

Duration Lifecycle::PodGrace(std::optional<Duration> requested) const {
  Duration grace;
  if (requested) {
    grace = *requested;
  } else if (options_.grace_override) {
    grace = *options_.grace_override;
  } else {
    grace = ClampedSeconds(pod_.spec.termination_grace_period_seconds.value_or(30));
  }
  // S14.14: a requested or --grace budget is bounded like the pod's own.
  return std::clamp(grace, kMinimumGrace, kForever);
}

MonoTime Lifecycle::BudgetEnd(const Container& c) const {
  std::optional<MonoTime> end = c.kill_budget_end;
  if (Terminating()) {
    end = end ? std::min(*end, termination_.budget_end) : termination_.budget_end;
  }
  return end.value_or(MonoTime{});
}

// The stop signal: lifecycle.stopSignal, else the image's StopSignal, else
// SIGTERM. Validation has checked the name.
int Lifecycle::StopSignalOf(const Container& c) const {
  if (c.spec.lifecycle && c.spec.lifecycle->stop_signal) {
    if (std::optional<int> signo = ParseKubernetesSignalName(*c.spec.lifecycle->stop_signal)) {
      return *signo;
    }
  }
  if (auto it = options_.image_stop_signals.find(c.spec.name);
      it != options_.image_stop_signals.end()) {
    return it->second;
  }
  return SIGTERM;
}

// Nothing of the container runs or will run: what termination waits for.
// S5.8: a container that never started is not waited for.
bool Lifecycle::Done(const Container& c) const {
  return c.state == RunState::kWaiting || c.state == RunState::kExited ||
         c.state == RunState::kAbandoned;
}

// ---- One instance --------------------------------------------------------

// S3.3 and S8.2: kill one instance through S5.3 — its preStop (S8.3), then
// its stop signal, SIGKILL at the end of its own budget.
void Lifecycle::KillInstance(Container& c, KillCause cause, std::optional<int64_t> grace_seconds,
                             Now now) {
  if (c.state != RunState::kRunning) return;
  if (c.stop == StopStep::kSignalled || c.stop == StopStep::kKilled) return;  // already dying
  if (c.kill_cause != KillCause::kNone) return;                               // written once
  c.kill_cause = cause;
  const Duration grace = grace_seconds
                             ? std::max<Duration>(ClampedSeconds(*grace_seconds), kMinimumGrace)
                             : PodGrace(std::nullopt);
  c.kill_budget_end = now.mono + grace;
  const bool restarts = c.IsSidecar() || cause == KillCause::kResize ||
                        pod_.spec.restart_policy != pod::RestartPolicy::kNever;
  std::string what = cause == KillCause::kLivenessFailed  ? "failed liveness probe"
                     : cause == KillCause::kStartupFailed ? "failed startup probe"
                     : cause == KillCause::kResize        ? "resize requires restart"
                                                          : "failed postStart hook";
  AnnounceFor(c, EventType::kNormal, "Killing",
              "Container " + c.spec.name + " " + what + (restarts ? ", will be restarted" : ""));

  switch (c.stop) {
    case StopStep::kNone:
      if (HasPreStop(c.spec)) {
        c.stop = StopStep::kPreStop;
        c.pre_stop_running = true;
        c.kill_budget_armed = true;
        Emit(RunHook{c.spec.name, c.instance, HookKind::kPreStop, std::nullopt});
        Emit(
            ArmTimer{TimerId{TimerKind::kKillBudget, c.spec.name, c.instance}, *c.kill_budget_end});
      } else {
        SendStopSignal(c, now);
      }
      return;
    case StopStep::kPreStop:
      // A sidecar whose termination preStop runs: its stop signal now
      // follows the preStop instead of waiting for its turn.
      c.kill_budget_armed = true;
      Emit(ArmTimer{TimerId{TimerKind::kKillBudget, c.spec.name, c.instance}, *c.kill_budget_end});
      return;
    case StopStep::kWaitingForTurn:
      SendStopSignal(c, now);  // its preStop already ran (S8.3: once)
      return;
    case StopStep::kHeld:
      // Not reached: a held standard container already has the pod's kill
      // cause (written once, above). Its stop follows S12.5.
    case StopStep::kSignalled:
    case StopStep::kKilled:
      return;
  }
}

void Lifecycle::PreStopEnded(Container& c, Now now) {
  // S5.4, S12.5: a sidecar stopping with the pod waits for its turn (a
  // draft sidecar's kill cause is already the pod's: it is not restarted);
  // everything else gets its stop signal as soon as its preStop ended (S5.3).
  const bool waits = (c.IsSidecar() && c.kill_cause == KillCause::kNone) ||
                     (c.IsDraftSidecar() && c.kill_cause == KillCause::kPodTermination);
  if (waits && Terminating()) {
    c.stop = StopStep::kWaitingForTurn;
    AdvanceSidecarStops(now);
    return;
  }
  SendStopSignal(c, now);
  // S12.5: a draft sidecar killed on its own (liveness) while the pod
  // terminates held the standard containers with its preStop; they go on.
  if (c.IsDraftSidecar()) AdvanceSidecarStops(now);
}

void Lifecycle::SendStopSignal(Container& c, Now now) {
  if (c.kill_cause == KillCause::kNone) c.kill_cause = KillCause::kPodTermination;
  if (c.kill_budget_armed) {
    c.kill_budget_armed = false;
    Emit(CancelTimer{TimerId{TimerKind::kKillBudget, c.spec.name, c.instance}});
  }
  const int signo = StopSignalOf(c);
  Emit(SignalContainer{c.spec.name, c.instance, signo});
  // podvisor's own event: `events` then shows the real stop order (S5.4,
  // sidecars last), where the kubelet's Killing events all come at once.
  AnnounceFor(c, EventType::kNormal, "StopSignal",
              "Sent " + SignalName(signo) + " to container " + c.spec.name);
  // S5.7: a sidecar's liveness runs until its stop signal; no restart can
  // follow a stop signal, so liveness and startup end here for everyone.
  StopProbe(c, ProbeKind::kStartup);
  StopProbe(c, ProbeKind::kLiveness);
  c.stop = StopStep::kSignalled;
  c.signalled_at = now.mono;
  ArmSigkill(c, std::max(BudgetEnd(c), now.mono + kSigkillAfterSignal));  // S5.3
}

void Lifecycle::ArmSigkill(Container& c, MonoTime at) {
  c.sigkill_at = at;
  Emit(ArmTimer{TimerId{TimerKind::kSigkill, c.spec.name, c.instance}, at});
}

// The instance's own budget ran out while its preStop still runs (S5.5 for
// a single kill): stop signal now, SIGKILL 2 s later.
void Lifecycle::OnKillBudgetExpired(Container& c, Now now) {
  if (!c.kill_budget_armed) return;
  c.kill_budget_armed = false;
  if (c.state == RunState::kRunning && c.stop == StopStep::kPreStop) SendStopSignal(c, now);
}

void Lifecycle::OnSigkillTimer(Container& c) {
  if (!c.sigkill_at) return;
  c.sigkill_at.reset();
  if (c.state != RunState::kRunning || c.stop != StopStep::kSignalled) return;
  c.stop = StopStep::kKilled;
  Emit(SignalContainer{c.spec.name, c.instance, SIGKILL});
  AnnounceFor(c, EventType::kWarning, "ForcedKill",
              "Container " + c.spec.name + " did not stop in time: sent SIGKILL");
}

// ---- The pod ---------------------------------------------------------------

void Lifecycle::OnStopRequested(const StopRequested& e, Now now) {
  if (ended_) return;
  if (Terminating()) {
    ShortenBudget(PodGrace(e.grace), now);  // S5.1: only ever shorter
    return;
  }
  BeginTermination(TerminationCause::kStopRequested, e.reason, e.grace, now);
}

// S3.5.
void Lifecycle::OnDeadline(Now now) {
  if (!active_deadline_armed_) return;
  active_deadline_armed_ = false;
  if (ended_ || Terminating()) return;
  failed_ = true;
  reason_ = "DeadlineExceeded";
  message_ = "Pod was active on the node longer than the specified deadline";
  Announce(EventType::kWarning, "DeadlineExceeded", "pod", message_);
  BeginTermination(TerminationCause::kDeadlineExceeded, "DeadlineExceeded", std::nullopt, now);
}

// S5. The stop reason (S6) and the grace are fixed by the first cause; a
// later stop request can only shorten the budget.
void Lifecycle::BeginTermination(TerminationCause cause, std::optional<std::string> reason,
                                 std::optional<Duration> grace, Now now) {
  if (ended_ || Terminating()) return;
  const Duration budget = PodGrace(grace);
  termination_.cause = cause;
  termination_.stop_reason = std::move(reason);
  termination_.budget_end = now.mono + budget;
  if (active_deadline_armed_) {
    active_deadline_armed_ = false;
    Emit(CancelTimer{TimerId{TimerKind::kActiveDeadline, "", 0}});
  }
  Emit(ArmTimer{TimerId{TimerKind::kGraceBudget, "", 0}, termination_.budget_end});
  // As the API server does on deletion: the time the pod will be gone by.
  if (cause == TerminationCause::kStopRequested) deletion_timestamp_ = now.wall + budget;
  if (cause == TerminationCause::kCompleted && FinalPhase() == pod::PodPhase::kSucceeded) {
    Announce(EventType::kNormal, "PodCompleted", "pod", "All regular containers completed");
  } else if (cause == TerminationCause::kCompleted) {
    // Every regular container ended, not all of them well: the pod will be
    // Failed, and a Normal "completed" would say the opposite.
    std::string failed;
    for (const Container& c : containers_) {
      if (c.role != ContainerRole::kRegular || (c.ever_started && c.last_exit_ok)) continue;
      failed += (failed.empty() ? "" : ", ") + c.spec.name;
      if (c.terminated) failed += " (exit code " + std::to_string(c.terminated->exit_code) + ")";
    }
    Announce(EventType::kWarning, "PodFailed", "pod", "Regular containers failed: " + failed);
  } else {
    std::string message = "Stopping pod";
    if (termination_.stop_reason) message += " (reason: " + *termination_.stop_reason + ")";
    message += ", grace period " + FormatDuration(budget);
    Announce(EventType::kNormal, "PodStopping", "pod", message);  // S6.4
  }

  // S12.5: the draft sidecars' preStops first, so that the standard
  // containers, whatever their place in the spec, see them running.
  for (Container& c : containers_) {
    if (c.IsDraftSidecar() && c.state == RunState::kRunning) StopForTermination(c, now);
  }
  for (Container& c : containers_) {
    switch (c.state) {
      case RunState::kWaiting:
      case RunState::kExited:
      case RunState::kAbandoned:
        break;  // S5.8: never started (or already done): not waited for
      case RunState::kCreating:
        // A sidecar restart in flight continues (S5.7); anything else was
        // never started and never will be.
        if (!(c.IsSidecar() && c.ever_started)) c.state = RunState::kAbandoned;
        break;
      case RunState::kCreated:
        // A regular waiting for its turn (S1.4), or an init-list entry
        // created ahead of its turn (S1.1).
        c.state = RunState::kAbandoned;
        Emit(DeleteContainer{c.spec.name, c.instance});
        break;
      case RunState::kStarting:
        break;  // its process may already run; OnRuntimeStarted stops it
      case RunState::kRunning:
        if (!c.IsDraftSidecar()) StopForTermination(c, now);  // those went first
        break;
      case RunState::kBackOff:
        // S5.7: no restarts of regular or init containers; a sidecar's
        // restart stands if it fits the budget.
        if (!(c.IsSidecar() && c.restart_at < termination_.budget_end)) {
          c.state = RunState::kExited;
          c.restart_timer_armed = false;
          Emit(CancelTimer{TimerId{TimerKind::kRestart, c.spec.name, c.NextInstance()}});
        }
        break;
    }
  }
  AdvanceSidecarStops(now);
  CheckEnded(now);
}

// S5.2: preStops start at once, concurrently; regular containers without
// one get their stop signal now (S5.3), sidecars wait for their turn (S5.4).
void Lifecycle::StopForTermination(Container& c, Now now) {
  if (c.stop == StopStep::kSignalled || c.stop == StopStep::kKilled) {
    // Already being killed on its own (S3.3/S8.2): only the pod budget may
    // bring its SIGKILL closer.
    const MonoTime at = std::max(BudgetEnd(c), c.signalled_at + kSigkillAfterSignal);
    if (c.sigkill_at && at < *c.sigkill_at) ArmSigkill(c, at);
    return;
  }
  if (c.stop == StopStep::kPreStop) return;  // its preStop runs already
  AnnounceFor(c, EventType::kNormal, "Killing", "Stopping container " + c.spec.name);
  if (!c.IsSidecar()) {
    c.kill_cause = KillCause::kPodTermination;
    // No restart can follow (S5.7), so liveness and startup end now;
    // readiness runs until the exit.
    StopProbe(c, ProbeKind::kStartup);
    StopProbe(c, ProbeKind::kLiveness);
  }
  if (c.role == ContainerRole::kRegular && DraftPreStopsRunning()) {
    c.stop = StopStep::kHeld;  // S12.5: ReleaseHeldStops continues
    return;
  }
  BeginStop(c, now);
}

// The preStop (S5.2), else the stop signal (S5.3) or, for a sidecar, its
// turn (S5.4, S12.5).
void Lifecycle::BeginStop(Container& c, Now now) {
  if (HasPreStop(c.spec)) {
    c.stop = StopStep::kPreStop;
    c.pre_stop_running = true;
    Emit(RunHook{c.spec.name, c.instance, HookKind::kPreStop, termination_.stop_reason});  // S6.2
    return;
  }
  if (c.IsSidecar() || c.IsDraftSidecar()) {
    c.stop = StopStep::kWaitingForTurn;
  } else {
    SendStopSignal(c, now);
  }
}

bool Lifecycle::DraftPreStopsRunning() const {
  for (const Container& c : containers_) {
    if (c.IsDraftSidecar() && c.state == RunState::kRunning && c.stop == StopStep::kPreStop) {
      return true;
    }
  }
  return false;
}

// S12.5: the draft sidecars' preStops all ended (or their containers
// exited): the standard containers held for them proceed.
void Lifecycle::ReleaseHeldStops(Now now) {
  if (DraftPreStopsRunning()) return;
  for (Container& c : containers_) {
    if (c.state != RunState::kRunning || c.stop != StopStep::kHeld) continue;
    c.stop = StopStep::kNone;
    BeginStop(c, now);
  }
}

// S5.1: a later request may only shorten the budget.
void Lifecycle::ShortenBudget(Duration grace, Now now) {
  const MonoTime end = now.mono + grace;
  if (end >= termination_.budget_end || termination_.budget_expired) return;
  termination_.budget_end = end;
  Emit(ArmTimer{TimerId{TimerKind::kGraceBudget, "", 0}, end});
  if (deletion_timestamp_) deletion_timestamp_ = now.wall + grace;
  for (Container& c : containers_) {
    if (c.state == RunState::kRunning && c.stop == StopStep::kSignalled && c.sigkill_at) {
      const MonoTime at = std::max(BudgetEnd(c), c.signalled_at + kSigkillAfterSignal);
      if (at < *c.sigkill_at) ArmSigkill(c, at);
    }
  }
}

// S5.5: the budget ran out. Everyone still short of the stop signal gets it
// now — sidecars waiting for their turn and containers still in preStop
// (the hook keeps running until its container exits, S5.6) — and SIGKILL
// 2 s later. Pending sidecar restarts no longer fit.
void Lifecycle::OnGraceBudgetExpired(Now now) {
  if (!Terminating() || ended_ || termination_.budget_expired) return;
  termination_.budget_expired = true;
  for (Container& c : containers_) {
    switch (c.state) {
      case RunState::kRunning:
        if (c.stop == StopStep::kNone || c.stop == StopStep::kPreStop ||
            c.stop == StopStep::kWaitingForTurn || c.stop == StopStep::kHeld) {
          SendStopSignal(c, now);
        }
        break;
      case RunState::kBackOff:
        c.state = RunState::kExited;
        c.restart_timer_armed = false;
        Emit(CancelTimer{TimerId{TimerKind::kRestart, c.spec.name, c.NextInstance()}});
        break;
      case RunState::kCreating:
        c.state = RunState::kAbandoned;
        break;
      case RunState::kCreated:
        c.state = RunState::kAbandoned;
        Emit(DeleteContainer{c.spec.name, c.instance});
        break;
      case RunState::kWaiting:
      case RunState::kStarting:
      case RunState::kExited:
      case RunState::kAbandoned:
        break;
    }
  }
  CheckEnded(now);
}

// S5.4: sidecars get their stop signal in reverse spec order — the last one
// once its preStop ended and every other container has exited, each earlier
// one once every later one is done. S5.8 falls out of the same rule: a
// sidecar running but not yet started has no started sidecar after it.
//
// S12.5/S12.6: draft sidecars come before all of them: their stop signal
// once every standard container is done, and KEP-753 sidecars wait for the
// draft sidecars as for any entry of spec.containers.
void Lifecycle::AdvanceSidecarStops(Now now) {
  if (!Terminating() || ended_) return;
  ReleaseHeldStops(now);
  bool standard_done = true;
  for (const Container& c : containers_) {
    if (c.role != ContainerRole::kSidecar && !c.IsDraftSidecar() && !Done(c)) standard_done = false;
  }
  if (standard_done) {
    for (Container& c : containers_) {
      if (c.IsDraftSidecar() && c.state == RunState::kRunning &&
          c.stop == StopStep::kWaitingForTurn) {
        SendStopSignal(c, now);
      }
    }
  }
  for (const Container& c : containers_) {
    if (!c.IsSidecar() && !Done(c)) return;
  }
  for (size_t i = init_count_; i-- > 0;) {
    Container& c = containers_[i];
    if (!c.IsSidecar()) continue;
    if (c.state == RunState::kRunning && c.stop == StopStep::kWaitingForTurn)
      SendStopSignal(c, now);
    if (!Done(c)) return;
  }
}

void Lifecycle::CheckEnded(Now /*now*/) {
  if (!Terminating() || ended_) return;
  for (const Container& c : containers_) {
    if (!Done(c)) return;
  }
  ended_ = true;
  final_phase_ = FinalPhase();
  if (!termination_.budget_expired) Emit(CancelTimer{TimerId{TimerKind::kGraceBudget, "", 0}});
  Emit(PodEnded{final_phase_});
}

}  // namespace podvisor::supervisor::lifecycle
