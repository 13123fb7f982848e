// PodNetworking (pod_networking.h): the pod's CNI attachment and the /etc
// files that depend on it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/pod_dir.h"

#include "common/mounts.h"
#include "hostfs/etc_files.h"
#include "network/default_network.h"
#include "network/dns.h"
#include "network/host_ports.h"
#include "network/hosts.h"
#include "oci/spec.h"
#include "supervisor/executor/pod_networking.h"

namespace podvisor::supervisor::executor {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<std::string> ReadFile(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    if (errno == ENOENT) return std::string();
    return Error::FromErrno("reading " + file.string());
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Pins the pod's network namespace at `pin` with a bind mount, as
// ip-netns does. The plugins get this path rather than /proc/<pid>/ns/net:
// it outlives a SIGKILLed supervisor, so the next run's DEL still finds
// the namespace (bridge removes its masquerade rules only when it can
// read the pod's addresses from inside it), and it can never come to
// name another process's namespace.
Status PinNetns(const std::filesystem::path& source, const std::filesystem::path& pin) {
  if (auto s = podvisor::MakeDirs(pin.parent_path(), 0700); !s) return s;
  Fd file(::open(pin.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0400));
  if (!file) return Error::FromErrno("creating " + pin.string());
  if (::mount(source.c_str(), pin.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Error::FromErrno("pinning the pod's network namespace at " + pin.string());
  }
  return Ok();
}

// The user namespace owning the sandbox's network namespace (`netns` is
// /proc/<holder>/ns/net) when it is not this process's own: a pod with
// hostUsers: false. The tool must join it to configure the interface.
std::optional<std::filesystem::path> ForeignUserNamespace(const std::filesystem::path& netns) {
  std::filesystem::path userns = netns.parent_path() / "user";
  struct stat theirs {};
  struct stat ours {};
  if (::stat(userns.c_str(), &theirs) != 0 || ::stat("/proc/self/ns/user", &ours) != 0) {
    return std::nullopt;
  }
  if (theirs.st_ino == ours.st_ino && theirs.st_dev == ours.st_dev) return std::nullopt;
  return userns;
}

network::UserModeTool ToolOf(network::NetworkMode mode) {
  return mode == network::NetworkMode::kPasta ? network::UserModeTool::kPasta
                                              : network::UserModeTool::kSlirp4netns;
}

}  // namespace

std::vector<network::PortMapping> PodPortMappings(const pod::Pod& pod) {
  std::vector<network::PortMapping> out;
  auto add = [&](const pod::Container& c) {
    for (const auto& p : c.ports) {
      if (!p.host_port || *p.host_port == 0) continue;
      out.push_back({*p.host_port, p.container_port, Lower(p.protocol), p.host_ip});
    }
  };
  // Sidecars serve for the pod's whole life, as regular containers do.
  for (const auto& c : pod.spec.init_containers) {
    if (pod::IsSidecar(c)) add(c);
  }
  for (const auto& c : pod.spec.containers) add(c);
  return out;
}

std::filesystem::path PodNetworking::StateFile() const {
  return PodDir::At(options_.state_dir).NetworkFile();
}

Status PodNetworking::Attach(const std::optional<std::filesystem::path>& netns,
                             const std::string& uid, const Keeper& keep) {
  host_ips_ = network::HostPrimaryIps();
  // The kubelet's rule: a hostNetwork pod has the host's address. So has
  // a pod without a sandbox (--sandbox none), which is on the host's
  // network too.
  if (pod_.spec.host_network || !options_.sandbox) {
    pod_ips_ = host_ips_;
    return Ok();
  }
  const PodNetworkOptions& net = options_.network;
  if (network::IsUserModeNetwork(net.mode)) {
    if (!netns) {
      return Error(std::string("--network ") + network::NetworkModeName(net.mode) +
                   " needs the pod's own network namespace (--sandbox namespaces)");
    }
    return AttachUserMode(*netns, keep);
  }
  if (net.mode != network::NetworkMode::kCni) return Ok();
  if (!netns) {
    return Error("--network cni needs the pod's own network namespace (--sandbox namespaces)");
  }

  std::optional<network::NetworkConfigList> list;
  auto selected = network::SelectNetwork(net.conf_dir, net.network_name);
  if (!selected) return selected.take_error();
  if (selected->has_value()) {
    list = std::move(**selected);
  } else {
    network::DefaultNetworkOptions defaults;
    defaults.ipam_data_dir = net.default_dir / "networks";
    auto written = network::WriteDefaultNetwork(defaults, net.default_dir / "net.d");
    if (!written) return written.take_error().Wrap("writing the default network");
    list = std::move(*written);
  }

  std::filesystem::path pin = layout_.NamespaceFile("net");
  if (auto s = PinNetns(*netns, pin); !s) return s;
  network::AttachParams params;
  params.container_id = uid;
  params.netns = pin.string();
  params.pod_namespace =
      pod_.metadata.namespace_name.empty() ? "default" : pod_.metadata.namespace_name;
  params.pod_name = pod_.metadata.name;
  params.pod_uid = uid;
  params.port_mappings = PodPortMappings(pod_);
  params.bin_dirs = net.bin_dirs;
  params.timeout = net.plugin_timeout;

  // The hostPort check and the ADD that claims the ports are one step for
  // every pod under this state directory.
  std::filesystem::path state_root = options_.state_dir.parent_path();
  auto lock = network::LockNetworkState(state_root);
  if (!lock) return lock.take_error();
  if (auto conflict =
          network::FindHostPortConflict(state_root, pod_.metadata.name, params.port_mappings)) {
    return Error(*conflict);
  }
  // S14.32: host-wide, and never over a host service.
  auto ports = network::ClaimHostPorts(
      options_.host_claims_dir, ClaimOwner{state_root, pod_.metadata.name}, params.port_mappings);
  if (!ports) return ports.take_error();
  port_claims_ = std::move(*ports);
  log::Info("attaching pod {} to CNI network {} ({})", pod_.metadata.name, list->name,
            list->source.string());
  auto attached = network::Attach(*list, params, StateFile());
  if (!attached) return attached.take_error();
  attachment_ = std::move(*attached);
  pod_ips_ = attachment_->result->PodIps();
  log::Info("pod {} has IP {}", pod_.metadata.name,
            pod_ips_.empty() ? std::string("(none)") : pod_ips_.front());
  return Ok();
}

Status PodNetworking::Resume() {
  host_ips_ = network::HostPrimaryIps();
  if (pod_.spec.host_network || !options_.sandbox) {
    pod_ips_ = host_ips_;
    return Ok();
  }
  if (network::IsUserModeNetwork(options_.network.mode)) return ResumeUserMode();
  if (options_.network.mode != network::NetworkMode::kCni) return Ok();
  auto saved = network::LoadAttachment(StateFile());
  if (!saved) return saved.take_error();
  if (!*saved) return Error("the pod's CNI attachment (" + StateFile().string() + ") is gone");
  const std::filesystem::path state_root = options_.state_dir.parent_path();
  auto ports =
      network::ClaimHostPorts(options_.host_claims_dir, ClaimOwner{state_root, pod_.metadata.name},
                              (*saved)->params.port_mappings);
  if (!ports) return ports.take_error();
  port_claims_ = std::move(*ports);
  attachment_ = std::move(**saved);
  if (attachment_->result) pod_ips_ = attachment_->result->PodIps();
  return Ok();
}

// S22.1-S22.8: the pod's namespace pinned as for CNI (pasta, once it has
// dropped its privileges, can open a pinned file but not another
// process's /proc entries), its hostPorts claimed host-wide, then the tool.
Status PodNetworking::AttachUserMode(const std::filesystem::path& netns, const Keeper& keep) {
  const PodNetworkOptions& net = options_.network;
  network::UserModeOptions o;
  o.tool = ToolOf(net.mode);
  o.netns = layout_.NamespaceFile("net");
  if (auto s = PinNetns(netns, o.netns); !s) return s;
  pinned_.push_back(o.netns);
  if (auto userns = ForeignUserNamespace(netns)) {
    o.userns = layout_.NamespaceFile("net-user");
    if (auto s = PinNetns(*userns, *o.userns); !s) return s;
    pinned_.push_back(*o.userns);
  }
  o.pod_dir = PodDir::At(options_.state_dir).dir();
  o.port_mappings = PodPortMappings(pod_);
  o.allow_host_loopback = net.allow_host_loopback;
  o.as_root = ::geteuid() == 0;
  o.timeout = net.user_mode_timeout;
  if (auto refused = network::CheckUserModePorts(o.tool, o.port_mappings)) return Error(*refused);

  const std::filesystem::path state_root = options_.state_dir.parent_path();
  auto lock = network::LockNetworkState(state_root);
  if (!lock) return lock.take_error();
  // S14.32 and S22.6: host-wide, and never over a host service.
  auto ports = network::ClaimHostPorts(options_.host_claims_dir,
                                       ClaimOwner{state_root, pod_.metadata.name}, o.port_mappings);
  if (!ports) return ports.take_error();
  port_claims_ = std::move(*ports);
  log::Info("starting {} for pod {}", network::UserModeToolName(o.tool), pod_.metadata.name);
  // /proc/<holder>/net: the namespace's own view, where the tool's
  // configuration of the pod's address shows.
  auto started = network::UserModeNetwork::Start(o, netns.parent_path().parent_path() / "net");
  if (!started) return started.take_error();
  user_net_ = std::move(*started);
  if (keep && user_net_->exit_fd() >= 0) keep("usernet-exit", {user_net_->exit_fd()});
  pod_ips_ = user_net_->record().pod_ips;
  log::Info("pod {} has IP {} ({})", pod_.metadata.name,
            pod_ips_.empty() ? std::string("(none)") : pod_ips_.front(),
            network::UserModeToolName(o.tool));
  return Ok();
}

// S22.9: the tool outlived the supervisor that started it.
Status PodNetworking::ResumeUserMode() {
  auto found = network::UserModeNetwork::Find(PodDir::At(options_.state_dir).dir());
  if (!found) return found.take_error();
  const std::filesystem::path state_root = options_.state_dir.parent_path();
  auto ports =
      network::ClaimHostPorts(options_.host_claims_dir, ClaimOwner{state_root, pod_.metadata.name},
                              found->record().port_mappings, /*probe_listeners=*/false);
  if (!ports) return ports.take_error();
  port_claims_ = std::move(*ports);
  user_net_ = std::move(*found);
  pod_ips_ = user_net_->record().pod_ips;
  pinned_ = {layout_.NamespaceFile("net")};
  std::error_code ec;
  if (std::filesystem::exists(layout_.NamespaceFile("net-user"), ec)) {
    pinned_.push_back(layout_.NamespaceFile("net-user"));
  }
  return Ok();
}

void PodNetworking::Detach() {
  if (network::IsUserModeNetwork(options_.network.mode) && !attachment_) {
    // The tool's sockets were the ports: with it gone they are free, also
    // when its start failed after the claims.
    if (user_net_) user_net_->Stop();
    user_net_.reset();
    for (HostClaim& claim : port_claims_) claim.Release();
    port_claims_.clear();
  }
  for (const std::filesystem::path& pin : pinned_) {
    if (auto s = podvisor::Unmount(pin); !s) log::Warn("{}", s.error().message());
  }
  pinned_.clear();
  if (!attachment_) return;
  if (auto s = network::Detach(*attachment_, StateFile()); !s) {
    // The saved attachment stays: the next run of this pod retries
    // (recovery.cc), and its hostPorts stay claimed until then.
    log::Warn("detaching pod {} from its network: {}", pod_.metadata.name, s.error().message());
  } else {
    for (HostClaim& claim : port_claims_) claim.Release();
  }
  port_claims_.clear();
  if (auto s = podvisor::Unmount(attachment_->params.netns); !s) {
    log::Warn("{}", s.error().message());
  }
  attachment_.reset();
}

Status PodNetworking::WriteEtcFiles() {
  std::string hostname = oci::PodHostname(pod_, options_.node_hostname);
  std::vector<network::HostAlias> aliases;
  for (const auto& a : pod_.spec.host_aliases) aliases.push_back({a.ip, a.hostnames});

  std::string hosts;
  if (pod_.spec.host_network) {
    auto text = ReadFile("/etc/hosts");
    if (!text) return text.take_error();
    hosts = network::HostNetworkHostsFile(*text, aliases);
  } else {
    network::PodNames names =
        network::FormPodNames(pod_.metadata.name, pod_.metadata.namespace_name, pod_.spec.hostname,
                              pod_.spec.subdomain, pod_.spec.set_hostname_as_fqdn.value_or(false));
    hosts = network::ManagedHostsFile(pod_ips_, names, aliases);
  }

  auto host_dns = network::HostResolvConf();
  if (!host_dns) return host_dns.take_error();
  // S22.7: the host's resolvers are reached through the tool's forwarder
  // (a loopback resolver such as systemd-resolved's is not the pod's).
  if (user_net_ && !pod_.spec.host_network) host_dns->nameservers = {user_net_->record().dns};
  auto policy =
      network::ParseDnsPolicy(pod_.spec.dns_policy.empty() ? "ClusterFirst" : pod_.spec.dns_policy);
  std::optional<network::PodDnsConfig> config;
  if (pod_.spec.dns_config) {
    config.emplace();
    config->nameservers = pod_.spec.dns_config->nameservers;
    config->searches = pod_.spec.dns_config->searches;
    for (const auto& o : pod_.spec.dns_config->options)
      config->options.push_back({o.name, o.value});
  }
  network::PodDns dns = network::FormPodDns(policy.value_or(network::DnsPolicy::kClusterFirst),
                                            pod_.spec.host_network, config, *host_dns);
  for (const std::string& warning : dns.warnings) {
    bool no_cluster_dns = warning.find("no cluster DNS") != std::string::npos;
    publish_(lifecycle::Publish{lifecycle::EventType::kWarning,
                                no_cluster_dns ? "MissingClusterDNS" : "DNSConfigForming", "pod",
                                warning});
  }
  return hostfs::WritePodEtcFiles(layout_, hostname, hosts, dns.conf.Render());
}

}  // namespace podvisor::supervisor::executor
