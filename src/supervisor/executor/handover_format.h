// The version of the data one supervisor hands the next about its pod:
// across `podvisor upgrade` (a re-exec in place) and, written beside the
// pod's state, to a `run` that adopts the pod after a crash (S15).
//
// The data is JSON whose readers ignore keys they do not know, so a newer
// binary may add keys under the same format number; the number changes
// only when an older reader would misread what a newer writer means.
// A binary reads every format from kOldestReadableHandoverFormat up to
// kHandoverFormat; `podvisor handover-check` prints both, and the running
// supervisor asks the new binary before it re-executes: one that cannot
// read its format is refused while the old one carries on.
#pragma once

namespace podvisor::supervisor::executor {

inline constexpr int kHandoverFormat = 1;
inline constexpr int kOldestReadableHandoverFormat = 1;

}  // namespace podvisor::supervisor::executor
