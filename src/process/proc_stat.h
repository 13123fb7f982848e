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
#include <optional>
#include <string_view>

#include "common/result.h"
#include "process/exit_info.h"

namespace podvisor::process {

// Field 22 of /proc/PID/stat: clock ticks since boot when the process
// started. ESRCH when there is no such process.
Result<uint64_t> ProcessStartTime(pid_t pid);

// The parent pid from /proc/PID/status ("PPid:"); -1 when unreadable.
pid_t ParentOf(pid_t pid);

// Field `number` (3 or more, as proc(5) counts) of a stat file's text.
Result<std::string_view> StatField(std::string_view stat, int number);

// How the process `pid` that started at `start_time` ended, while it is a
// zombie (exited, its parent has not reaped it yet): field 52, the wait
// status (Linux 3.5+). nullopt when it is not that process or not a
// zombie: it runs, or it was reaped (then PIDFD_INFO_EXIT has it). For a
// container init whose parent is not us (S15.5) and whose reaper, PID 1
// of the host, may take seconds.
Result<std::optional<ExitInfo>> ZombieExit(pid_t pid, uint64_t start_time);

// The same field from the text of a stat file; EINVAL when it is not one.
// The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from its last ')'.
Result<uint64_t> ParseStartTime(std::string_view stat);

}  // namespace podvisor::process
