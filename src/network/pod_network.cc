#include "network/pod_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/file.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/pod_dir.h"
#include "network/host_ports.h"
#include "process/spawn.h"

namespace podvisor::network {
namespace {

// The interface of the IPv4 default route, from /proc/net/route
// ("Iface Destination Gateway Flags ..." with Destination 00000000).
std::string DefaultRouteInterface() {
  std::ifstream in("/proc/net/route");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, dest, gateway, flags, refcnt, use, metric, mask;
    if (!(fields >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    if (dest == "00000000" && mask == "00000000") return iface;
  }
  return {};
}

}  // namespace

const char* NetworkModeName(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kNone:
      return "none";
    case NetworkMode::kHost:
      return "host";
    case NetworkMode::kCni:
      return "cni";
    case NetworkMode::kSlirp4netns:
      return "slirp4netns";
    case NetworkMode::kPasta:
      return "pasta";
  }
  return "?";
}

std::optional<NetworkMode> ParseNetworkMode(std::string_view word) {
  for (auto m : {NetworkMode::kNone, NetworkMode::kHost, NetworkMode::kCni,
                 NetworkMode::kSlirp4netns, NetworkMode::kPasta}) {
    if (word == NetworkModeName(m)) return m;
  }
  return std::nullopt;
}

bool IsUserModeNetwork(NetworkMode mode) {
  return mode == NetworkMode::kSlirp4netns || mode == NetworkMode::kPasta;
}

UserModeTools FindUserModeTools() {
  const char* path = std::getenv("PATH");
  const std::string list = path ? path : "/usr/local/bin:/usr/bin:/bin";
  UserModeTools tools;
  tools.pasta = process::ResolveProgram("pasta", list).ok();
  tools.slirp4netns = process::ResolveProgram("slirp4netns", list).ok();
  return tools;
}

NetworkMode DefaultNetworkMode(bool root, bool sandbox,
                               const std::vector<std::filesystem::path>& bin_dirs,
                               std::optional<UserModeTools> rootless_tools) {
  if (rootless_tools && sandbox) {
    if (rootless_tools->pasta) return NetworkMode::kPasta;
    if (rootless_tools->slirp4netns) return NetworkMode::kSlirp4netns;
    return NetworkMode::kNone;
  }
  if (!root || !sandbox) return NetworkMode::kNone;
  std::error_code ec;
  for (const auto& dir : bin_dirs) {
    if (std::filesystem::is_directory(dir, ec)) return NetworkMode::kCni;
  }
  return NetworkMode::kNone;
}

std::vector<std::filesystem::path> SplitPathList(std::string_view list) {
  std::vector<std::filesystem::path> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out.emplace_back(std::string(list.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> HostPrimaryIps() {
  ifaddrs* addrs = nullptr;
  if (::getifaddrs(&addrs) != 0) return {};
  std::string route_iface = DefaultRouteInterface();
  std::string by_route, first_up;
  for (ifaddrs* a = addrs; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char buf[INET_ADDRSTRLEN] = {};
    auto* sin = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf) == nullptr) continue;
    if (by_route.empty() && a->ifa_name == route_iface) by_route = buf;
    if (first_up.empty()) first_up = buf;
  }
  ::freeifaddrs(addrs);
  if (!by_route.empty()) return {by_route};
  if (!first_up.empty()) return {first_up};
  return {};
}

std::optional<std::string> FindHostPortConflict(const std::filesystem::path& state_root,
                                                std::string_view own_pod,
                                                const std::vector<PortMapping>& wanted) {
  if (wanted.empty()) return std::nullopt;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_root, ec)) {
    if (entry.path().filename() == own_pod) continue;
    auto saved = LoadAttachment(PodDir::At(entry.path()).NetworkFile());
    if (!saved || !saved->has_value()) continue;
    for (const auto& held : (*saved)->params.port_mappings) {
      for (const auto& want : wanted) {
        if (held.host_port != want.host_port || held.protocol != want.protocol) continue;
        if (!WildcardHostIp(held.host_ip) && !WildcardHostIp(want.host_ip) &&
            held.host_ip != want.host_ip) {
          continue;
        }
        return "hostPort " + HostPortName(want) + " is held by pod " +
               entry.path().filename().string();
      }
    }
  }
  return std::nullopt;
}

Result<Fd> LockNetworkState(const std::filesystem::path& state_root) {
  std::filesystem::path file = state_root / StateDirEntry::kNetworkLock;
  Fd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno("opening " + file.string());
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Error::FromErrno("locking " + file.string());
  }
  return fd;
}

}  // namespace podvisor::network
