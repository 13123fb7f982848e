#include "oci/node_info.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

namespace podvisor::oci {

std::vector<std::string> HostIps() {
  std::vector<std::string> v4, v6;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || !(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK)) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
      // 169.254/16 is link-local.
      if ((ntohl(sin->sin_addr.s_addr) >> 16) == 0xa9fe) continue;
      ::inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
      v4.emplace_back(text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) continue;
      ::inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof text);
      v6.emplace_back(text);
    }
  }
  ::freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

int64_t NodeCpuMilli() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int64_t>(n) * 1000 : 0;
}

int64_t NodeEphemeralStorageBytes(const std::filesystem::path& path) {
  // The nearest existing ancestor: the state directory may not exist yet.
  std::filesystem::path p = path.empty() ? std::filesystem::path("/") : path;
  struct statvfs st {};
  while (::statvfs(p.c_str(), &st) != 0) {
    if (!p.has_parent_path() || p.parent_path() == p) return 0;
    p = p.parent_path();
  }
  return static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize);
}

void AddNodeFacts(ContainerConfigInput& in, bool host_network,
                  const std::filesystem::path& storage_path) {
  in.host_ips = HostIps();
  if (host_network) in.pod_ips = in.host_ips;
  in.node_cpu_milli = NodeCpuMilli();
  in.node_ephemeral_storage_bytes = NodeEphemeralStorageBytes(storage_path);
}

pod::DownwardApiNode LocalNode(const pod::Pod& pod, const std::filesystem::path& storage_path,
                               const std::vector<std::string>& pod_ips) {
  pod::DownwardApiNode node;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  node.node_name = name;
  node.host_ips = HostIps();
  if (pod.spec.host_network) node.pod_ips = node.host_ips;
  if (!pod_ips.empty()) node.pod_ips = pod_ips;
  node.cpu_milli = NodeCpuMilli();
  struct sysinfo si {};
  if (::sysinfo(&si) == 0) node.memory_bytes = static_cast<int64_t>(si.totalram) * si.mem_unit;
  node.ephemeral_storage_bytes = NodeEphemeralStorageBytes(storage_path);
  return node;
}

}  // namespace podvisor::oci
