// OCI runtime-spec 1.0.2 config.json for one container instance.
//
// The supervisor describes the instance (ContainerConfigInput: where its
// root, volumes and pod files are, which namespaces to join, its cgroup,
// the node's memory) and GenerateConfig turns pod + container + image into
// the config. Generation is pure apart from reading the image's
// /etc/passwd, /etc/group and a Localhost seccomp profile: it mounts and
// creates nothing (rootfs.h and volumes.h do). A field podvisor cannot
// honour is an error naming the field, never silently dropped. The JSON is
// deterministic (object keys sorted, lists in a fixed order).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "image/image.h"
#include "oci/rootless_spec.h"
#include "pod/model.h"

namespace podvisor::oci {

// Namespaces of the pod sandbox to join by path ("/proc/<pid>/ns/net" or a
// pinned bind mount). Empty: network/ipc/uts get a namespace of their own
// (hostNetwork/hostIPC/hostPID: the host's, whatever is given here); pid is
// joined only for shareProcessNamespace, where a path is required.
struct NamespacePaths {
  std::string network;
  std::string ipc;
  std::string uts;
  std::string pid;
  // hostUsers: false (S20): the pod's user namespace, which owns the
  // others; empty: the host's.
  std::string user;
};

// hostUsers: false (S20): the pod's block of host ids. Container id 0 is
// host id host_uid (host_gid for groups), for `size` ids, the same block
// for uids and gids as the kubelet allocates it.
struct PodUserNamespaceIds {
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
  uint32_t size = 0;
};

// A host device node handed to privileged containers (linux.devices).
struct HostDevice {
  std::string path;  // "/dev/sda"
  char type = 'c';   // 'c' or 'b'
  int64_t major = 0;
  int64_t minor = 0;
  uint32_t file_mode = 0;  // permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct ContainerConfigInput {
  std::filesystem::path bundle;       // the pod bundle: images/, seccomp/
  std::filesystem::path root_path;    // root.path: the instance's merged overlay
  std::filesystem::path volumes_dir;  // emptyDir volume <v> is <volumes_dir>/<v>
  // S14.2: the bound source of volumeMounts[i]'s subPath (volumes.h
  // BindSubPaths). A mount with a subPath and no entry here shows the
  // volume's path joined with the subPath, which is only fit for display
  // (validate, oci-config): a container must never be created from it.
  std::map<std::size_t, std::filesystem::path> sub_path_sources;
  std::filesystem::path termination_message_file;  // S11.3, per instance
  std::filesystem::path etc_hosts;
  std::filesystem::path etc_hostname;
  std::filesystem::path etc_resolv_conf;
  // The pod's /dev/shm (a tmpfs shared through the pod IPC namespace).
  // Empty: a private 64 MiB tmpfs. Ignored for hostIPC (the host's /dev/shm).
  std::filesystem::path pod_shm_dir;
  NamespacePaths namespaces;
  // hostUsers: false (S20): linux.uidMappings/gidMappings and the user
  // namespace (namespaces.user); nullopt: the host's user namespace.
  std::optional<PodUserNamespaceIds> user_namespace;
  // hostUsers: false (S20): the idmapped mount (hostfs/idmap.h) each
  // volume is bound from instead of its own path, by volume name.
  std::map<std::string, std::filesystem::path> idmapped_volume_sources;
  std::string cgroups_path;  // linux.cgroupsPath, e.g. "/podvisor/web/app"
  // S21: podvisor without root; nullopt: it has root on the host.
  std::optional<RootlessConfig> rootless;
  bool memory_oom_group = false;  // resources.unified memory.oom.group=1 (cgroup v2, S10.4)
  int64_t node_memory_bytes = 0;  // S10.3
  // S10.3: process.oomScoreAdj is raised to this when lower (capabilities.h
  // OomScoreAdjFloor); nullopt: no floor (validate judges the pod).
  std::optional<int> oom_score_adj_floor;
  std::string node_hostname;  // what hostNetwork pods see as hostname
  // The downward API's status.hostIP(s) and status.podIP(s) (node_info.h).
  // pod_ips is the pod network's addresses: the host's with hostNetwork;
  // a pod network (CNI) fills in its own.
  std::vector<std::string> host_ips;
  std::vector<std::string> pod_ips;
  // Node allocatable for resourceFieldRef limits left unset (node_info.h).
  int64_t node_cpu_milli = 0;
  int64_t node_ephemeral_storage_bytes = 0;
  std::optional<int64_t> pids_limit;     // linux.resources.pids.limit
  std::vector<HostDevice> host_devices;  // linux.devices of privileged containers
  // What "all capabilities" means (privileged, add: [ALL]):
  // CurrentBoundingCapabilities() in production; nullopt = AllCapabilities()
  // (deterministic, for golden tests).
  std::optional<std::vector<std::string>> available_capabilities;
  // Read only for a volumeMount with mountPropagation HostToContainer or
  // Bidirectional, to check its source can propagate (mount_propagation.h).
  std::filesystem::path mountinfo = "/proc/self/mountinfo";
  // Read only for appArmorProfile Localhost: whether the kernel has
  // AppArmor on ("Y"), and the profiles loaded ("name (mode)" lines).
  std::filesystem::path apparmor_enabled = "/sys/module/apparmor/parameters/enabled";
  std::filesystem::path apparmor_profiles = "/sys/kernel/security/apparmor/profiles";
};

// "spec.containers[1]" or "spec.initContainers[0]": the prefix of every
// error about `container`, which must be an element of pod.spec.
std::string ContainerFieldPath(const pod::Pod& pod, const pod::Container& container);

// The pod's hostname: spec.hostname, else the pod name cut to 63
// characters (trailing '-' and '.' removed, as the kubelet does); the
// node's hostname for hostNetwork pods.
std::string PodHostname(const pod::Pod& pod, const std::string& node_hostname);

Result<nlohmann::json> GenerateConfig(const pod::Pod& pod, const pod::Container& container,
                                      const image::Image& image, const ContainerConfigInput& input);

// The privileged and read-only-root decisions of a container (container
// securityContext only; Kubernetes has no pod-level form of these).
bool IsPrivileged(const pod::Container& container);
bool HasReadOnlyRoot(const pod::Container& container);

// Writes `config` to `file` atomically (temp file + rename), 0600; not
// synced to disk (a config outlives no crash, see spec.cc).
Status WriteConfigFile(const nlohmann::json& config, const std::filesystem::path& file);

}  // namespace podvisor::oci
