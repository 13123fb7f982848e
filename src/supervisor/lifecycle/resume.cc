// Lifecycle: carrying on in a new supervisor process after RestoreState
// (issue 30): what the new shell must do before the first event.

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

// A hook that ran under the previous supervisor died with it: its end is
// decided here, as the kubelet does after its own restart. A postStart
// counts as succeeded (the kubelet does not run it again either), a
// preStop as ended, so the stop goes on to its stop signal. Both take the
// path their HookFinished would have.
std::vector<Action> Lifecycle::Resume(Now now) {
  out_.clear();
  if (!started_) return {};
  if (active_deadline_armed_ && pod_.spec.active_deadline_seconds) {
    Emit(ArmTimer{TimerId{TimerKind::kActiveDeadline, "", 0},
                  pod_start_.mono + ClampedSeconds(*pod_.spec.active_deadline_seconds)});
  }
  if (Terminating() && !termination_.budget_expired && !ended_) {
    Emit(ArmTimer{TimerId{TimerKind::kGraceBudget, "", 0}, termination_.budget_end});
  }
  for (const Container& c : containers_) {
    if (c.state == RunState::kBackOff && c.restart_timer_armed) {
      Emit(ArmTimer{TimerId{TimerKind::kRestart, c.spec.name, c.NextInstance()}, c.restart_at});
    }
    if (c.kill_budget_armed && c.kill_budget_end) {
      Emit(ArmTimer{TimerId{TimerKind::kKillBudget, c.spec.name, c.instance}, *c.kill_budget_end});
    }
    if (c.sigkill_at) {
      Emit(ArmTimer{TimerId{TimerKind::kSigkill, c.spec.name, c.instance}, *c.sigkill_at});
    }
    for (ProbeKind kind : {ProbeKind::kStartup, ProbeKind::kReadiness, ProbeKind::kLiveness}) {
      if (!(c.probes_active & ProbeBit(kind))) continue;
      StartProbes start{c.spec.name, c.instance, kind, c.started_mono.value_or(MonoTime{}), {}};
      // S7.3's stored result carries over. An active startup probe has
      // none yet (it pauses after its first), so it starts as new: seeding
      // it "failure" would hide the failure that must kill the container.
      if (kind == ProbeKind::kReadiness) start.resumed_result = c.readiness_success;
      if (kind == ProbeKind::kLiveness) start.resumed_result = true;  // it pauses on failure
      Emit(std::move(start));
    }
  }
  for (Container& c : containers_) {
    if (c.post_start_running) {
      OnHookFinished(HookFinished{c.spec.name, c.instance, HookKind::kPostStart, true, ""}, now);
    }
    if (c.pre_stop_running) {
      OnHookFinished(HookFinished{c.spec.name, c.instance, HookKind::kPreStop, true, ""}, now);
    }
  }
  RecordConditions(now);
  return std::exchange(out_, {});
}

bool Lifecycle::HooksRunning() const {
  for (const Container& c : containers_) {
    if (c.post_start_running || c.pre_stop_running) return true;
  }
  return false;
}

}  // namespace podvisor::supervisor::lifecycle
