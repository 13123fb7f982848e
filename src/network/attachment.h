// Attaching a pod to a CNI network and detaching it (CNI spec, "Network
// configuration list runtime semantics"): ADD runs the list's plugins in
// order, each given the previous plugin's result as prevResult; DEL runs
// them in reverse order, each given the final ADD result.
//
// Crash safety: the attachment (list, parameters, and once known the
// result) is saved to a file before the first plugin runs and updated
// after the last, so a supervisor SIGKILLed at any point leaves enough
// behind for the next `run` to DEL it (DEL is idempotent by the spec:
// plugins must succeed on what is already gone).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "network/cni_result.h"
#include "network/conflist.h"
#include "network/plugin.h"

namespace podvisor::network {

// One hostPort (the portmap plugin's "portMappings" capability).
struct PortMapping {
  int host_port = 0;
  int container_port = 0;
  std::string protocol = "tcp";  // "tcp", "udp", "sctp" (lower case, as portmap reads it)
  std::string host_ip;           // empty: every host address
  friend bool operator==(const PortMapping&, const PortMapping&) = default;
};

struct AttachParams {
  std::string container_id;  // the pod sandbox's id: the key of IPAM and iptables state
  std::string netns;         // path of the pod's network namespace
  std::string ifname = "eth0";
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::vector<PortMapping> port_mappings;
  std::vector<std::filesystem::path> bin_dirs;
  Duration timeout = kDefaultPluginTimeout;

  // CNI_ARGS as the CRI runtimes set it:
  // "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=n;K8S_POD_INFRA_CONTAINER_ID=id;K8S_POD_UID=u".
  std::string CniArgs() const;
};

struct Attachment {
  NetworkConfigList network;
  AttachParams params;
  std::optional<CniResult> result;  // set once ADD has completed
};

// The error of a plugin in the chain, with the network and plugin named:
// "network podvisor: plugin bridge ADD: <plugin message> (CNI error 11)".
// A missing binary, a bad result and a timeout are errors of this form too.
Error ChainError(const NetworkConfigList& network, const std::string& type, CniCommand command,
                 const std::string& what);

// The stdin configuration of plugin `index` of `network`: the plugin's own
// object plus "name", "cniVersion", "prevResult" (when given) and
// "runtimeConfig" with each capability the plugin declares and `params`
// provides (portMappings).
nlohmann::json PluginConfig(const NetworkConfigList& network, size_t index,
                            const AttachParams& params, const nlohmann::json* prev_result);

// ADD. On success the attachment with its result; on failure every plugin
// is DELeted again (reverse order, best effort; the saved state goes
// either way) before the error is returned, so a failed ADD leaves no
// address, veth or rule behind.
// `state_file`, when not empty, is written before the first plugin runs
// and again with the result.
Result<Attachment> Attach(const NetworkConfigList& network, const AttachParams& params,
                          const std::filesystem::path& state_file = {});

// DEL in reverse order. Every plugin is called even when one fails (what
// it holds is released by the others); the errors are joined. Removes
// `state_file` on success.
Status Detach(const Attachment& attachment, const std::filesystem::path& state_file = {});

// The saved attachment (for recovery after a SIGKILLed supervisor).
// nullopt when the file does not exist.
Result<std::optional<Attachment>> LoadAttachment(const std::filesystem::path& state_file);
Status SaveAttachment(const Attachment& attachment, const std::filesystem::path& state_file);

}  // namespace podvisor::network
