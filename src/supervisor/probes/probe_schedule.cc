#include "supervisor/probes/probe_schedule.h"

#include <algorithm>

namespace podvisor::supervisor::probes {

MonoTime OnProbeTick(MonoTime t) {
  auto ticks = (t.time_since_epoch() + kProbeTick - Duration(1)) / kProbeTick;
  return MonoTime(ticks * kProbeTick);
}

ProbeSchedule::ProbeSchedule(lifecycle::ProbeKind kind, const pod::Probe& probe)
    : kind_(kind),
      initial_delay_(lifecycle::ClampedSeconds(probe.initial_delay_seconds)),
      // A period or timeout under one second (validation refuses them)
      // counts as one: a zero period would run the probe without pause.
      period_(lifecycle::ClampedSeconds(std::max(1, probe.period_seconds))),
      timeout_(lifecycle::ClampedSeconds(std::max(1, probe.timeout_seconds))),
      state_(kind, probe) {}

MonoTime ProbeSchedule::Due(MonoTime at) {
  next_run_ = OnProbeTick(at);
  return next_run_;
}

MonoTime ProbeSchedule::FirstRun(MonoTime now, MonoTime container_started) {
  if (container_started == MonoTime{}) return Due(now + initial_delay_);
  return Due(std::max(now, container_started + initial_delay_));
}

Duration ProbeSchedule::BeginRun() {
  next_run_ += period_;
  return timeout_;
}

ProbeNext ProbeSchedule::RecordOutcome(ProbeOutcome outcome, MonoTime now) {
  ProbeNext next;
  next.changed = state_.Record(outcome);
  // S7.4: the startup probe pauses after its result, liveness after a
  // failure, until the next instance (the Lifecycle expects no more).
  next.paused = next.changed && (kind_ == lifecycle::ProbeKind::kStartup ||
                                 (kind_ == lifecycle::ProbeKind::kLiveness && !*next.changed));
  if (!next.paused) next.next_run = Due(std::max(next_run_, now));
  return next;
}

}  // namespace podvisor::supervisor::probes
