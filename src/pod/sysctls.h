// Sysctls a pod may set (securityContext.sysctls), by the kubelet's rules
// (pkg/kubelet/sysctl/namespace.go): only those the kernel keeps per IPC
// or network namespace, so that setting one changes the pod and never the
// host. The kubelet further splits these into "safe" ones (always allowed)
// and "unsafe" ones (allowed by the node's --allowed-unsafe-sysctls); on a
// host without a kubelet the one running podvisor is that administrator,
// so every namespaced sysctl is allowed and the safe list is only
// informative (IsSafeSysctl).
#pragma once

#include <string>
#include <string_view>

namespace podvisor::pod {

enum class SysctlNamespace { kNone, kIpc, kNetwork, kUts };
std::string_view SysctlNamespaceName(SysctlNamespace ns);  // "ipc", "net", ...

// The API server's sysctl name rule: dot- or slash-separated lower-case
// segments, at most 253 characters.
bool IsValidSysctlName(std::string_view name);
// "net/ipv4/ip_forward" -> "net.ipv4.ip_forward" (the kernel's two spellings).
std::string NormalizeSysctlName(std::string_view name);

SysctlNamespace SysctlNamespaceOf(std::string_view name);
bool IsSafeSysctl(std::string_view name);

}  // namespace podvisor::pod
