// The result bookkeeping of one probe of one container instance (S7.3):
// the stored result changes only after failureThreshold consecutive
// failures or successThreshold consecutive successes, and starts as
// readiness failure, liveness success, startup unknown. The prober feeds
// every individual outcome and reports to the Lifecycle only the changes
// this class returns. Pure: no clock, no I/O.
#pragma once

#include <optional>

#include "pod/model.h"
#include "supervisor/lifecycle/types.h"

namespace podvisor::supervisor::probes {

enum class ProbeOutcome { kSuccess, kFailure };

class ProbeState {
 public:
  ProbeState(lifecycle::ProbeKind kind, const pod::Probe& probe);

  // A probe of an instance that a previous supervisor probed (issue 30):
  // its stored result carries over instead of the initial one, so a ready
  // container stays ready while it is re-checked. The consecutive counts
  // start over; that process's runs are not known.
  void Resume(bool stored_result) {
    result_ = stored_result;
    successes_ = 0;
    failures_ = 0;
  }

  // Records one probe run; returns the new stored result when it changed.
  std::optional<bool> Record(ProbeOutcome outcome);

  // The stored result: nullopt while unknown (startup before its first
  // decision).
  std::optional<bool> result() const { return result_; }
  int consecutive_successes() const { return successes_; }
  int consecutive_failures() const { return failures_; }

 private:
  int success_threshold_;
  int failure_threshold_;
  std::optional<bool> result_;
  int successes_ = 0;
  int failures_ = 0;
};

}  // namespace podvisor::supervisor::probes
