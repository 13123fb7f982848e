// `run` without root (docs/SEMANTICS.md S21): the entry into podvisor's own
// user namespace before anything is made, and what a pod may not ask of a
// supervisor that has no privileges on the host.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "cgroups/mode.h"
#include "common/result.h"
#include "network/pod_network.h"
#include "pod/model.h"
#include "process/user_namespace_entry.h"

namespace podvisor::cli {

struct RootlessRun {
  // podvisor runs in a user namespace (and mount namespace) of its own,
  // without privileges on the host (S21.1).
  bool active = false;
  process::UserNamespaceMode mode = process::UserNamespaceMode::kNone;
  // S21.9: the namespaces of a sandbox holder a SIGKILLed supervisor of
  // this pod left, rather than new ones.
  bool joined = false;
  pid_t joined_holder = 0;
};

// S21.1, S21.3, S21.9: privileged (CAP_SYS_ADMIN in the initial user
// namespace): nothing. Otherwise the holder a previous supervisor of the
// pod in `pod_state_dir` left is joined when alive, else a new user
// namespace is entered as PlanUserNamespace says, its warning logged once.
// An error leaves the process where it was when nothing was entered yet.
Result<RootlessRun> EnterRootless(const std::filesystem::path& pod_state_dir);

// S21.6, S21.7: what a rootless pod asks that podvisor cannot give
// without privileges on the host, as one message naming each field; nullopt
// when nothing is refused.
std::optional<std::string> RootlessRefusal(const pod::Pod& pod, network::NetworkMode mode);

// S21.5: the cgroup parent of a rootless pod and the one warning when it
// gets none: `asked` (--cgroup-parent) where this process's own cgroup v2
// directory is delegated to the user (then `self`, whatever was asked,
// unless `asked` is empty), else "" (no pod cgroup, no limits: the
// runtime is given no cgroup path and no resources).
std::string RootlessCgroupParent(const cgroups::CgroupInfo& cg, const std::string& asked,
                                 std::string& warning);

}  // namespace podvisor::cli
