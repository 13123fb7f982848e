// The pod's /etc/resolv.conf, formed as the kubelet forms it
// (pkg/kubelet/network/dns) on a node without cluster DNS.
//
//   Default                  the host's resolver configuration
//   ClusterFirst             the same: there is no cluster DNS to put first,
//                            so the kubelet falls back to Default and warns
//   ClusterFirstWithHostNet  as ClusterFirst
//   None                     nothing but the pod's dnsConfig
//
// ClusterFirst on a hostNetwork pod is Default without a warning. Then
// dnsConfig is merged in: nameservers and searches appended without
// duplicates, options by name with the pod's value winning; and the
// limits applied: at most 3 nameservers, at most 32 search domains and
// 2048 characters of search line, no domain longer than 253 characters
// (Kubernetes 1.28+, where ExpandedDNSConfig is GA). Each limit that cuts
// something gives a warning, as the kubelet's DNSConfigForming event.
//
// The host's configuration is read from /etc/resolv.conf unless that is
// systemd-resolved's stub (only nameserver 127.0.0.53, which answers on
// the host's loopback and so cannot be reached from a pod's network
// namespace); then from resolved's upstream file
// /run/systemd/resolve/resolv.conf, which is what kubeadm points the
// kubelet's --resolv-conf at on such hosts.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace podvisor::network {

enum class DnsPolicy { kClusterFirst, kClusterFirstWithHostNet, kDefault, kNone };
// The spec words: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None".
const char* DnsPolicyName(DnsPolicy policy);
std::optional<DnsPolicy> ParseDnsPolicy(std::string_view word);

struct DnsOption {
  std::string name;
  std::optional<std::string> value;
};

struct PodDnsConfig {
  std::vector<std::string> nameservers;
  std::vector<std::string> searches;
  std::vector<DnsOption> options;
};

struct ResolvConf {
  std::vector<std::string> nameservers;
  std::vector<std::string> searches;
  std::vector<std::string> options;  // "name" or "name:value"
  // The file's text: "nameserver X" lines, then "search", then "options".
  std::string Render() const;
};

// Parses resolv.conf text as the kubelet does: nameserver lines
// accumulate, the last search and the last options line win, search
// domains lose a trailing dot.
ResolvConf ParseResolvConf(std::string_view text);

struct HostResolvFiles {
  std::filesystem::path resolv_conf = "/etc/resolv.conf";
  std::filesystem::path resolved_upstream = "/run/systemd/resolve/resolv.conf";
};

// The host's resolver configuration (see above for the stub rule). A host
// without a resolv.conf gives an empty configuration.
Result<ResolvConf> HostResolvConf(const HostResolvFiles& files = {});

struct PodDns {
  ResolvConf conf;
  std::vector<std::string> warnings;  // one line each, for the pod's events
};

PodDns FormPodDns(DnsPolicy policy, bool host_network, const std::optional<PodDnsConfig>& config,
                  const ResolvConf& host);

}  // namespace podvisor::network
