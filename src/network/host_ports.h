// hostPorts on the host (docs/SEMANTICS.md S14.32).
//
// A hostPort is a DNAT rule (CNI's portmap) that takes every connection to
// the port before any socket of the host sees it. Two things must hold
// before the rule is added:
//   - no pod of any state directory holds the port: each is claimed in the
//     host-wide claims directory (host_claim.h) for the pod's life; the
//     same-directory check (pod_network.h FindHostPortConflict) stays, for
//     its finer answer on distinct hostIPs;
//   - no host process listens on it: the rule would silently take the
//     service's traffic away (or the pod's port would be dead, depending on
//     who came first). `run` refuses rather than warns, since either end is
//     an outage that only shows up later, while choosing another hostPort
//     is a one-line change.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/host_claim.h"
#include "common/result.h"
#include "network/attachment.h"

namespace podvisor::network {

inline constexpr const char* kHostPortClaims = "host-ports";

// "8080/TCP" or "8080/TCP on 10.0.0.1".
std::string HostPortName(const PortMapping& m);

// A hostIP that means every host address: "", "0.0.0.0" or "::".
bool WildcardHostIp(const std::string& ip);

// Whether a socket of the host's network namespace listens on (TCP) or is
// bound to (UDP) `m`'s host address and port, found by binding a probe
// socket there the way the service's own bind would clash. SCTP is not
// probed.
bool HostProcessListens(const PortMapping& m);

// Refuses the first wanted port a host process listens on, then claims
// every one for `owner` host-wide. The error names the port and its holder.
// `probe_listeners` false: the pod's own user-mode network tool listens on
// its ports (S22), so an adopting supervisor takes the claims back without
// the probe.
Result<std::vector<HostClaim>> ClaimHostPorts(const std::filesystem::path& claims_root,
                                              const ClaimOwner& owner,
                                              const std::vector<PortMapping>& wanted,
                                              bool probe_listeners = true);

}  // namespace podvisor::network
