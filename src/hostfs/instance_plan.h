// One container instance's plan: the single place that turns the pod, its
// image, the pod's layout and the facts of a run into the input of
// GenerateConfig (spec.h). `run` (the Executor's PrepareInstance, through
// PrepareContainerInstance in instance.h), `validate` and `oci-config` all
// call PlanContainerConfig, so what `oci-config` prints is what `run` gives
// the runtime, and tier 3 runs the configs `run` would write.
//
// It lives in oci/ rather than beside the Executor because the tier-3 test
// (runc_test.cc) and the CLI use it too, and oci/ must not depend on the
// supervisor. PlanContainerConfig does no I/O; what it needs to know of the
// host is read once by ReadHostFacts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "hostfs/layout.h"
#include "image/image.h"
#include "oci/spec.h"
#include "pod/model.h"

namespace podvisor::hostfs {

// What the host is, as a container's config sees it.
struct HostFacts {
  // What "all capabilities" means; nullopt: AllCapabilities(), which
  // validate uses to judge the pod rather than this host.
  std::optional<std::vector<std::string>> available_capabilities;
  std::vector<oci::HostDevice> devices;    // the host's /dev, for privileged containers
  int64_t node_memory_bytes = 0;           // S10.3, S14.4: run's --node-memory, else the RAM
  std::optional<int> oom_score_adj_floor;  // S10.3: oci::OomScoreAdjFloor(); nullopt: none
  std::string node_hostname;
  std::vector<std::string> host_ips;  // status.hostIPs (node_info.h)
  int64_t node_cpu_milli = 0;
  int64_t node_ephemeral_storage_bytes = 0;
  // S21: podvisor runs without root (run's choice, like node_hostname).
  std::optional<oci::RootlessConfig> rootless;
};

// This host's capabilities, devices (only when `container` is privileged:
// scanning /dev costs a directory walk), addresses, CPUs and the storage of
// `storage_path`'s filesystem. node_memory_bytes and node_hostname are left
// to the caller: `run` takes them from its options.
Result<HostFacts> ReadHostFacts(const pod::Container& container,
                                const std::filesystem::path& storage_path);

// What one instance's config depends on that only a run decides.
struct InstanceFacts {
  std::filesystem::path bundle;        // absolute: images/, seccomp/
  std::string runtime_id;              // the runtime's container id; names the cgroup
  std::filesystem::path instance_dir;  // the runtime bundle (--bundle) of this instance
  // true: the instance writes into its own overlay (instance_dir/rootfs),
  // which needs privileges (the namespaces sandbox); false: into the
  // image's shared root (SharedRoot).
  bool own_root = false;
  // S14.2: the bound sources of subPath mounts (volumes.h BindSubPaths);
  // empty for display (validate, oci-config).
  std::map<std::size_t, std::filesystem::path> sub_path_sources;
  // The pod sandbox's namespaces; empty: the host's. The pod's /dev/shm is
  // mounted only in its own IPC namespace.
  oci::NamespacePaths namespaces;
  // hostUsers: false (S20): the pod's ids (its user namespace is
  // namespaces.user): the overlay root and the volumes are idmapped to it.
  std::optional<oci::PodUserNamespaceIds> user_namespace;
  // The relative path of podvisor's own pod cgroup (cgroup v2, S10.4), or
  // "" when there is none; then each instance's cgroup is
  // <cgroup_parent>/<pod>/<runtime_id>, or the runtime's choice when
  // cgroup_parent is empty too.
  std::string pod_cgroup;
  std::string cgroup_parent;
  // The pod cgroup's name under cgroup_parent (cgroups/cgroup_name.h);
  // "" = the pod's name (validate, oci-config).
  std::string pod_cgroup_name;
  std::vector<std::string> pod_ips;  // the pod network's; empty: the hostNetwork rule
  std::optional<int64_t> pids_limit;
};

// The runtime id of a container instance: unique per create attempt, since
// a failed create is retried under the same instance number while the
// runtime may still be cleaning up the failed one.
std::string InstanceRuntimeId(std::string_view pod, std::string_view container, int instance,
                              uint64_t attempt);

// The instance's writable root: the image rootfs or its layers below,
// upper/ and work/ beside the merged rootfs/ in `instance_dir`.
WritableRootPaths InstanceRoot(const std::filesystem::path& instance_dir,
                               const image::Image& image);

// The root an instance without its own overlay writes into (--sandbox
// none): a plain image's rootfs, or a layered image's layers merged into
// one writable tree of the store (image::MergedTree::kWritableRoot, which
// PrepareContainerInstance makes). No I/O.
std::filesystem::path SharedRoot(const image::Image& image);
std::filesystem::path TerminationMessageFile(const std::filesystem::path& instance_dir);

// Fills everything GenerateConfig reads for `container` (an element of
// pod.spec) from the pod, its image, the pod's layout and the facts.
oci::ContainerConfigInput PlanContainerConfig(const pod::Pod& pod, const pod::Container& container,
                                              const image::Image& image, const PodLayout& layout,
                                              const InstanceFacts& facts, const HostFacts& host);

}  // namespace podvisor::hostfs
