// Linux capabilities of a container process, as containerd's CRI plugin
// computes them: its default set, then securityContext.capabilities applied
// in containerd's order (add "ALL", drop "ALL", add each, drop each), so
// `drop: [ALL], add: [NET_BIND_SERVICE]` keeps exactly NET_BIND_SERVICE.
// Names are accepted with or without "CAP_", in any case, and every one is
// checked with libcap's cap_from_name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "pod/model.h"

namespace podvisor::oci {

// containerd's default set, sorted ("CAP_AUDIT_WRITE", ...).
std::vector<std::string> DefaultCapabilities();

// Every capability libcap has a name for (up to the kernel headers' last
// one), sorted: what a privileged container gets.
std::vector<std::string> AllCapabilities();

// "net_admin" / "CAP_NET_ADMIN" -> "CAP_NET_ADMIN"; error for unknown names.
Result<std::string> CanonicalCapabilityName(std::string_view name);

// The resulting set, sorted. `field` prefixes error messages
// ("spec.containers[0].securityContext.capabilities").
Result<std::vector<std::string>> ComputeCapabilities(const pod::SecurityContext* security,
                                                     std::string_view field);

}  // namespace podvisor::oci
