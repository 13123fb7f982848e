// A process's start time from /proc/PID/stat: with the pid, the one name
// of a process that survives its parent (pid + start time cannot repeat,
// since a pid is reused only after its process is gone and the clock has
// moved on). The pod's sandbox holder is found again this way by a
// supervisor that did not start it.
//
// Only the start time is read here; the state and the parent have their
// own readers where they are used.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace podvisor::process {

// Field 22 of /proc/PID/stat: clock ticks since boot when the process
// started. ESRCH when there is no such process.
Result<uint64_t> ProcessStartTime(pid_t pid);

// The same field from the text of a stat file; EINVAL when it is not one.
// The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from its last ')'.
Result<uint64_t> ParseStartTime(std::string_view stat);

}  // namespace podvisor::process
