// When one probe of one container instance runs, and whether it runs at
// all any more: the timing rules S7.4 (pauses) and S7.6 (first run,
// period, the 100 ms grid), with S7.3's result bookkeeping (ProbeState)
// whose changes decide the pauses. Pure: no clock, no I/O; the prober
// hands it `now` and arms a timer for the time it answers.
#pragma once

#include <optional>

#include "common/clock.h"
#include "pod/model.h"
#include "supervisor/lifecycle/types.h"
#include "supervisor/probes/probe_state.h"

namespace podvisor::supervisor::probes {

// S7.6 "probe grid": probe runs are moved up to the next multiple of this
// on the monotonic clock, so that the runs of different containers falling
// in the same tick share one wakeup of the loop, and their connects and
// replies are handled in the same batches. Wakeups, not the probes' own
// syscalls, are most of what probing costs the supervisor (bench/: 100
// containers probed every second). No run is early; none is later than one
// tick, small against periodSeconds' one-second unit, and the period itself
// is kept, since run times stay on the grid.
inline constexpr Duration kProbeTick = std::chrono::milliseconds(100);

// `t` rounded up to the grid (unchanged when it is on it).
MonoTime OnProbeTick(MonoTime t);

// What follows the outcome of one run.
struct ProbeNext {
  // S7.3: the new stored result when it changed; only then does the
  // Lifecycle hear of it.
  std::optional<bool> changed;
  // S7.4: the probe runs no more for this instance.
  bool paused = false;
  // When the next run is due (on the grid); meaningless when paused.
  MonoTime next_run{};
};

class ProbeSchedule {
 public:
  ProbeSchedule(lifecycle::ProbeKind kind, const pod::Probe& probe);

  // S7.6: the first run, initialDelaySeconds after `container_started`
  // (MonoTime{}: unknown, then after `now`). Liveness and readiness held
  // back by the startup probe start later, at once if the delay has passed.
  MonoTime FirstRun(MonoTime now, MonoTime container_started);

  // Carries on a probe of a previous supervisor from its stored result
  // (ProbeState::Resume). Its first run still comes from FirstRun, and is
  // at once: the container started long before, so its initialDelaySeconds
  // has passed, or else it is honoured for the rest of it, as the kubelet
  // does after its own restart (a liveness probe run early would fail a
  // container the delay exists to protect).
  void Resume(bool stored_result) { state_.Resume(stored_result); }

  // A run begins (at the time it was due, or a little after): the next one
  // is due periodSeconds after this one was due, not after now, so that the
  // period stays on the grid and a late run does not push the later ones
  // back. Returns the run's timeout (timeoutSeconds, at least one second).
  Duration BeginRun();

  // The run's outcome at `now`: the stored result's change, whether the
  // probe pauses (S7.4: the startup probe after its result, liveness after
  // a failure), and otherwise when it runs next (never before `now`).
  ProbeNext RecordOutcome(ProbeOutcome outcome, MonoTime now);

  lifecycle::ProbeKind kind() const { return kind_; }
  // When the next run is due, as last answered.
  MonoTime next_run() const { return next_run_; }
  const ProbeState& state() const { return state_; }

 private:
  MonoTime Due(MonoTime at);  // puts `at` on the grid and remembers it

  lifecycle::ProbeKind kind_;
  Duration initial_delay_;
  Duration period_;
  Duration timeout_;
  ProbeState state_;
  MonoTime next_run_{};
};

}  // namespace podvisor::supervisor::probes
