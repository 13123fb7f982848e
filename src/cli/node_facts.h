// What `run` and `oci-config` both read of the node they run on, in one
// place, so that oci-config prints the config run would generate on this
// host: the node's memory (--node-memory, or the host's RAM) and hostname.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace podvisor::cli {

// The node's allocatable memory (S14.4, S10.3, the downward API's default
// memory limit): `given` (--node-memory, a quantity such as 6Gi) or, unset,
// the host's RAM, as the kubelet reports it without --system-reserved or
// --kube-reserved. nullopt, with the reason on stderr, for an invalid size.
std::optional<int64_t> NodeMemoryOption(const std::optional<std::string>& given);

// The node's name as the downward API's spec.nodeName reads it: the host's.
std::string NodeHostname();

}  // namespace podvisor::cli
