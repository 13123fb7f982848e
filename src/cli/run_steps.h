// `podvisor run`'s options and the steps of RunPod (run_cmd.cc) that
// check the host and the options and prepare the supervisor process
// before the Executor is made: each either goes on or refuses the run with
// an exit status and one message (docs/INTERFACE.md's exit codes).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "cgroups/mode.h"
#include "cgroups/self_parent.h"
#include "cli/commands.h"
#include "cli/pod_loading.h"
#include "cli/user_dirs.h"
#include "image/image.h"
#include "pod/model.h"
#include "supervisor/executor/executor.h"

namespace podvisor::cli {

// What `podvisor run` was given (AddRunCommand).
struct RunOptions {
  std::string bundle;
  std::string file;  // -f
  std::string runtime;
  std::string state_dir = DefaultStateDir();  // S21.4: the user's own without root
  std::string log_dir = DefaultLogDir();
  std::string cgroup_parent = cgroups::kDefaultCgroupParent;
  std::optional<double> grace;
  std::string backoff_initial = "10s";
  std::string backoff_max = "300s";
  std::string backoff_reset = "10m";
  std::string runtime_timeout = "2m";
  std::optional<int64_t> pids_limit;
  std::string log_level = "info";
  std::string log_format = "text";
  bool no_pivot = false;
  std::string sandbox = "auto";
  std::string log_max_size = "10Mi";
  std::optional<std::string> node_memory;  // default: this host's RAM
  int log_max_files = supervisor::logs::kDefaultLogMaxFiles;
  std::string network;  // "": the default (network::DefaultNetworkMode)
  std::string cni_conf_dir = "/etc/cni/net.d";
  std::string cni_bin_dir = kDefaultCniBinDirs;
  std::optional<std::string> cni_network;
  bool network_host_loopback = false;  // S22.5
  ConfigFiles config_files;
};

// A step of RunPod that refuses the run: the exit status, its message
// printed; nullopt: go on.
using Refusal = std::optional<int>;

// Prints `message` as podvisor's error: exit_code.
Refusal Refuse(int exit_code, const std::string& message);

// What `run`'s options say of the supervisor beyond the pod: the
// Lifecycle's durations, log rotation, the node's memory, the runtime
// timeout.
Refusal ParseSupervisorOptions(const RunOptions& opts, supervisor::executor::ExecutorOptions& ex);

// Each image of the bundle loaded once, into `images` by container name;
// image stop signals into the Lifecycle's options.
Refusal LoadImages(const pod::Pod& pod, const std::string& bundle,
                   const image::ImageLoadOptions& options,
                   std::map<std::string, image::Image>& images,
                   supervisor::lifecycle::LifecycleOptions& lifecycle);

// The supervisor process itself: its oom_score_adj, the child subreaper.
Refusal PrepareSupervisorProcess();

// --cgroup-parent=self: into a leaf of our own cgroup first.
Refusal EnterSelfCgroupParent(bool root, cgroups::CgroupInfo& cg,
                              std::optional<cgroups::SupervisorLeaf>& supervisor_leaf,
                              std::string& cgroup_parent);

// The pod's network options and whether it gets its own namespaces.
Refusal ChooseNetwork(const RunOptions& opts, const pod::Pod& pod, bool root, bool rootless,
                      bool& sandbox, supervisor::executor::PodNetworkOptions& network);

// S21.4: a state directory another user owns is never used.
Refusal CheckOwnStateDir(const std::string& state_dir);

// A host that cannot run the pod fails once, naming why (S2.3); an
// initramfs root sets --no-pivot.
Refusal CheckHost(RunOptions& opts, const pod::Pod& pod, bool root, bool sandbox);

// S10.11: spec.resources needs a pod cgroup.
Refusal CheckPodLevelResources(const pod::Pod& pod, const cgroups::CgroupInfo& cg, bool root,
                               const std::string& cgroup_parent);

}  // namespace podvisor::cli
