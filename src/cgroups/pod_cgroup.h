// cgroups::PodCgroup: the pod's own cgroup v2 directory and its limits.
//
// Layout (docs/INTERFACE.md --cgroup-parent, SEMANTICS S10.4):
//   <cgroup2 mount>/<parent>/<pod>          memory.max, cpu.max, cpu.weight,
//                                           pids.max of the whole pod
//   <cgroup2 mount>/<parent>/<pod>/<id>     one per container instance, made
//                                           by the OCI runtime from the
//                                           config's cgroupsPath, with the
//                                           container's own limits and
//                                           memory.oom.group = 1
//
// cgroup v2 hands a controller to a child only when every ancestor lists
// it in cgroup.subtree_control, so Create enables cpu, memory and pids on
// each level from the mount down to the pod. The "no internal processes"
// rule forbids that on a non-root cgroup that holds processes: when the
// kernel answers EBUSY and the supervisor itself sits there (podvisor as
// PID 1 of a container with its own cgroup namespace), the supervisor moves
// into a leaf `_supervisor-<pid>` below it first, the way crun moves its
// init; the underscore keeps the name apart from any pod name (DNS names
// have none).
//
// Destroy removes what Create made: `cgroup.kill` for processes that
// outlived their container (a daemon a hook left behind), then rmdir from
// the deepest directory up, keeping parents another pod still uses.
//
// The mount root is a parameter so unit tests run against a plain
// directory tree that imitates cgroupfs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cgroups/mode.h"
#include "common/result.h"
#include "pod/model.h"

namespace podvisor::cgroups {

// The pod-level values of S10.4.
struct PodCgroupLimits {
  std::optional<int64_t> memory_max;  // bytes; only when every container has a memory limit
  std::optional<int64_t>
      cpu_quota_us;                 // per kCpuPeriodUs; only when every container has a cpu limit
  int64_t cpu_weight = 1;           // from the effective cpu request (1 without one)
  std::optional<int64_t> pids_max;  // --pod-pids-limit
};

constexpr int64_t kCpuPeriodUs = 100000;  // the kubelet's CFS period

// S10.1 + S10.4 for `spec` (after ApplyDefaults).
PodCgroupLimits ComputePodCgroupLimits(const pod::PodSpec& spec, std::optional<int64_t> pids_limit);

// S10.11: why this host cannot enforce spec.resources (pod-level resources,
// KEP-2837), as the end of "pod-level resources (spec.resources) need ...",
// or "" when it can. Only a pod cgroup holds them, and podvisor makes one
// on cgroup v2 only, as root, with the cpu and memory controllers (S10.4);
// the kubelet, too, supports pod-level resources on cgroup v2 only. One
// answer for `run` (which refuses before anything is made) and `validate`.
std::string PodLevelResourcesUnenforceable(const CgroupInfo& info, bool root);

// The kubelet's conversion of a cpu request in millicores to cgroup v1
// shares (MilliCPUToShares), then to a v2 weight (CpuSharesToCpuWeight):
// 1 + (shares - 2) * 9999 / 262142.
int64_t CpuWeightFromMilli(int64_t milli_cpu);

// The files Create writes, in order: {"memory.max", "209715200"}, ...
// A limit whose controller is not in `controllers` is left out.
std::vector<std::pair<std::string, std::string>> LimitFiles(
    const PodCgroupLimits& limits, const std::vector<std::string>& controllers);

class PodCgroup {
 public:
  struct Options {
    std::filesystem::path mount;  // the cgroup2 mount, normally /sys/fs/cgroup
    std::string parent;           // --cgroup-parent, e.g. "/podvisor"
    std::string pod;              // the pod's name
    PodCgroupLimits limits;
    // The controllers the mount's root offers (its cgroup.controllers);
    // podvisor wants cpu, memory and pids of them.
    std::vector<std::string> controllers;
    // Where the supervisor's own cgroup is read from ("0::/path").
    std::filesystem::path self_cgroup_file = "/proc/self/cgroup";
    // S15: the pod was handed over (an upgrade in place, an adoption after
    // a crash): its cgroup exists, holds its containers and is ours.
    bool handed_over = false;
  };

  // Creates the pod cgroup (and missing parents), enables the controllers
  // down the path and writes the limits. On failure nothing it created is
  // left behind.
  static Result<PodCgroup> Create(Options options);

  PodCgroup(PodCgroup&& other) noexcept;
  PodCgroup& operator=(PodCgroup&& other) = delete;
  PodCgroup(const PodCgroup&) = delete;
  ~PodCgroup();  // Destroy(), errors ignored

  // The absolute directory of the pod cgroup.
  const std::filesystem::path& path() const { return path_; }
  // The pod cgroup as seen from the mount ("/podvisor/web"): the prefix of
  // each container's OCI cgroupsPath.
  const std::string& relative() const { return relative_; }
  // Set when the supervisor had to move into a leaf (see above).
  const std::optional<std::filesystem::path>& supervisor_leaf() const { return supervisor_leaf_; }

  // Kills what is left in the pod cgroup (cgroup.kill), removes the pod
  // cgroup with its children and the parents Create made (when empty).
  // Idempotent.
  Status Destroy();

 private:
  PodCgroup() = default;
  // DelegateControllers, moving the supervisor into a leaf on EBUSY (above).
  Status EnableControllers(const std::filesystem::path& dir);
  Status MoveSelfIntoLeaf(const std::filesystem::path& dir);

  Options options_;
  std::filesystem::path path_;
  std::string relative_;
  std::vector<std::filesystem::path> created_;  // directories Create made, outermost first
  std::optional<std::filesystem::path> supervisor_leaf_;
  bool destroyed_ = true;
};

// The words of a cgroup interface file (cgroup.controllers,
// cgroup.subtree_control); none when it cannot be read.
std::vector<std::string> ReadCgroupWords(const std::filesystem::path& file);

// Hands the controllers podvisor uses (cpu, memory, pids), those of them in
// `offered`, to the children of `dir` through its cgroup.subtree_control.
// A level that lists them already is not written to: it may hold
// processes (the root does), where the write would answer EBUSY.
Status DelegateControllers(const std::filesystem::path& dir,
                           const std::vector<std::string>& offered);

// Writes `value` to `dir/file` (one write, as the kernel wants it).
Status WriteCgroupFile(const std::filesystem::path& dir, const std::string& file,
                       const std::string& value);

// Kills every process in `dir` and below through cgroup.kill (Linux 5.14)
// and waits, event-driven through inotify on cgroup.events, at most
// `timeout_ms` for it to become unpopulated. Ok when it is empty.
Status KillCgroup(const std::filesystem::path& dir, int timeout_ms);

// Removes `dir` and every cgroup below it, deepest first (rmdir: the
// cgroups must be empty of processes). Ok when `dir` does not exist.
Status RemoveCgroupTree(const std::filesystem::path& dir);

// "populated 1" in dir/cgroup.events (false when the file is absent).
bool IsPopulated(const std::filesystem::path& dir);

}  // namespace podvisor::cgroups
