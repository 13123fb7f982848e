#include "network/host_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "common/fd.h"

namespace podvisor::network {
namespace {

// Binds a probe socket of `family` to `ip` (wildcard when empty) and the
// port; true when the kernel answers EADDRINUSE, nullopt when the host has
// no such family (IPv6 disabled).
std::optional<bool> BindClashes(int family, int type, const std::string& ip, int port) {
  Fd fd(::socket(family, type | SOCK_CLOEXEC, 0));
  if (!fd) return std::nullopt;
  int one = 1;
  // TCP: SO_REUSEADDR lets the probe bind beside connections in TIME_WAIT,
  // and Linux still refuses it beside a listening socket. UDP: without it,
  // so that any bound socket clashes.
  if (type == SOCK_STREAM) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (family == AF_INET6) {
    int zero = 0;  // the wildcard probe covers IPv4 listeners too
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    a->sin6_addr = in6addr_any;
    if (!WildcardHostIp(ip) && ::inet_pton(AF_INET6, ip.c_str(), &a->sin6_addr) != 1) return false;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    if (!WildcardHostIp(ip) && ::inet_pton(AF_INET, ip.c_str(), &a->sin_addr) != 1) return false;
    len = sizeof *a;
  }
  return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 && errno == EADDRINUSE;
}

}  // namespace

std::string HostPortName(const PortMapping& m) {
  std::string protocol = m.protocol;
  for (char& c : protocol) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return std::to_string(m.host_port) + "/" + protocol +
         (m.host_ip.empty() ? "" : " on " + m.host_ip);
}

bool WildcardHostIp(const std::string& ip) {
  return ip.empty() || ip == "0.0.0.0" || ip == "::";
}

bool HostProcessListens(const PortMapping& m) {
  int type = 0;
  if (m.protocol == "tcp") {
    type = SOCK_STREAM;
  } else if (m.protocol == "udp") {
    type = SOCK_DGRAM;
  } else {
    return false;
  }
  if (!WildcardHostIp(m.host_ip)) {
    in6_addr v6{};
    const int family = ::inet_pton(AF_INET6, m.host_ip.c_str(), &v6) == 1 ? AF_INET6 : AF_INET;
    return BindClashes(family, type, m.host_ip, m.host_port).value_or(false);
  }
  // Dual-stack when the host has IPv6, else IPv4 alone.
  if (auto clash = BindClashes(AF_INET6, type, "", m.host_port)) return *clash;
  return BindClashes(AF_INET, type, "", m.host_port).value_or(false);
}

Result<std::vector<HostClaim>> ClaimHostPorts(const std::filesystem::path& claims_root,
                                              const ClaimOwner& owner,
                                              const std::vector<PortMapping>& wanted,
                                              bool probe_listeners) {
  std::vector<HostClaim> claims;
  // A refused pod holds nothing: the claims taken so far go.
  auto refuse = [&claims](Error e) -> Result<std::vector<HostClaim>> {
    for (HostClaim& c : claims) c.Release();
    return e;
  };
  std::set<std::string> keys;
  for (const PortMapping& m : wanted) {
    const std::string key = m.protocol + "-" + std::to_string(m.host_port);
    if (!keys.insert(key).second) continue;  // one port on two hostIPs: one claim
    // Keyed by protocol and port alone: across state directories, two pods
    // on distinct hostIPs of one port are refused too (S14.32).
    auto claim = HostClaim::Take(claims_root, kHostPortClaims, key, owner);
    if (!claim) {
      if (claim.error().code() != EBUSY) return refuse(claim.take_error());
      std::string holder = claim.error().message();
      holder = holder.substr(holder.find(" is held by ") + 1);
      return refuse(Error("hostPort " + HostPortName(m) + " " + holder, EADDRINUSE));
    }
    claims.push_back(std::move(*claim));
    // After the claim: a port this pod's previous run held is not ours to
    // judge by its (now gone) rule, and a listener is a host service.
    if (probe_listeners && HostProcessListens(m)) {
      return refuse(Error("hostPort " + HostPortName(m) +
                              ": a host process listens on it; a hostPort's DNAT rule would take "
                              "its traffic (S14.32): choose another hostPort or stop that service",
                          EADDRINUSE));
    }
  }
  return claims;
}

}  // namespace podvisor::network
