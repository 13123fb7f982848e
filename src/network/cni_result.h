// A CNI ADD result, as far as podvisor reads it: the addresses the pod got.
//
// Versions 1.0.0/1.1.0 and 0.3.x/0.4.0 share the shape ("interfaces",
// "ips" with "address" in CIDR form and an optional "interface" index);
// 0.3.x/0.4.0 add "ips[].version", which is ignored (the address says its
// family). The result text itself is kept verbatim: it is what the next
// plugin gets as prevResult, what DEL gets later, and what is saved for
// recovery.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::network {

struct CniInterface {
  std::string name;
  std::string mac;
  std::string sandbox;  // the netns path for interfaces inside the pod
};

struct CniIp {
  std::string address;  // "10.89.0.5/16"
  std::string gateway;  // may be empty
  int interface = -1;   // index into interfaces, -1 when absent
  // The address without its prefix length: "10.89.0.5".
  std::string Ip() const;
  bool IsV6() const { return address.find(':') != std::string::npos; }
};

struct CniResult {
  std::string cni_version;
  std::vector<CniInterface> interfaces;
  std::vector<CniIp> ips;
  nlohmann::json raw;  // the document as the plugin gave it

  // The pod's addresses, as the kubelet reports status.podIPs: the ips on
  // an interface inside the sandbox (all ips when the result names no
  // interfaces), first IPv4 then IPv6 as the first of each family comes,
  // without duplicates and without prefix length.
  std::vector<std::string> PodIps() const;
};

// Parses a plugin's ADD result. The error says what is wrong:
// "result: ips[0]: \"address\" is not an IP address in CIDR form".
Result<CniResult> ParseCniResult(std::string_view text);

}  // namespace podvisor::network
