// The task's own cgroup: where containerd's OCI spec (the bundle's
// config.json, linux.cgroupsPath) says the task belongs, as runc's shim
// puts a container there. On a cgroup v2 host the shim makes that cgroup,
// starts `podvisor run` inside it and passes --cgroup-parent=self, so the
// tree is
//
//   <mount>/<cgroupsPath>                 the task: what containerd, nerdctl
//                                         or Nomad account and kill
//   <mount>/<cgroupsPath>/_supervisor     podvisor run (self_parent.h)
//   <mount>/<cgroupsPath>/<pod>/<id>      the pod and its containers
//
// and an engine that kills the task's cgroup (cgroup.kill) ends the whole
// pod, and reads the whole pod's usage from it (Stats does).
//
// Where that cannot be done the shim keeps a cgroup of its own,
// /podvisor/containerd/NS/ID, and says why in its log: on a v1 or hybrid
// host (no one cgroup to nest under), for a spec without cgroupsPath, and
// for systemd's "slice:prefix:name" form, which only systemd may create
// (podvisor has no systemd cgroup driver). The annotation
// podvisor.cgroup-parent overrides both (docs/SHIM.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor::shim {

// What Create decides for a task.
struct CgroupChoice {
  std::string task_cgroup;    // "/default/t1" relative to the v2 mount, or "" (none)
  std::string cgroup_parent;  // what `run` gets: "self" with a task cgroup
  std::string note;           // why there is no task cgroup, for the log ("" when there is)
};

// The decision above. `cgroups_path` is config.json's linux.cgroupsPath
// ("" when absent), `unified` whether the host is cgroup v2 only,
// `annotation` the podvisor.cgroup-parent annotation ("" when unset).
CgroupChoice ChooseCgroup(const std::string& cgroups_path, bool unified,
                          const std::string& annotation, const std::string& ns,
                          const std::string& id);

// linux.cgroupsPath of an OCI config.json, "" when it has none.
std::string ReadCgroupsPath(const std::filesystem::path& config);

// Makes <mount>/<task_cgroup> (and missing parents), handing the wanted
// controllers (cpu, memory, pids, those of them the mount's root offers)
// down every level, and returns its cgroup.procs opened for writing: a
// child writes "0" to it before exec to move itself in. An existing task
// cgroup that holds processes is an error (another task owns it).
Result<Fd> CreateTaskCgroup(const std::filesystem::path& mount, const std::string& task_cgroup);

// Kills whatever is still in <mount>/<task_cgroup> (a SIGKILLed shim's
// pod) and removes it with every cgroup below it, deepest first; the
// parents (containerd's namespace level) stay, as runc leaves them. Ok
// when it does not exist.
Status RemoveTaskCgroup(const std::filesystem::path& mount, const std::string& task_cgroup);

}  // namespace podvisor::shim
