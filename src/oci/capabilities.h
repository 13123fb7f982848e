// Linux capabilities of a container process, as containerd's CRI plugin
// computes them: its default set, then securityContext.capabilities applied
// in containerd's order (add "ALL", drop "ALL", add each, drop each), so
// `drop: [ALL], add: [NET_BIND_SERVICE]` keeps exactly NET_BIND_SERVICE.
// Names are accepted with or without "CAP_", in any case, and every one is
// checked with libcap's cap_from_name.
#pragma once

#include <optional>
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

// The capabilities in this process's bounding set (PR_CAPBSET_READ), sorted:
// all a container started by podvisor can possibly get. containerd's
// privileged containers get exactly these ("all current capabilities");
// in a sandbox that dropped some, AllCapabilities() would make runc fail.
std::vector<std::string> CurrentBoundingCapabilities();

// S10.3: the lowest oom_score_adj this process can give what it starts, or
// nullopt when there is no floor. Lowering oom_score_adj below one's own
// needs CAP_SYS_RESOURCE; without it in the effective set, the floor is
// this process's own value (as containerd's restrict_oom_score_adj clamps
// to containerd's), and a config asking for less would make the runtime
// fail to start the container.
std::optional<int> OomScoreAdjFloor();

// "net_admin" / "CAP_NET_ADMIN" -> "CAP_NET_ADMIN"; error for unknown names.
Result<std::string> CanonicalCapabilityName(std::string_view name);

// The resulting set, sorted. `field` prefixes error messages
// ("spec.containers[0].securityContext.capabilities"). `available` (null:
// AllCapabilities()) is what "ALL" means; adding a capability outside it is
// an error, as the runtime could not grant it.
Result<std::vector<std::string>> ComputeCapabilities(
    const pod::SecurityContext* security, std::string_view field,
    const std::vector<std::string>* available = nullptr);

// S14.35: every capability a container of `spec` adds is in `available`
// (this process's bounding set): otherwise the runtime could not grant it
// and every create would fail, so `run` refuses before any container. The
// error names the container's field and the capability.
Status CheckCapabilitiesAvailable(const pod::PodSpec& spec,
                                  const std::vector<std::string>& available);

}  // namespace podvisor::oci
