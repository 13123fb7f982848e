// `run --cgroup-parent=self` (docs/INTERFACE.md): the pod nests under the
// cgroup podvisor was started in, so an engine that runs podvisor as a
// task (containerd's shim, Nomad's raw_exec) and kills or accounts the
// task's cgroup reaches every container too.
//
//   <mount>/<self>/_supervisor     podvisor itself (and the runtime calls,
//                                  hooks and sandbox it starts)
//   <mount>/<self>/<pod>           the pod cgroup (pod_cgroup.h), beside it
//
// cgroup v2 lets a cgroup delegate controllers to children only while it
// holds no processes ("no internal processes"), so podvisor moves into the
// leaf before the pod cgroup is made, and the pod cgroup uses only the
// controllers <self> was given, so nothing above <self> is written to. The underscore keeps the
// leaf apart from any pod name (DNS labels have none). When the pod has ended, Leave undoes it: the
// controllers podvisor enabled in <self> are disabled again, podvisor moves back and the leaf is
// removed, so the engine finds its cgroup as it made it.
//
// cgroup v2 only: on a v1 or hybrid host each controller has its own
// hierarchy and podvisor's place in them, and there is no one cgroup to
// nest under; `run` refuses `self` there (exit 3) instead of guessing.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cgroups/mode.h"
#include "common/result.h"

namespace podvisor::cgroups {

inline constexpr const char* kSelfCgroupParent = "self";
// `run --cgroup-parent=auto` (the systemd unit's): `self` where it can
// work (cgroup v2, root), the default /podvisor elsewhere, so one unit
// file serves v2 hosts, where the pod then lies inside the unit's cgroup,
// and v1 or hybrid ones, where it cannot.
inline constexpr const char* kAutoCgroupParent = "auto";
inline constexpr const char* kDefaultCgroupParent = "/podvisor";
inline constexpr const char* kSupervisorLeaf = "_supervisor";

// The cgroup v2 path of `self_cgroup_file`'s "0::/a/b" line ("/a/b").
// An error when there is none (no cgroup v2) or the process's cgroup is
// not visible ("(deleted)", outside its cgroup namespace's root).
Result<std::string> ReadSelfCgroup(const std::filesystem::path& self_cgroup_file);

// `auto`'s choice for a process on a host with `cg`: kSelfCgroupParent
// on cgroup v2 as root, else kDefaultCgroupParent, with the reason self
// was not chosen in `why_not_self` ("" when it was).
std::string ResolveAutoCgroupParent(const CgroupInfo& cg, bool root, std::string& why_not_self);

// S21.5: whether this process's own cgroup v2 directory is delegated to
// it (systemd's Delegate=yes, or a directory an administrator chowned):
// it may write the directory, its cgroup.procs and its
// cgroup.subtree_control, so `self` can nest the pod cgroup beside it
// without root. "" when it is; else why not, for the user.
std::string SelfCgroupNotDelegated(const CgroupInfo& cg,
                                   const std::filesystem::path& self_cgroup_file);

class SupervisorLeaf {
 public:
  // Moves `pid` from its cgroup <self> into <self>/_supervisor under
  // `mount`. parent() is then <self>, the pod's --cgroup-parent.
  static Result<SupervisorLeaf> Enter(const std::filesystem::path& mount,
                                      const std::filesystem::path& self_cgroup_file, pid_t pid);

  SupervisorLeaf(SupervisorLeaf&& other) noexcept;
  SupervisorLeaf& operator=(SupervisorLeaf&&) = delete;
  SupervisorLeaf(const SupervisorLeaf&) = delete;
  ~SupervisorLeaf();  // Leave(), errors ignored

  // "/a/b": <self> relative to the mount.
  const std::string& parent() const { return parent_; }
  // The controllers the engine gave <self> (its cgroup.controllers): the
  // only ones the pod cgroup may use, so that nothing above <self>, which
  // is the engine's, is ever written to.
  std::vector<std::string> DelegatedControllers() const;
  const std::filesystem::path& leaf() const { return leaf_; }

  // After the pod cgroup is gone: restores <self>'s subtree_control, moves
  // the process back and removes the leaf. Idempotent.
  Status Leave();

 private:
  SupervisorLeaf() = default;

  std::filesystem::path self_dir_;  // <mount>/<self>
  std::filesystem::path leaf_;
  std::string parent_;
  std::vector<std::string> controllers_before_;  // <self>'s subtree_control at Enter
  pid_t pid_ = 0;
  bool entered_ = false;
};

}  // namespace podvisor::cgroups
