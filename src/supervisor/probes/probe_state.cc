#include "supervisor/probes/probe_state.h"

#include <algorithm>

namespace podvisor::supervisor::probes {

ProbeState::ProbeState(lifecycle::ProbeKind kind, const pod::Probe& probe)
    : success_threshold_(std::max(1, probe.success_threshold)),
      failure_threshold_(std::max(1, probe.failure_threshold)) {
  // S7.3 initial results for a new instance.
  switch (kind) {
    case lifecycle::ProbeKind::kReadiness:
      result_ = false;
      break;
    case lifecycle::ProbeKind::kLiveness:
      result_ = true;
      break;
    case lifecycle::ProbeKind::kStartup:
      result_ = std::nullopt;
      break;
  }
}

std::optional<bool> ProbeState::Record(ProbeOutcome outcome) {
  if (outcome == ProbeOutcome::kSuccess) {
    ++successes_;
    failures_ = 0;
    if (successes_ >= success_threshold_ && result_ != true) {
      result_ = true;
      return true;
    }
  } else {
    ++failures_;
    successes_ = 0;
    if (failures_ >= failure_threshold_ && result_ != false) {
      result_ = false;
      return false;
    }
  }
  return std::nullopt;
}

}  // namespace podvisor::supervisor::probes
