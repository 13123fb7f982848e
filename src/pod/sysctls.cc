#include "pod/sysctls.h"

#include <algorithm>
#include <array>

namespace podvisor::pod {

std::string_view SysctlNamespaceName(SysctlNamespace ns) {
  switch (ns) {
    case SysctlNamespace::kNone:
      return "none";
    case SysctlNamespace::kIpc:
      return "ipc";
    case SysctlNamespace::kNetwork:
      return "net";
    case SysctlNamespace::kUts:
      return "uts";
  }
  return "?";
}

bool IsValidSysctlName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  // Segments of [a-z0-9]([-_a-z0-9]*[a-z0-9])? separated by '.' or '/'.
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find_first_of("./", start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view seg = name.substr(start, end - start);
    if (seg.empty()) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!alnum(seg.front()) || !alnum(seg.back())) return false;
    for (char c : seg) {
      if (!alnum(c) && c != '-' && c != '_') return false;
    }
    start = end + 1;
  }
  return true;
}

std::string NormalizeSysctlName(std::string_view name) {
  // The kernel accepts both; a name with '/' separators may carry '.'
  // inside a segment (net/ipv4/conf/eth0.100/...), which the dotted form
  // spells with '/': swap them, as the kubelet's ConvertSysctlVariableToDotsSeparator.
  std::string out(name);
  if (out.find('/') == std::string::npos) return out;
  for (char& c : out) {
    if (c == '/') {
      c = '.';
    } else if (c == '.') {
      c = '/';
    }
  }
  return out;
}

SysctlNamespace SysctlNamespaceOf(std::string_view raw) {
  std::string name = NormalizeSysctlName(raw);
  if (name == "kernel.sem") return SysctlNamespace::kIpc;
  for (std::string_view prefix : {"kernel.shm", "kernel.msg", "fs.mqueue."}) {
    if (name.starts_with(prefix)) return SysctlNamespace::kIpc;
  }
  if (name.starts_with("net.")) return SysctlNamespace::kNetwork;
  if (name == "kernel.hostname" || name == "kernel.domainname") return SysctlNamespace::kUts;
  return SysctlNamespace::kNone;
}

bool IsSafeSysctl(std::string_view raw) {
  // pkg/kubelet/sysctl/safe_sysctls.go (Kubernetes 1.32).
  static constexpr std::array<std::string_view, 12> kSafe = {"kernel.shm_rmid_forced",
                                                             "net.ipv4.ip_local_port_range",
                                                             "net.ipv4.tcp_syncookies",
                                                             "net.ipv4.ping_group_range",
                                                             "net.ipv4.ip_unprivileged_port_start",
                                                             "net.ipv4.ip_local_reserved_ports",
                                                             "net.ipv4.tcp_keepalive_time",
                                                             "net.ipv4.tcp_fin_timeout",
                                                             "net.ipv4.tcp_keepalive_intvl",
                                                             "net.ipv4.tcp_keepalive_probes",
                                                             "net.ipv4.tcp_rmem",
                                                             "net.ipv4.tcp_wmem"};
  std::string name = NormalizeSysctlName(raw);
  return std::find(kSafe.begin(), kSafe.end(), name) != kSafe.end();
}

}  // namespace podvisor::pod
