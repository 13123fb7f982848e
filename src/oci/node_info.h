// What the kubelet would report about its node, read from this host: its
// addresses (the downward API's status.hostIP(s)) and its allocatable
// resources (the default of resourceFieldRef limits left unset).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "oci/spec.h"
#include "pod/env_resolution.h"

namespace podvisor::oci {

// The addresses of the host's interfaces that are up, loopback and
// link-local ones left out: IPv4 first, then IPv6, each in interface order.
std::vector<std::string> HostIps();

// Online CPUs, in millicores.
int64_t NodeCpuMilli();

// The size of the filesystem holding PATH (the kubelet's ephemeral-storage
// capacity is its root directory's filesystem); 0 when unknown.
int64_t NodeEphemeralStorageBytes(const std::filesystem::path& path);

// Fills host_ips, pod_ips (the host's with hostNetwork: the hook point
// where a pod network's addresses belong otherwise), node_cpu_milli and
// node_ephemeral_storage_bytes (of the filesystem of STORAGE_PATH).
void AddNodeFacts(ContainerConfigInput& in, bool host_network,
                  const std::filesystem::path& storage_path);

// The same facts for the downward API outside a container config (the
// pod's downwardAPI volumes and subPathExpr): the host name, memory from
// sysinfo, storage of STORAGE_PATH's filesystem.
pod::DownwardApiNode LocalNode(const pod::Pod& pod, const std::filesystem::path& storage_path,
                               const std::vector<std::string>& pod_ips = {});

}  // namespace podvisor::oci
