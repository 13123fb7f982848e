#include "shim/cleanup.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include "common/log.h"

#include "cgroups/cgroup_name.h"
#include "cgroups/mode.h"
#include "common/host_claim.h"
#include "hostfs/layout.h"
#include "oci/runtime_cli.h"
#include "oci/runtime_locator.h"
#include "shim/rootfs.h"
#include "shim/task_cgroup.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::shim {

namespace {

// Is `pid` the supervisor of this bundle? A pid recorded by a shim that
// died long ago may belong to someone else now: its command line must
// name this bundle's state directory.
bool IsOurSupervisor(int pid, const ShimPaths& paths) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find(paths.StateDir().string()) != std::string::npos;
}

// SIGKILL through a pidfd (no pid reuse between check and kill), then wait
// until it is gone: it is not our child (its shim died), so poll the pidfd.
bool KillSupervisor(int pid, const ShimPaths& paths) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return false;
  Fd fd(pidfd);
  if (!IsOurSupervisor(pid, paths)) return false;
  if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) != 0) return false;
  pollfd p{pidfd, POLLIN, 0};
  // The kernel takes milliseconds to kill; 10 s covers a task stuck in I/O.
  (void)poll(&p, 1, 10000);
  return true;
}

// The shim's own parents /podvisor/containerd/NS/ID (run removes the pod's
// directory, never its parent), in every hierarchy, deepest first; one that
// is not empty (another task's) stays.
void RemoveCgroupParents(const std::string& parent) {
  std::vector<std::filesystem::path> roots = {"/sys/fs/cgroup"};
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/fs/cgroup", ec)) {
    if (e.is_directory(ec)) roots.push_back(e.path());
  }
  for (const auto& root : roots) {
    for (std::filesystem::path p = parent; p != "/podvisor" && p != "/"; p = p.parent_path()) {
      if (rmdir((root / p.relative_path()).c_str()) != 0) break;
    }
  }
}

}  // namespace

std::string EffectiveCgroupParent(const ShimRecord& record) {
  return record.cgroup_parent.empty() ? "/podvisor" : record.cgroup_parent;
}

Result<CleanupReport> CleanupTask(const ShimPaths& paths) {
  CleanupReport report;
  auto record = ReadShimRecord(paths);
  if (record && record->supervisor_pid > 0) {
    report.supervisor_killed = KillSupervisor(record->supervisor_pid, paths);
  }
  std::error_code ec;
  if (!record && std::filesystem::exists(paths.StateDir(), ec)) {
    // Without the record the pod is unknown, and removing its state blind
    // could reach into what is still mounted there.
    return record.take_error().Wrap("cleaning up " + paths.StateDir().string());
  }
  if (record && !record->pod.empty() &&
      std::filesystem::exists(paths.StateDir() / record->pod, ec)) {
    cgroups::CgroupInfo cg = cgroups::DetectCgroups();
    auto runtime = oci::LocateRuntime("", cgroups::CrunUnusableOn(cg));
    if (!runtime) return runtime.take_error().Wrap("recovering pod " + record->pod);
    hostfs::PodLayout layout(paths.StateDir(), record->pod);
    oci::RuntimeCliOptions options;
    options.state_root = layout.RuntimeRoot();
    oci::RuntimeCli cli(*runtime, options);
    supervisor::executor::RecoveryInput input{&layout, &cli, "", std::chrono::seconds(30),
                                              HostClaim::kDefaultRoot};
    std::string parent = EffectiveCgroupParent(*record);
    // "self" nests the pod under the supervisor's own cgroup: the task's,
    // when the shim made one; otherwise nothing of it is known here beyond
    // what recovery finds.
    // The name `run` claimed for it (cgroups/cgroup_name.h), when recorded.
    const std::string name = cgroups::ReadRecordedCgroupName(layout.dir()).value_or(record->pod);
    if (!record->task_cgroup.empty()) {
      input.pod_cgroup = record->task_cgroup + "/" + name;
    } else if (parent != "self") {
      input.pod_cgroup = parent + "/" + name;
    }
    auto recovered = supervisor::executor::RecoverLeftovers(input);
    if (!recovered) return recovered.take_error().Wrap("recovering pod " + record->pod);
    if (recovered->Any()) report.recovered = recovered->ToString();
    // The task is deleted: its pod cgroup's name is free again.
    HostClaim::ReleaseAllOf(HostClaim::kDefaultRoot, "cgroups",
                            ClaimOwner{layout.dir().parent_path(), record->pod});
  }
  if (record && record->cgroup_parent.rfind("/podvisor/containerd/", 0) == 0) {
    RemoveCgroupParents(record->cgroup_parent);
  }
  if (record && !record->task_cgroup.empty()) {
    // What is still in it (a SIGKILLed shim's supervisor's children, a
    // daemon a hook left) is killed; then it goes, as runc removes its
    // container's cgroup on delete.
    cgroups::CgroupInfo cg = cgroups::DetectCgroups();
    if (!cg.v2_mount.empty()) {
      if (auto removed = RemoveTaskCgroup(cg.v2_mount, record->task_cgroup); !removed) {
        return removed.take_error().Wrap("removing the task cgroup");
      }
    }
  }
  if (auto unmounted = UnmountRootfs(paths.Rootfs()); !unmounted) {
    return unmounted.take_error();
  }
  std::filesystem::remove_all(paths.Dir(), ec);
  if (ec) return Error("removing " + paths.Dir().string() + ": " + ec.message());
  return report;
}

}  // namespace podvisor::shim
