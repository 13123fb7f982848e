// What `delete` (containerd's cleanup of a dead shim) and the Delete call
// both do to leave nothing behind of a task: the supervisor is killed if
// it still runs (only the `delete` of a SIGKILLed shim finds one), what it
// left is recovered exactly as the next `podvisor run` of the pod would
// (supervisor/executor/recovery.h: containers, mounts, cgroups, the CNI
// attachment), the rootfs is unmounted, and BUNDLE/podvisor is removed.
#pragma once

#include "common/result.h"
#include "shim/task_service.h"

namespace podvisor::shim {

struct CleanupReport {
  bool supervisor_killed = false;
  std::string recovered;  // RecoveryReport::ToString(), "" when nothing was left
};

Result<CleanupReport> CleanupTask(const ShimPaths& paths);

// The cgroup parent `run` was given, as run reads it: "" is /podvisor.
std::string EffectiveCgroupParent(const ShimRecord& record);

}  // namespace podvisor::shim
