// User-mode pod networks (docs/SEMANTICS.md S22): `run --network
// slirp4netns` and `--network pasta`. A user-space TCP/IP stack, run as an
// ordinary process of the host's network namespace, serves a tap device in
// the pod's namespace: the pod's traffic leaves as the tool's own sockets,
// so nothing on the host needs privileges (no bridge, veth or iptables),
// which is what a rootless podvisor can use. As podman does:
//
//   slirp4netns  --configure --mtu 65520 --disable-host-loopback: tap0 with
//                10.0.2.100/24, gateway 10.0.2.2, DNS 10.0.2.3 (slirp's
//                forwarder to the host's resolvers); hostPorts through its
//                API socket (add_hostfwd); it ends when its --exit-fd's
//                other end is closed by everyone who holds it
//   pasta        --config-net: the host's addresses and routes of the
//                default-route interface copied into the pod (the pod's IP
//                is the host's), DNS through --dns-forward 169.254.1.1;
//                hostPorts as -t/-u forwards given at start (no automatic
//                forwards: -t none -u none -T none -U none); it forks to
//                the background once the namespace is configured and
//                writes its pid file
//
// Either way the host's loopback is out of the pod's reach by default
// (slirp4netns --disable-host-loopback, pasta --no-map-gw): a pod must not
// reach services that listen only on 127.0.0.1 because they trust the
// host's own users. `run --network-host-loopback` lets it: the host's
// 127.0.0.1 is then the gateway address (10.0.2.2 for slirp4netns, the
// host's default gateway's address for pasta).
//
// The tool belongs to the pod: it is recorded (pid and start time, like
// the sandbox's holder, S15) beside the pod's state so that a supervisor
// adopting the pod after a crash finds it again, and recovery ends it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "network/attachment.h"

namespace podvisor::network {

enum class UserModeTool { kSlirp4netns, kPasta };
const char* UserModeToolName(UserModeTool tool);  // "slirp4netns", "pasta"

// The addresses the tools give the pod's side.
inline constexpr const char* kSlirpPodIp = "10.0.2.100";
inline constexpr const char* kSlirpGateway = "10.0.2.2";
inline constexpr const char* kSlirpDns = "10.0.2.3";
inline constexpr const char* kPastaDns = "169.254.1.1";
inline constexpr int kUserModeMtu = 65520;
inline constexpr Duration kUserModeStartTimeout = std::chrono::seconds(10);

// The files of the pod's directory (DIR/<pod>/) the network uses.
inline constexpr const char* kUserNetworkFile = "usernet.json";     // the record
inline constexpr const char* kSlirpApiSocket = "slirp4netns.sock";  // hostfwd requests
inline constexpr const char* kPastaPidFile = "pasta.pid";           // written by pasta
inline constexpr const char* kUserNetworkLog = "usernet.log";       // the tool's stderr

struct UserModeOptions {
  UserModeTool tool = UserModeTool::kSlirp4netns;
  std::string program;          // "": the tool's name, looked up in PATH
  std::filesystem::path netns;  // the pod's network namespace (a pinned path)
  // The user namespace owning that network namespace when it is not the
  // one the tool runs in (a pod with hostUsers: false): the tool joins it
  // to configure the interface. Unset: the tool's own.
  std::optional<std::filesystem::path> userns;
  std::filesystem::path pod_dir;  // DIR/<pod>: socket, pid file, log
  std::vector<PortMapping> port_mappings;
  bool allow_host_loopback = false;
  // pasta, started by root, changes to nobody before it opens the
  // namespace and then cannot join a root-owned one: as root it is told to
  // stay uid 0 (it still drops every capability it does not need).
  bool as_root = false;
  Duration timeout = kUserModeStartTimeout;
};

// The command lines (without the descriptors' numbers for pasta).
std::vector<std::string> Slirp4netnsArgv(const UserModeOptions& options, int ready_fd, int exit_fd);
std::vector<std::string> PastaArgv(const UserModeOptions& options);
// pasta's -t/-u argument for one protocol's hostPorts: "none" when there
// are none, else "[ADDR/]HOST:CONTAINER,..." entries.
std::string PastaPortSpec(const std::vector<PortMapping>& mappings, std::string_view protocol);
// slirp4netns's API request adding one hostPort.
nlohmann::json SlirpHostFwdRequest(const PortMapping& mapping);
// What a tool cannot forward, as a message naming the hostPort; nullopt
// when every mapping is fine. Both: TCP and UDP only. slirp4netns: IPv4
// host addresses only.
std::optional<std::string> CheckUserModePorts(UserModeTool tool,
                                              const std::vector<PortMapping>& mappings);

// The pod's addresses read from its namespace's view of procfs
// (/proc/<pid>/net of a process inside it): the first IPv4 address that is
// not loopback (fib_trie's "/32 host LOCAL" entries), then the first IPv6
// address of global scope (if_inet6), as status.podIPs lists them.
std::vector<std::string> PodIpsFromProcNet(std::string_view fib_trie, std::string_view if_inet6);

// The tool as recorded beside the pod (kUserNetworkFile).
struct UserModeRecord {
  UserModeTool tool = UserModeTool::kSlirp4netns;
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string netns;
  std::vector<PortMapping> port_mappings;
  std::vector<std::string> pod_ips;
  std::string dns;  // the nameserver the pod's resolv.conf names
  nlohmann::json ToJson() const;
  static Result<UserModeRecord> FromJson(const nlohmann::json& j);
};

// A running tool this process started or found again.
class UserModeNetwork {
 public:
  // Starts the tool against options.netns, waits (bounded by
  // options.timeout, on its ready descriptor or its exit) until the pod's
  // side is configured, adds the hostPorts, reads the pod's addresses
  // through `proc_net` (/proc/<pid>/net of a process in the namespace) and
  // writes the record. On any failure nothing is left running.
  static Result<UserModeNetwork> Start(const UserModeOptions& options,
                                       const std::filesystem::path& proc_net);
  // The tool a previous supervisor of this pod started, by its record:
  // pinned by a pidfd, checked to be that process (start time, and the
  // tool's name in its command line). ESRCH when it is gone.
  static Result<UserModeNetwork> Find(const std::filesystem::path& pod_dir);
  // Ends a recorded tool that is still there, and removes the record, the
  // socket and the pid file: recovery of a pod not adopted. Whether one
  // was ended.
  static bool EndLeftOver(const std::filesystem::path& pod_dir);

  const UserModeRecord& record() const { return record_; }
  // The write end of slirp4netns's --exit-fd: the tool lives while any
  // copy is open, so the sandbox's holder keeps one (the tool outlives a
  // SIGKILLed supervisor, never the pod). Invalid for pasta.
  int exit_fd() const { return exit_fd_.get(); }

  // SIGTERM, then SIGKILL after 2 s; waits (bounded) through the pidfd,
  // and removes the record, the socket and the pid file.
  void Stop();

  UserModeNetwork(UserModeNetwork&&) noexcept = default;
  UserModeNetwork& operator=(UserModeNetwork&&) noexcept = default;
  ~UserModeNetwork() = default;

 private:
  UserModeNetwork(UserModeRecord record, Fd pidfd, Fd exit_fd, std::filesystem::path pod_dir)
      : record_(std::move(record)),
        pidfd_(std::move(pidfd)),
        exit_fd_(std::move(exit_fd)),
        pod_dir_(std::move(pod_dir)) {}

  UserModeRecord record_;
  Fd pidfd_;
  Fd exit_fd_;
  std::filesystem::path pod_dir_;
};

}  // namespace podvisor::network
