// What `run` (and the shim, and tests) tell the Executor: the pod's
// directories, the runtime, the host's facts and the limits of its calls.
// Separate from executor.h so that the option structs can be read (and
// filled) without the shell's class.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cgroups/mode.h"
#include "common/clock.h"
#include "common/host_claim.h"
#include "network/plugin.h"
#include "network/pod_network.h"
#include "network/user_mode.h"
#include "oci/rootless_spec.h"
#include "oci/runtime_cli.h"
#include "pod/model.h"
#include "supervisor/executor/runtime_timeout.h"
#include "supervisor/lifecycle/lifecycle.h"
#include "supervisor/logs/log_files.h"

namespace podvisor::supervisor::executor {

// `run --network` and the CNI options (docs/INTERFACE.md "Networking").
struct PodNetworkOptions {
  network::NetworkMode mode = network::NetworkMode::kNone;
  std::filesystem::path conf_dir = "/etc/cni/net.d";
  std::vector<std::filesystem::path> bin_dirs = {"/usr/lib/cni", "/opt/cni/bin"};
  std::optional<std::string> network_name;  // --cni-network; unset: the first by file name
  // The built-in default network's conflist (net.d/) and host-local state
  // (networks/): one place per host, so that pods of every --state-dir
  // share one address range without clashing.
  std::filesystem::path default_dir = "/run/podvisor/cni";
  Duration plugin_timeout = network::kDefaultPluginTimeout;
  // slirp4netns and pasta (S22): whether the pod may reach the host's
  // loopback through the gateway address (--network-host-loopback), and
  // the bound on the tool's start.
  bool allow_host_loopback = false;
  Duration user_mode_timeout = network::kUserModeStartTimeout;
};

struct ExecutorOptions {
  std::filesystem::path bundle;
  std::filesystem::path state_dir;  // the pod's own: DIR/<pod>
  std::filesystem::path log_dir;    // the pod's own: DIR/<pod>
  oci::RuntimeBinary runtime;
  bool no_pivot = false;
  lifecycle::LifecycleOptions lifecycle;
  std::string cgroup_parent;    // "" = let the runtime choose
  cgroups::CgroupInfo cgroups;  // what this host has (DetectCgroups)
  int64_t node_memory_bytes = 0;
  std::string node_hostname;
  std::optional<int64_t> pids_limit;
  bool sandbox = true;  // own namespaces (needs root)
  // S21: podvisor runs in a user namespace of its own, without privileges
  // on the host (cli/rootless_run.h); what its configs leave out.
  std::optional<oci::RootlessConfig> rootless;
  std::filesystem::path podvisor_exe = "/proc/self/exe";
  std::filesystem::path image_cache_dir;  // where OCI layouts unpack (oci/image_cache.h)
  // S11.2: --log-max-size, --log-max-files.
  logs::LogRotation log_rotation{logs::kDefaultLogMaxSize, logs::kDefaultLogMaxFiles};
  // The bound on each create/start/delete call (runtime_timeout.h); zero:
  // unbounded.
  Duration runtime_timeout = kDefaultRuntimeTimeout;
  PodNetworkOptions network;
  // Where names that must be unique on the host are claimed (host_claim.h):
  // the pod cgroup's name and the hostPorts.
  std::filesystem::path host_claims_dir = HostClaim::kDefaultRoot;
  // `podvisor status` as text from a v1 Pod (`wide`: -o wide), for the
  // control protocol's {"op":"status","output":...}: lent by the CLI,
  // which owns the format, so a client that asks for text and one that
  // formats the Pod itself print the same. Unset: such requests get an
  // error reply, and the client formats the Pod itself.
  std::function<std::string(const nlohmann::json& pod, bool wide)> status_text;
  // Where the shell reads the time (the loop's clock, EventLoop::clock());
  // unset: the real clocks. Timers still wait on the kernel's monotonic
  // timerfd: a fake clock decides what is due when the loop wakes.
  const Clock* clock = nullptr;
};

}  // namespace podvisor::supervisor::executor
