// The bound on one runtime call (create, start, delete, state).
//
// A runtime call is a child process the event loop waits for; a runtime
// that hangs (a stuck mount, a wedged cgroup, a bug) would otherwise leave
// its container in ContainerCreating forever and, at the end of the pod,
// keep the supervisor from ever finishing. Each such call therefore gets a
// deadline on the loop; when it passes, the runtime process is SIGKILLed
// and the call fails like any other runtime failure: create and start
// become CreateContainerError / RunContainerError with backoff (S2.3), a
// delete is given up with a warning.
//
// docs/SEMANTICS.md states no value. The default is the kubelet's: its
// --runtime-request-timeout, the bound on every CRI call except exec and
// image pulls, is 2 minutes. A runc or crun create/start/delete takes well
// under a second even on a loaded machine, so 2 minutes only ever catches a
// runtime that is truly stuck. `exec` calls are not bounded here: they run
// hooks and probes, which carry their own bounds (probe timeoutSeconds,
// the grace budget for preStop) or none, as in the kubelet (postStart).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace podvisor::supervisor::executor {

inline constexpr Duration kDefaultRuntimeTimeout = std::chrono::minutes(2);

// S14.41: once the pod terminates, the runtime is bounded by the grace as
// its containers are: a call still running is killed at termination start
// + max(grace, kRuntimeCallFloor), and a call started later (a delete of
// the teardown) gets what is left of that, never less than the floor. The
// floor is S5.5's 2 s SIGKILL delay: a container SIGKILLed at the end of
// the grace exits after it, and its delete (tens of milliseconds for runc)
// must still get to run, or the container would outlive its pod.
inline constexpr Duration kRuntimeCallFloor = std::chrono::seconds(2);

// The deadline of a bounded call started at `now` with `--runtime-timeout`
// `timeout` (0: none) while the termination allows calls until
// `termination_end` (none before the pod terminates); nullopt: unbounded.
std::optional<MonoTime> RuntimeCallDeadline(MonoTime now, Duration timeout,
                                            std::optional<MonoTime> termination_end);

// Whether `step` ("create", "start", ...) is bounded by the runtime timeout.
bool BoundedByRuntimeTimeout(std::string_view step);

// The message of a runtime call killed at its deadline,
// e.g. "runtime create did not finish within 2m0s: killed".
std::string RuntimeTimeoutMessage(std::string_view step, Duration timeout);

// Appends that message to the call's --log file as an error line in the
// runtime's own JSON log format, so the failure handler, which reports the
// runtime's last logged error (oci::LastRuntimeError), names the timeout
// instead of a bare "killed by SIGKILL". No-op when `log_file` is empty.
void RecordRuntimeTimeout(const std::filesystem::path& log_file, std::string_view step,
                          Duration timeout);

}  // namespace podvisor::supervisor::executor
