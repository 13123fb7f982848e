// The Executor's cgroup side: the pod cgroup with the pod-level limits of
// S10.4, and whether an instance was OOM-killed (S9.5).
//
// OOM kills are read once, when the instance's init has exited, rather
// than watched with inotify on memory.events: the kernel counts the kill
// in the victim's memory cgroup before it delivers the SIGKILL, so by the
// time waitid reports the exit the count is final, and the cgroup is still
// there because the runtime's delete only follows the exit. Reading then
// is exact, costs no descriptor per container, and cannot race with the
// exit it explains (an inotify event may arrive before or after the
// pidfd's). A kill of a process other than the init takes the init too,
// through memory.oom.group = 1.
#include <unistd.h>

#include <algorithm>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "pod/resources.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

Status Executor::SetupPodCgroup() {
  const cgroups::CgroupInfo& cg = options_.cgroups;
  if (options_.cgroup_parent.empty()) return Ok();
  // The one warning of a host without usable cgroup v2 (such as a v1/v2
  // hybrid, whose cgroup2 has no controllers): the pod still runs, each
  // container keeps its own limits through the runtime.
  std::string skip;
  std::string missing;
  for (const char* c : {"cpu", "memory", "pids"}) {
    if (std::find(cg.controllers.begin(), cg.controllers.end(), c) == cg.controllers.end()) {
      missing += std::string(missing.empty() ? "" : ", ") + c;
    }
  }
  if (cg.mode != cgroups::CgroupMode::kUnified) {
    skip = "cgroup mode is " + std::string(cgroups::CgroupModeName(cg.mode)) + ", not unified";
  } else if (::geteuid() != 0) {
    skip = "not root";
  } else if (missing == "cpu, memory, pids") {
    skip = "cgroup2 at " + cg.v2_mount.string() + " offers no cpu, memory or pids controller";
  } else if (!missing.empty()) {
    log::Warn(
        "cgroup2 at {} lacks the {} controller(s): the pod-level limits they enforce "
        "are skipped",
        cg.v2_mount.string(), missing);
  }
  // S10.11: run refused such a host already; a cgroup-parent=self whose
  // engine delegated too little ends here, never with spec.resources unenforced.
  if (pod::HasPodLevelResources(pod_.spec) &&
      (!skip.empty() || missing.find("cpu") != std::string::npos ||
       missing.find("memory") != std::string::npos)) {
    return Error(
        "pod-level resources (spec.resources) need the pod cgroup: " +
        (skip.empty() ? "cgroup2 at " + cg.v2_mount.string() + " lacks " + missing : skip) +
        " (S10.11)");
  }
  if (!skip.empty()) {
    log::Warn(
        "{}: pod-level limits (S10.4: memory.max, cpu.max, cpu.weight, pids.max of the "
        "pod cgroup) are skipped; each container's limits go to the runtime",
        skip);
    return Ok();
  }
  cgroups::PodCgroup::Options o;
  o.mount = cg.v2_mount;
  o.parent = options_.cgroup_parent;
  o.pod = pod_cgroup_name_;
  o.limits = cgroups::ComputePodCgroupLimits(pod_.spec, options_.pids_limit);
  o.controllers = cg.controllers;
  o.handed_over = handover_.has_value();  // S15: its containers are in it
  auto created = cgroups::PodCgroup::Create(std::move(o));
  if (!created) return created.take_error();
  pod_cgroup_.emplace(std::move(*created));
  std::string limits;
  for (const auto& [file, value] : cgroups::LimitFiles(
           cgroups::ComputePodCgroupLimits(pod_.spec, options_.pids_limit), cg.controllers)) {
    limits.append(" ").append(file).append("=").append(value);
  }
  log::Info("pod cgroup {}:{}", pod_cgroup_->path().string(), limits);
  if (pod_cgroup_->supervisor_leaf()) {
    log::Info("supervisor moved into {} (no internal processes)",
              pod_cgroup_->supervisor_leaf()->string());
  }
  return Ok();
}

}  // namespace podvisor::supervisor::executor
