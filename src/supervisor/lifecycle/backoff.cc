#include "supervisor/lifecycle/backoff.h"

#include <algorithm>

namespace podvisor::supervisor::lifecycle {

Duration CrashLoopBackoff::NextDelay(Duration ran) {
  if (ran >= options_.reset) restarts_ = 0;  // S4.2
  const int n = restarts_++;
  if (n == 0) return Duration::zero();  // S4.1: first restart immediate
  // initial × 2^(n-1), capped; stop doubling once at the cap so a long
  // crash loop cannot overflow.
  Duration delay = options_.initial;
  for (int i = 1; i < n && delay < options_.max; ++i) delay *= 2;
  return std::min(delay, options_.max);
}

}  // namespace podvisor::supervisor::lifecycle
