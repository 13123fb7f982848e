#include "hostfs/instance_plan.h"

#include "hostfs/idmapped_pod.h"
#include "image/layer_merge.h"
#include "oci/capabilities.h"
#include "oci/devices.h"
#include "oci/node_info.h"

namespace podvisor::hostfs {

Result<HostFacts> ReadHostFacts(const pod::Container& container,
                                const std::filesystem::path& storage_path) {
  HostFacts host;
  // "All capabilities" is what we hold ourselves, as with containerd.
  host.available_capabilities = oci::CurrentBoundingCapabilities();
  host.oom_score_adj_floor = oci::OomScoreAdjFloor();
  if (oci::IsPrivileged(container)) {
    auto devices = oci::ScanHostDevices();
    if (!devices) return devices.take_error();
    host.devices = std::move(*devices);
  }
  oci::ContainerConfigInput node;
  oci::AddNodeFacts(node, /*host_network=*/false, storage_path);
  host.host_ips = std::move(node.host_ips);
  host.node_cpu_milli = node.node_cpu_milli;
  host.node_ephemeral_storage_bytes = node.node_ephemeral_storage_bytes;
  return host;
}

std::string InstanceRuntimeId(std::string_view pod, std::string_view container, int instance,
                              uint64_t attempt) {
  return std::string(pod) + "_" + std::string(container) + "_" + std::to_string(instance) + "_" +
         std::to_string(attempt);
}

WritableRootPaths InstanceRoot(const std::filesystem::path& instance_dir,
                               const image::Image& image) {
  WritableRootPaths root{image.layers.empty() ? image.rootfs : image.layers.front(),
                         instance_dir / InstanceFile::kUpperDir,
                         instance_dir / InstanceFile::kWorkDir,
                         instance_dir / InstanceFile::kRootfsDir};
  if (!image.layers.empty()) root.lower_dirs = image.layers;
  return root;
}

std::filesystem::path SharedRoot(const image::Image& image) {
  if (image.layers.empty()) return image.rootfs;
  auto tree = image::MergedTreePath(image.layers, image::MergedTree::kWritableRoot);
  return tree ? *tree : std::filesystem::path();
}

std::filesystem::path TerminationMessageFile(const std::filesystem::path& instance_dir) {
  return instance_dir / InstanceFile::kTerminationLog;
}

oci::ContainerConfigInput PlanContainerConfig(const pod::Pod& pod, const pod::Container& container,
                                              const image::Image& image, const PodLayout& layout,
                                              const InstanceFacts& facts, const HostFacts& host) {
  oci::ContainerConfigInput in;
  in.bundle = facts.bundle;
  in.root_path =
      facts.own_root ? InstanceRoot(facts.instance_dir, image).merged : SharedRoot(image);
  in.volumes_dir = layout.VolumesDir();
  in.sub_path_sources = facts.sub_path_sources;
  in.termination_message_file = TerminationMessageFile(facts.instance_dir);
  in.etc_hosts = layout.HostsFile();
  in.etc_hostname = layout.HostnameFile();
  in.etc_resolv_conf = layout.ResolvConfFile();
  if (facts.user_namespace) {
    // S20.22: bound from the pod's idmapped mounts (idmapped_pod.h).
    in.user_namespace = facts.user_namespace;
    in.idmapped_volume_sources = IdmappedVolumeSources(pod, layout);
    in.etc_hosts = layout.IdmappedEtcDir() / layout.HostsFile().filename();
    in.etc_hostname = layout.IdmappedEtcDir() / layout.HostnameFile().filename();
    in.etc_resolv_conf = layout.IdmappedEtcDir() / layout.ResolvConfFile().filename();
  }
  // The pod's /dev/shm is mounted only in its own IPC namespace (the
  // Executor's Setup); otherwise each container gets a private one.
  if (!pod.spec.host_ipc && !facts.namespaces.ipc.empty()) in.pod_shm_dir = layout.ShmDir();
  in.namespaces = facts.namespaces;
  if (!facts.pod_cgroup.empty()) {
    in.cgroups_path = facts.pod_cgroup + "/" + facts.runtime_id;
    in.memory_oom_group = true;  // S10.4
  } else if (!facts.cgroup_parent.empty()) {
    in.cgroups_path = facts.cgroup_parent + "/" +
                      (facts.pod_cgroup_name.empty() ? pod.metadata.name : facts.pod_cgroup_name) +
                      "/" + facts.runtime_id;
  }
  in.available_capabilities = host.available_capabilities;
  if (oci::IsPrivileged(container)) in.host_devices = host.devices;
  in.node_memory_bytes = host.node_memory_bytes;
  in.oom_score_adj_floor = host.oom_score_adj_floor;
  in.node_hostname = host.node_hostname;
  in.host_ips = host.host_ips;
  // status.podIPs: the pod network's addresses (CNI's result, or the
  // host's), else the host's for a hostNetwork pod (node_info.h).
  if (pod.spec.host_network) in.pod_ips = host.host_ips;
  if (!facts.pod_ips.empty()) in.pod_ips = facts.pod_ips;
  in.node_cpu_milli = host.node_cpu_milli;
  in.node_ephemeral_storage_bytes = host.node_ephemeral_storage_bytes;
  in.pids_limit = facts.pids_limit;
  in.rootless = host.rootless;
  return in;
}

}  // namespace podvisor::hostfs
