// podvisor's own network, used when `--network cni` finds no configuration
// in the configuration directory: what a user gets from `podvisor run` on
// a fresh host, as podman's "podman" network.
//
//   bridge podvisor0, the gateway 10.89.0.1, masquerading for egress
//   host-local IPAM on 10.89.0.0/16 (podman's default is 10.88.0.0/16, so
//     both can run on one host), state under the given data directory
//   portmap (hostPort), firewall (lets the bridge's traffic through a
//     FORWARD policy of DROP, as Docker sets it)
//
// The list is written next to the IPAM state (`--state-dir`'s cni/
// directory), never into /etc/cni/net.d: it is podvisor's, and another
// CNI user on the host must not pick it up as its own default.
#pragma once

#include <filesystem>
#include <string>

#include "network/conflist.h"

namespace podvisor::network {

inline constexpr const char* kDefaultNetworkName = "podvisor";
inline constexpr const char* kDefaultBridge = "podvisor0";
inline constexpr const char* kDefaultSubnet = "10.89.0.0/16";

struct DefaultNetworkOptions {
  std::string name = kDefaultNetworkName;
  std::string bridge = kDefaultBridge;
  std::string subnet = kDefaultSubnet;
  std::filesystem::path ipam_data_dir;  // host-local's dataDir
};

NetworkConfigList DefaultNetwork(const DefaultNetworkOptions& options);

// Writes the list as `dir`/<name>.conflist (atomically, only when its
// content changed) and returns the list read back from it.
Result<NetworkConfigList> WriteDefaultNetwork(const DefaultNetworkOptions& options,
                                              const std::filesystem::path& dir);

}  // namespace podvisor::network
