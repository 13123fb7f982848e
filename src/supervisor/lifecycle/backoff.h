// Crash-loop backoff of one container (SEMANTICS S4): how long to wait
// before the next restart. Pure arithmetic; the Lifecycle arms the timer.
#pragma once

#include <chrono>

#include "common/clock.h"

namespace podvisor::supervisor::lifecycle {

// S4.4: the supervisor options --backoff-initial, --backoff-max,
// --backoff-reset.
struct BackoffOptions {
  Duration initial = std::chrono::seconds(10);
  Duration max = std::chrono::seconds(300);
  Duration reset = std::chrono::minutes(10);
};

class CrashLoopBackoff {
 public:
  explicit CrashLoopBackoff(BackoffOptions options = {}) : options_(options) {}

  // The delay before restarting a container whose last instance ran for
  // `ran` (zero when it never started), counted from that instance's end.
  // S4.1: the first restart is immediate, then initial, 2×initial, …
  // capped at max. S4.2: an instance that ran for `reset` or longer starts
  // the sequence over. Each call counts one restart.
  Duration NextDelay(Duration ran);

  int restarts_in_sequence() const { return restarts_; }
  // A supervisor that takes over the pod (Lifecycle::RestoreState) carries
  // on the sequence where the previous one left it.
  void RestoreRestartsInSequence(int restarts) { restarts_ = restarts; }

 private:
  BackoffOptions options_;
  int restarts_ = 0;
};

}  // namespace podvisor::supervisor::lifecycle
