// The pod's network (docs/INTERFACE.md "Networking"), owned by the
// Executor: the CNI attachment made once the sandbox exists and before any
// container is created, its teardown at the end, and the /etc files that
// depend on the pod's address and DNS (hosts, resolv.conf, hostname).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/host_claim.h"
#include "common/result.h"
#include "hostfs/layout.h"
#include "network/attachment.h"
#include "network/user_mode.h"
#include "pod/model.h"
#include "supervisor/executor/executor_options.h"
#include "supervisor/lifecycle/types.h"

namespace podvisor::supervisor::executor {

// The pod's hostPorts as portmap's portMappings: those of the regular
// containers and the sidecars, which run for the pod's whole life.
std::vector<network::PortMapping> PodPortMappings(const pod::Pod& pod);

class PodNetworking {
 public:
  // Hands descriptors to the sandbox's holder for the pod's life
  // (Executor::KeepForNext).
  using Keeper = std::function<void(const std::string& key, const std::vector<int>& fds)>;

  // `publish` records the warnings of forming the pod's DNS (events).
  PodNetworking(const pod::Pod& pod, const ExecutorOptions& options,
                const hostfs::PodLayout& layout,
                std::function<void(const lifecycle::Publish&)> publish)
      : pod_(pod), options_(options), layout_(layout), publish_(std::move(publish)) {}

  // The pod's addresses: the host's for a hostNetwork pod and for one
  // without a sandbox (the kubelet's rule), CNI's for --network cni (ADD
  // through the namespace pinned at layout's ns/net; `netns` is the
  // sandbox's network namespace, `uid` the pod's), slirp4netns's or
  // pasta's for those modes (S22: the tool started against the same pin,
  // its exit descriptor given to `keep`), none otherwise.
  Status Attach(const std::optional<std::filesystem::path>& netns, const std::string& uid,
                const Keeper& keep = {});
  // S15.5: takes over the attachment an earlier supervisor of this pod
  // made (network.json), never ADDing again: its addresses and its
  // hostPort claims, so that the pod's end DELetes it as if it were ours.
  // A user-mode network's tool is found again by its record (S22.9).
  Status Resume();
  // CNI DEL, while the namespace still exists; the saved attachment stays
  // for the next run when it fails (recovery.cc). A user-mode network's
  // tool is ended, its ports released.
  void Detach();
  // DIR/<pod>/etc: hosts, hostname and resolv.conf for the containers.
  Status WriteEtcFiles();

  const std::vector<std::string>& pod_ips() const { return pod_ips_; }    // status.podIPs
  const std::vector<std::string>& host_ips() const { return host_ips_; }  // status.hostIPs

 private:
  std::filesystem::path StateFile() const;
  Status AttachUserMode(const std::filesystem::path& netns, const Keeper& keep);
  Status ResumeUserMode();

  const pod::Pod& pod_;
  const ExecutorOptions& options_;
  const hostfs::PodLayout& layout_;
  std::function<void(const lifecycle::Publish&)> publish_;
  std::optional<network::Attachment> attachment_;     // attached through CNI
  std::optional<network::UserModeNetwork> user_net_;  // slirp4netns or pasta
  std::vector<std::filesystem::path> pinned_;         // the user-mode network's namespace pins
  std::vector<HostClaim> port_claims_;                // its hostPorts, host-wide (S14.32)
  std::vector<std::string> pod_ips_;
  std::vector<std::string> host_ips_;
};

}  // namespace podvisor::supervisor::executor
