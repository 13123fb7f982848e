// What the supervisor needs around a CNI attachment: the pod network
// modes of `run --network`, the host's own address (status.hostIP), and
// the hostPort bookkeeping that portmap itself does not do.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "network/attachment.h"

namespace podvisor::network {

// `run --network` (docs/INTERFACE.md):
//   none  the pod's own network namespace with only a loopback; nothing
//         on the host is touched
//   host  every pod on the host's network, as if hostNetwork: true
//   cni   the pod's own namespace attached through CNI plugins
enum class NetworkMode { kNone, kHost, kCni };
const char* NetworkModeName(NetworkMode mode);  // "none", "host", "cni"
std::optional<NetworkMode> ParseNetworkMode(std::string_view word);

// The default of --network: cni when podvisor runs as root with the
// namespaces sandbox and one of `bin_dirs` exists, none otherwise.
NetworkMode DefaultNetworkMode(bool root, bool sandbox,
                               const std::vector<std::filesystem::path>& bin_dirs);

// "/usr/lib/cni:/opt/cni/bin" -> its directories.
std::vector<std::filesystem::path> SplitPathList(std::string_view list);

// The host's primary addresses as the kubelet reports status.hostIPs: the
// IPv4 address of the interface holding the default route, else the
// first global address of an interface that is up. Empty when there is
// none (an isolated VM with only a loopback).
std::vector<std::string> HostPrimaryIps();

// The hostPort a new pod asks for that another pod under the same state
// directory holds (its saved attachment, `<state_root>/<pod>/network.json`),
// as a message naming both: "hostPort 8080/TCP is held by pod web-a".
// Two mappings clash on the same protocol and port when either host
// address is a wildcard or both are equal.
std::optional<std::string> FindHostPortConflict(const std::filesystem::path& state_root,
                                                std::string_view own_pod,
                                                const std::vector<PortMapping>& wanted);

// An exclusive flock on `<state_root>/network.lock`, held across the
// hostPort check and ADD so two pods starting at once cannot both pass
// the check. Blocks while another supervisor holds it (its ADD: well
// under a second).
Result<Fd> LockNetworkState(const std::filesystem::path& state_root);

}  // namespace podvisor::network
