// The pod's /etc/hosts, /etc/hostname and /etc/resolv.conf, written once
// in the pod state dir and bind-mounted into every container (as the
// kubelet does with the files of the pod sandbox). resolv.conf is a copy
// of the host's rather than a bind of the host file itself, so that a
// container writing it cannot change the host's resolver.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"
#include "hostfs/layout.h"

namespace podvisor::hostfs {

// The kubelet's managed hosts file: localhost entries and the pod's
// hostname on 127.0.1.1 (the pod has no cluster IP; Debian's convention
// for a name without an address).
std::string HostsFileContent(std::string_view hostname);

struct HostEtcFiles {
  std::filesystem::path hosts = "/etc/hosts";
  std::filesystem::path resolv_conf = "/etc/resolv.conf";
};

// Writes layout.HostsFile(), HostnameFile(), ResolvConfFile(). For
// hostNetwork pods the hosts file is the host's, as with the kubelet. A
// host without resolv.conf gives an empty one.
Status WritePodEtcFiles(const PodLayout& layout, std::string_view hostname, bool host_network,
                        const HostEtcFiles& host = {});

// Writes the three files with contents formed by the caller: the
// supervisor forms hosts and resolv.conf from the pod's addresses and DNS
// policy (network/hosts.h, network/dns.h).
Status WritePodEtcFiles(const PodLayout& layout, std::string_view hostname, std::string_view hosts,
                        std::string_view resolv_conf);

}  // namespace podvisor::hostfs
