// The steps of `podvisor run` before the Executor (run_steps.h).
#include "cli/run_steps.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "common/log.h"

#include "cgroups/pod_cgroup.h"
#include "cli/node_facts.h"
#include "cli/pod_loading.h"
#include "cli/rootless_run.h"
#include "common/signal_names.h"
#include "image/oci_layout.h"
#include "network/pod_network.h"
#include "pod/bundle.h"
#include "pod/quantity.h"
#include "pod/resources.h"
#include "process/reaper.h"
#include "supervisor/executor/host_checks.h"

namespace podvisor::cli {
namespace {

// --grace and the backoff durations (the Lifecycle's options).
Refusal ParseLifecycleOptions(const RunOptions& opts,
                              supervisor::lifecycle::LifecycleOptions& lifecycle) {
  if (opts.grace) {
    // S14.14: 1e10 s does not fit in nanoseconds; at or above 100 years
    // (or inf) the grace is "forever", never a wrapped one.
    double seconds = *opts.grace;
    lifecycle.grace_override =
        seconds < static_cast<double>(supervisor::lifecycle::kForeverSeconds)
            ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds))
            : supervisor::lifecycle::kForever;
  }
  for (auto [text, target] : {std::pair{&opts.backoff_initial, &lifecycle.backoff.initial},
                              std::pair{&opts.backoff_max, &lifecycle.backoff.max},
                              std::pair{&opts.backoff_reset, &lifecycle.backoff.reset}}) {
    auto d = ParseDuration(*text);
    if (!d) return Refuse(kExitUsage, d.error().message());
    *target = *d;
  }
  return std::nullopt;
}

}  // namespace

Refusal Refuse(int exit_code, const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", message.c_str());
  return exit_code;
}

// What `run`'s options say of the supervisor beyond the pod: the
// Lifecycle's durations, log rotation, the node's memory, the runtime
// timeout.
Refusal ParseSupervisorOptions(const RunOptions& opts, supervisor::executor::ExecutorOptions& ex) {
  if (auto refused = ParseLifecycleOptions(opts, ex.lifecycle)) return refused;
  // S11.2, a Kubernetes quantity as the kubelet's containerLogMaxSize.
  auto log_max_size = pod::Quantity::Parse(opts.log_max_size);
  if (!log_max_size || log_max_size->value() <= 0) {
    return Refuse(kExitUsage,
                  "--log-max-size: invalid size \"" + opts.log_max_size + "\" (e.g. 10Mi)");
  }
  ex.log_rotation = {static_cast<uint64_t>(log_max_size->value()), opts.log_max_files};
  // The node's allocatable memory (S14.4, S10.3, the downward API's
  // default memory limit): the host's RAM unless the operator reserves
  // some of it, as the kubelet's --system-reserved and --kube-reserved do.
  std::optional<int64_t> node_memory = NodeMemoryOption(opts.node_memory);
  if (!node_memory) return kExitUsage;
  ex.node_memory_bytes = *node_memory;
  auto runtime_timeout = ParseDuration(opts.runtime_timeout);
  if (!runtime_timeout) {
    return Refuse(kExitUsage, "--runtime-timeout: " + runtime_timeout.error().message());
  }
  ex.runtime_timeout = *runtime_timeout;
  return std::nullopt;
}

// Each image is loaded once per run and handed to the Executor: the pod's
// loading checked the plain ones. OCI image layouts and registry images
// are the supervisor's (S16.4, S16.9): it unpacks and pulls them once the
// pod shows in status. Image stop
// signals go to the Lifecycle's options.
Refusal LoadImages(const pod::Pod& pod, const std::string& bundle,
                   const image::ImageLoadOptions& options,
                   std::map<std::string, image::Image>& images,
                   supervisor::lifecycle::LifecycleOptions& lifecycle) {
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      // A registry image (S16.4) is the supervisor's to pull, once the pod
      // shows in status.
      if (!pod::ImageInBundle(bundle, c.image)) continue;
      // So is a bundle OCI layout: unpacked while the pod already shows.
      if (auto dir = pod::ResolveImageDir(bundle, c.image); dir && image::IsOciLayout(*dir)) {
        continue;
      }
      auto found = images.find(c.name);
      if (found == images.end()) {
        auto image = image::LoadImage(bundle, c.image, options);
        if (!image) return Refuse(kExitHost, image.error().message());
        found = images.emplace(c.name, std::move(*image)).first;
      }
      // The Executor runs from the absolute bundle path: the paths of an
      // image loaded from the bundle as given become what loading from
      // that path gives.
      image::Image& image = found->second;
      image.dir = std::filesystem::absolute(image.dir).lexically_normal();
      if (image.manifest_digest.empty()) image.rootfs = image.dir / "rootfs";
      if (!image.config.stop_signal.empty()) {
        if (auto signo = ParseSignal(image.config.stop_signal)) {
          lifecycle.image_stop_signals[c.name] = *signo;
        }
      }
    }
  }
  return std::nullopt;
}

