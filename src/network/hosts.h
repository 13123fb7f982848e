// The pod's /etc/hosts and hostname, as the kubelet writes them
// (pkg/kubelet/kubelet_pods.go, managedHostsFileContent).
//
// The kubelet lists every pod IP with the pod's hostname, and with its
// fully qualified name first when the pod has a subdomain:
//   10.89.0.5\tweb-0.nginx.default.svc.cluster.local\tweb-0
// then the pod's hostAliases after a comment line. podvisor has no cluster
// and so no cluster DNS, but keeps the names a pod of a cluster would
// see: the cluster domain is "cluster.local" (kubeadm's default). A pod
// without an address of its own (--network none) gets its name on
// 127.0.1.1, Debian's convention for a name without an address.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podvisor::network {

inline constexpr std::string_view kClusterDomain = "cluster.local";

struct HostAlias {
  std::string ip;
  std::vector<std::string> hostnames;
};

struct PodNames {
  std::string hostname;  // spec.hostname, else the pod name cut to 63 characters
  std::string domain;    // "<subdomain>.<namespace>.svc.cluster.local", or empty
  // What the pod's UTS namespace gets: hostname, or hostname.domain with
  // setHostnameAsFQDN (the kubelet's rule; it fails the pod when that is
  // longer than 64 characters, which validation reports).
  std::string uts_hostname;
  std::string Fqdn() const { return domain.empty() ? hostname : hostname + "." + domain; }
};

PodNames FormPodNames(std::string_view pod_name, std::string_view pod_namespace,
                      std::string_view hostname, std::string_view subdomain,
                      bool set_hostname_as_fqdn);

// The managed hosts file for a pod with its own network namespace.
std::string ManagedHostsFile(const std::vector<std::string>& pod_ips, const PodNames& names,
                             const std::vector<HostAlias>& aliases);

// A hostNetwork pod's hosts file: the host's, with the pod's hostAliases
// appended (the kubelet's nodeHostsFileContent).
std::string HostNetworkHostsFile(std::string_view host_hosts,
                                 const std::vector<HostAlias>& aliases);

}  // namespace podvisor::network
