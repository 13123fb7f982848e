// The pure part of the user-mode networks (user_mode.h): command lines,
// API requests, the record, and reading the pod's addresses.
#include "network/user_mode.h"

#include <arpa/inet.h>

#include <sstream>

#include "network/host_ports.h"

namespace podvisor::network {
namespace {

bool IsIpv6(const std::string& ip) {
  return ip.find(':') != std::string::npos;
}

std::string HexToIpv6(std::string_view hex) {
  in6_addr addr{};
  for (size_t i = 0; i < 16; ++i) {
    addr.s6_addr[i] =
        static_cast<uint8_t>(std::stoi(std::string(hex.substr(i * 2, 2)), nullptr, 16));
  }
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, &addr, text, sizeof text);
  return text;
}

}  // namespace

const char* UserModeToolName(UserModeTool tool) {
  switch (tool) {
    case UserModeTool::kSlirp4netns:
      return "slirp4netns";
    case UserModeTool::kPasta:
      return "pasta";
  }
  return "?";
}

std::vector<std::string> Slirp4netnsArgv(const UserModeOptions& options, int ready_fd,
                                         int exit_fd) {
  std::vector<std::string> argv = {
      options.program.empty() ? "slirp4netns" : options.program,
      "--configure",
      "--mtu=" + std::to_string(kUserModeMtu),
      "--ready-fd=" + std::to_string(ready_fd),
      "--exit-fd=" + std::to_string(exit_fd),
      // Relative: the tool runs in the pod's directory, and a socket's
      // path is limited to 107 bytes, which a deep --state-dir exceeds.
      std::string("--api-socket=") + kSlirpApiSocket,
  };
  if (!options.allow_host_loopback) argv.emplace_back("--disable-host-loopback");
  if (options.userns) argv.push_back("--userns-path=" + options.userns->string());
  argv.emplace_back("--netns-type=path");
  argv.push_back(options.netns.string());
  argv.emplace_back("tap0");
  return argv;
}

std::string PastaPortSpec(const std::vector<PortMapping>& mappings, std::string_view protocol) {
  std::string spec;
  for (const PortMapping& m : mappings) {
    if (m.protocol != protocol) continue;
    if (!spec.empty()) spec += ",";
    if (!WildcardHostIp(m.host_ip)) spec += m.host_ip + "/";
    spec += std::to_string(m.host_port) + ":" + std::to_string(m.container_port);
  }
  return spec.empty() ? "none" : spec;
}

std::vector<std::string> PastaArgv(const UserModeOptions& options) {
  std::vector<std::string> argv = {
      options.program.empty() ? "pasta" : options.program,
      "--config-net",
      "--quiet",
      "--mtu",
      std::to_string(kUserModeMtu),
      // Only the pod's hostPorts; pasta's default ("auto") would forward
      // every port the pod binds, and -T/-U the host's ports into the pod.
      "--tcp-ports",
      PastaPortSpec(options.port_mappings, "tcp"),
      "--udp-ports",
      PastaPortSpec(options.port_mappings, "udp"),
      "--tcp-ns",
      "none",
      "--udp-ns",
      "none",
      "--dns-forward",
      kPastaDns,
      "--pid",
      std::string(kPastaPidFile),
  };
  if (!options.allow_host_loopback) argv.emplace_back("--no-map-gw");
  if (options.as_root) {
    argv.emplace_back("--runas");
    argv.emplace_back("0:0");
  }
  if (options.userns) {
    argv.emplace_back("--userns");
    argv.push_back(options.userns->string());
  }
  argv.emplace_back("--netns");
  argv.push_back(options.netns.string());
  return argv;
}

nlohmann::json SlirpHostFwdRequest(const PortMapping& m) {
  return {{"execute", "add_hostfwd"},
          {"arguments",
           {{"proto", m.protocol},
            {"host_addr", WildcardHostIp(m.host_ip) ? std::string("0.0.0.0") : m.host_ip},
            {"host_port", m.host_port},
            {"guest_addr", kSlirpPodIp},
            {"guest_port", m.container_port}}}};
}