// The supervisor process itself: last pick of the OOM killer (S10.3), and
// the reaper of what the runtime leaves behind.
Refusal PrepareSupervisorProcess() {
  {
    std::ofstream adj("/proc/self/oom_score_adj");
    adj << pod::kSupervisorOomScoreAdj << std::flush;
    if (!adj) {
      // S10.3: no CAP_SYS_RESOURCE. The pod still runs; its containers'
      // values are raised to ours where lower (OomScoreAdjClamped).
      std::ifstream now("/proc/self/oom_score_adj");
      int own = 0;
      now >> own;
      log::Warn(
          "cannot set the supervisor's oom_score_adj to {} (no CAP_SYS_RESOURCE): it stays {}",
          pod::kSupervisorOomScoreAdj, own);
    }
  }
  if (::getpid() != 1) {
    // Container processes are reparented to us when the runtime exits, so
    // their exit status comes from our own waitid.
    if (auto s = process::SetChildSubreaper(); !s) return Refuse(kExitHost, s.error().message());
  }
  return std::nullopt;
}

// --cgroup-parent=self (cgroups/self_parent.h): into a leaf of our own
// cgroup first, so the pod cgroup can sit beside it; `cgroup_parent`
// becomes the leaf's parent.
Refusal EnterSelfCgroupParent(bool root, cgroups::CgroupInfo& cg,
                              std::optional<cgroups::SupervisorLeaf>& supervisor_leaf,
                              std::string& cgroup_parent) {
  std::string refused;
  if (cg.mode != cgroups::CgroupMode::kUnified) {
    refused = "needs cgroup v2; this host's cgroups are " + cgroups::DescribeCgroups(cg);
  } else if (!root) {
    refused = "needs root: podvisor makes the pod cgroup itself";
  }
  if (!refused.empty()) return Refuse(kExitHost, "--cgroup-parent=self " + refused);
  auto leaf = cgroups::SupervisorLeaf::Enter(cg.v2_mount, "/proc/self/cgroup", ::getpid());
  if (!leaf) return Refuse(kExitHost, leaf.error().message());
  supervisor_leaf.emplace(std::move(*leaf));
  cgroup_parent = supervisor_leaf->parent();
  // What the engine did not delegate stays off: enabling it would write
  // to the engine's cgroups above ours.
  std::vector<std::string> delegated = supervisor_leaf->DelegatedControllers();
  std::erase_if(cg.controllers, [&](const std::string& c) {
    return std::find(delegated.begin(), delegated.end(), c) == delegated.end();
  });
  log::Info("--cgroup-parent=self: supervisor moved into {}, the pod cgroup goes beside it",
            supervisor_leaf->leaf().string());
  return std::nullopt;
}

