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
//   slirp4netns, pasta
//         the pod's own namespace served by a user-mode network stack
//         (user_mode.h, S22), which needs no privileges on the host
enum class NetworkMode { kNone, kHost, kCni, kSlirp4netns, kPasta };
// "none", "host", "cni", "slirp4netns", "pasta"
const char* NetworkModeName(NetworkMode mode);
std::optional<NetworkMode> ParseNetworkMode(std::string_view word);
// slirp4netns and pasta.
bool IsUserModeNetwork(NetworkMode mode);

// Which user-mode tools this host has (in PATH), for a rootless default.
struct UserModeTools {
  bool pasta = false;
  bool slirp4netns = false;
};
UserModeTools FindUserModeTools();

// The default of --network: cni when podvisor runs as root with the
// namespaces sandbox and one of `bin_dirs` exists, none otherwise. A
// rootless podvisor (S22.3) passes the tools it has: with the namespaces
// sandbox it prefers pasta, else slirp4netns, else none.
NetworkMode DefaultNetworkMode(bool root, bool sandbox,
                               const std::vector<std::filesystem::path>& bin_dirs,
                               std::optional<UserModeTools> rootless_tools = std::nullopt);

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