std::optional<std::string> CheckUserModePorts(UserModeTool tool,
                                              const std::vector<PortMapping>& mappings) {
  for (const PortMapping& m : mappings) {
    std::string name = "hostPort " + HostPortName(m);
    if (m.protocol != "tcp" && m.protocol != "udp") {
      return name + ": --network " + UserModeToolName(tool) + " forwards only TCP and UDP";
    }
    if (tool == UserModeTool::kSlirp4netns && !m.host_ip.empty() && m.host_ip != "::" &&
        IsIpv6(m.host_ip)) {
      return name + ": --network slirp4netns forwards only to IPv4 host addresses";
    }
  }
  return std::nullopt;
}

std::vector<std::string> PodIpsFromProcNet(std::string_view fib_trie, std::string_view if_inet6) {
  std::vector<std::string> ips;
  // fib_trie: "|-- 10.0.2.100" followed by "/32 host LOCAL" names an
  // address of the namespace; the same address appears in the Main and
  // the Local table.
  std::istringstream trie{std::string(fib_trie)};
  std::string line;
  std::string last;
  while (std::getline(trie, line)) {
    size_t leaf = line.find("|-- ");
    if (leaf != std::string::npos) {
      last = line.substr(leaf + 4);
      continue;
    }
    if (line.find("/32 host LOCAL") != std::string::npos && !last.empty() &&
        last.rfind("127.", 0) != 0) {
      ips.push_back(last);
      break;
    }
  }
  // if_inet6: "<32 hex digits> <ifindex> <prefix> <scope> <flags> <name>";
  // scope 00 is global.
  std::istringstream six{std::string(if_inet6)};
  while (std::getline(six, line)) {
    std::istringstream fields(line);
    std::string hex, index, prefix, scope, flags, name;
    if (!(fields >> hex >> index >> prefix >> scope >> flags >> name)) continue;
    if (hex.size() != 32 || scope != "00" || name == "lo") continue;
    ips.push_back(HexToIpv6(hex));
    break;
  }
  return ips;
}

nlohmann::json UserModeRecord::ToJson() const {
  nlohmann::json ports = nlohmann::json::array();
  for (const PortMapping& m : port_mappings) {
    ports.push_back({{"hostPort", m.host_port},
                     {"containerPort", m.container_port},
                     {"protocol", m.protocol},
                     {"hostIP", m.host_ip}});
  }
  return {{"tool", UserModeToolName(tool)},
          {"pid", pid},
          {"startTime", start_time},
          {"netns", netns},
          {"portMappings", ports},
          {"podIPs", pod_ips},
          {"dns", dns}};
}

Result<UserModeRecord> UserModeRecord::FromJson(const nlohmann::json& j) {
  UserModeRecord r;
  try {
    std::string tool = j.at("tool").get<std::string>();
    if (tool == "slirp4netns") {
      r.tool = UserModeTool::kSlirp4netns;
    } else if (tool == "pasta") {
      r.tool = UserModeTool::kPasta;
    } else {
      return Error("tool: unknown user-mode network tool \"" + tool + "\"", EINVAL);
    }
    r.pid = j.at("pid").get<pid_t>();
    r.start_time = j.at("startTime").get<uint64_t>();
    r.netns = j.value("netns", "");
    for (const auto& p : j.value("portMappings", nlohmann::json::array())) {
      r.port_mappings.push_back({p.at("hostPort").get<int>(), p.at("containerPort").get<int>(),
                                 p.at("protocol").get<std::string>(),
                                 p.value("hostIP", std::string())});
    }
    r.pod_ips = j.value("podIPs", std::vector<std::string>());
    r.dns = j.value("dns", "");
  } catch (const nlohmann::json::exception& e) {
    return Error(std::string("the user-mode network record: ") + e.what(), EINVAL);
  }
  if (r.pid <= 0) return Error("pid: not a process id", EINVAL);
  return r;
}

}  // namespace podvisor::network