// The pod's network options and whether it gets its own namespaces
// (--sandbox), refused by the --network rules.
Refusal ChooseNetwork(const RunOptions& opts, const pod::Pod& pod, bool root, bool rootless,
                      bool& sandbox, supervisor::executor::PodNetworkOptions& network) {
  // Root of podvisor's own user namespace (S21) makes the sandbox's
  // namespaces as root does.
  sandbox = opts.sandbox == "namespaces" || (opts.sandbox == "auto" && (root || rootless));
  if (!sandbox && opts.sandbox == "auto") {
    log::Warn(
        "not root: the pod shares the host's network, IPC and UTS namespaces and "
        "containers write into their image rootfs");
  }
  network.conf_dir = opts.cni_conf_dir;
  network.bin_dirs = network::SplitPathList(opts.cni_bin_dir);
  network.network_name = opts.cni_network;
  network.allow_host_loopback = opts.network_host_loopback;
  // S22.3: without root the default is a user-mode network, pasta first.
  std::optional<network::UserModeTools> user_mode_tools;
  bool tun_usable = true;
  if (rootless) {
    user_mode_tools = network::FindUserModeTools();
    // Both tools open /dev/net/tun in the pod's namespace as the user:
    // udev makes it 0666, a host without udev may leave it root's alone.
    tun_usable = ::access("/dev/net/tun", R_OK | W_OK) == 0;
    if (!tun_usable && opts.network.empty()) {
      log::Warn(
          "rootless: /dev/net/tun is not readable and writable by this user, which pasta and "
          "slirp4netns need: the pod's network namespace has only its loopback interface "
          "(udev's rule makes it 0666)");
      user_mode_tools = network::UserModeTools{};
    }
  }
  network.mode = opts.network.empty()
                     ? network::DefaultNetworkMode(root, sandbox, network.bin_dirs, user_mode_tools)
                     : *network::ParseNetworkMode(opts.network);
  if (auto refused = CheckPodNetwork(pod, network.mode, sandbox)) {
    return Refuse(kExitUsage, *refused);
  }
  if (rootless) {
    // S21.8: the default is a user-mode network (pasta, else slirp4netns);
    // with neither installed the pod's own network namespace has its
    // loopback only, and the log says so once.
    if (opts.network.empty() && network.mode == network::NetworkMode::kNone &&
        !pod.spec.host_network && sandbox && tun_usable) {
      log::Warn(
          "rootless: the pod's network namespace has only its loopback interface (CNI needs "
          "root; neither pasta nor slirp4netns is installed: apt install passt or slirp4netns)");
    }
    if (auto refused = RootlessRefusal(pod, network.mode)) return Refuse(kExitHost, *refused);
  }
  return std::nullopt;
}

// S21.4: a state directory another user owns (a /tmp/podvisor-UID made by
// someone else) is never used: its pods would not be ours.
Refusal CheckOwnStateDir(const std::string& state_dir) {
  struct stat st {};
  if (::geteuid() == 0 || ::stat(state_dir.c_str(), &st) != 0 || st.st_uid == ::geteuid()) {
    return std::nullopt;
  }
  return Refuse(kExitHost, "--state-dir " + state_dir + " belongs to uid " +
                               std::to_string(st.st_uid) + ", not to this user (uid " +
                               std::to_string(::geteuid()) + ")");
}

// Before anything is made: a host that cannot run the pod fails once,
// naming why, rather than in every create, retried forever (S2.3).
// pivot_root(2) cannot move an initramfs, whichever way podvisor was
// started there (init mode or a shell's `podvisor run`): --no-pivot.
Refusal CheckHost(RunOptions& opts, const pod::Pod& pod, bool root, bool sandbox) {
  supervisor::executor::HostCheckOptions checks;
  checks.pod = &pod.spec;
  checks.privileged = root;
  checks.overlay = sandbox;
  checks.scratch_dir = std::filesystem::absolute(opts.state_dir);
  if (auto s = supervisor::executor::CheckHostForPod(checks); !s)
    return Refuse(kExitHost, s.error().message());
  if (!opts.no_pivot && supervisor::executor::RootIsInitramfs()) {
    log::Info("the root filesystem is an initramfs: running the runtime with --no-pivot");
    opts.no_pivot = true;
  }
  return std::nullopt;
}

// S10.11: spec.resources is enforced by the pod cgroup alone, so a host
// (or a --cgroup-parent) without one is refused before anything is made,
// rather than running the pod unbounded.
Refusal CheckPodLevelResources(const pod::Pod& pod, const cgroups::CgroupInfo& cg, bool root,
                               const std::string& cgroup_parent) {
  if (!pod::HasPodLevelResources(pod.spec)) return std::nullopt;
  std::string why = cgroups::PodLevelResourcesUnenforceable(cg, root);
  if (why.empty() && cgroup_parent.empty()) why = "a pod cgroup; --cgroup-parent is empty";
  if (why.empty()) return std::nullopt;
  const std::string need =
      "this host cannot run the pod: pod-level resources (spec.resources) need ";
  return Refuse(kExitHost, need + why + " (S10.11)");
}

}  // namespace podvisor::cli
