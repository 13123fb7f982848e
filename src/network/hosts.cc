#include "network/hosts.h"

namespace podvisor::network {
namespace {

// The longest hostname the kernel (and the kubelet) accepts.
constexpr size_t kMaxHostnameLength = 63;

std::string AliasLines(const std::vector<HostAlias>& aliases) {
  if (aliases.empty()) return {};
  std::string out = "\n# Entries added by HostAliases.\n";
  for (const auto& alias : aliases) {
    out += alias.ip;
    for (const auto& name : alias.hostnames) out += "\t" + name;
    out += "\n";
  }
  return out;
}

}  // namespace

PodNames FormPodNames(std::string_view pod_name, std::string_view pod_namespace,
                      std::string_view hostname, std::string_view subdomain,
                      bool set_hostname_as_fqdn) {
  PodNames names;
  names.hostname = std::string(hostname.empty() ? pod_name : hostname);
  if (names.hostname.size() > kMaxHostnameLength) {
    names.hostname.resize(kMaxHostnameLength);
    // A name cut in the middle must not end in '-' or '.' (RFC 1123).
    while (!names.hostname.empty() &&
           (names.hostname.back() == '-' || names.hostname.back() == '.')) {
      names.hostname.pop_back();
    }
  }
  if (!subdomain.empty()) {
    names.domain = std::string(subdomain) + "." +
                   std::string(pod_namespace.empty() ? "default" : pod_namespace) + ".svc." +
                   std::string(kClusterDomain);
  }
  names.uts_hostname = set_hostname_as_fqdn ? names.Fqdn() : names.hostname;
  return names;
}

std::string ManagedHostsFile(const std::vector<std::string>& pod_ips, const PodNames& names,
                             const std::vector<HostAlias>& aliases) {
  std::string out =
      "# Kubernetes-managed hosts file.\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "fe00::0\tip6-localnet\n"
      "fe00::0\tip6-mcastprefix\n"
      "fe00::1\tip6-allnodes\n"
      "fe00::2\tip6-allrouters\n";
  std::vector<std::string> ips = pod_ips;
  if (ips.empty()) ips.emplace_back("127.0.1.1");
  for (const auto& ip : ips) {
    if (names.domain.empty()) {
      out += ip + "\t" + names.hostname + "\n";
    } else {
      out += ip + "\t" + names.Fqdn() + "\t" + names.hostname + "\n";
    }
  }
  return out + AliasLines(aliases);
}

std::string HostNetworkHostsFile(std::string_view host_hosts,
                                 const std::vector<HostAlias>& aliases) {
  std::string out(host_hosts);
  if (!out.empty() && out.back() != '\n' && !aliases.empty()) out += "\n";
  return out + AliasLines(aliases);
}

}  // namespace podvisor::network
