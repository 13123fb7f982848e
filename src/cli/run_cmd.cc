// `podvisor run [opts] BUNDLE`: this process becomes the pod's supervisor
// and runs the pod in the foreground until it ends (docs/INTERFACE.md).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>
#include "common/log.h"

#include "cgroups/mode.h"
#include "cgroups/pod_cgroup.h"
#include "cgroups/self_parent.h"
#include "cli/commands.h"
#include "cli/node_facts.h"
#include "cli/pod_loading.h"
#include "cli/pod_summary.h"
#include "cli/rootless_run.h"
#include "cli/user_dirs.h"
#include "common/pod_dir.h"
#include "common/signal_names.h"
#include "common/terminal_text.h"
#include "image/image.h"
#include "image/image_cache.h"
#include "image/oci_layout.h"
#include "network/pod_network.h"
#include "oci/runtime_locator.h"
#include "pod/bundle.h"
#include "pod/quantity.h"
#include "pod/resources.h"
#include "process/reaper.h"
#include "supervisor/executor/executor.h"
#include "supervisor/executor/host_checks.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::cli {
namespace {

struct RunOptions {
  std::string bundle;
  std::string file;  // -f
  std::string runtime;
  std::string state_dir = DefaultStateDir();  // S21.4: the user's own without root
  std::string log_dir = DefaultLogDir();
  std::string cgroup_parent = cgroups::kDefaultCgroupParent;
  std::optional<double> grace;
  std::string backoff_initial = "10s";
  std::string backoff_max = "300s";
  std::string backoff_reset = "10m";
  std::string runtime_timeout = "2m";
  std::optional<int64_t> pids_limit;
  std::string log_level = "info";
  std::string log_format = "text";
  bool no_pivot = false;
  std::string sandbox = "auto";
  std::string log_max_size = "10Mi";
  std::optional<std::string> node_memory;  // default: this host's RAM
  int log_max_files = supervisor::logs::kDefaultLogMaxFiles;
  std::string network;  // "": the default (network::DefaultNetworkMode)
  std::string cni_conf_dir = "/etc/cni/net.d";
  std::string cni_bin_dir = kDefaultCniBinDirs;
  std::optional<std::string> cni_network;
  bool network_host_loopback = false;  // S22.5
  ConfigFiles config_files;
};

void ConfigureLogging(const RunOptions& opts) {
  // CLI11 has checked both options against their lists.
  log::Configure(opts.log_format == "json" ? log::Style::kJson : log::Style::kText,
                 log::ParseLevel(opts.log_level).value_or(log::Level::kInfo));
}

// run's last lines: every container whose end made the pod fail (or
// would have), with what the status says of it, so the user need not go
// looking. Sidecars are left out: their exit never counts (S9.1).
void ExplainEnd(const pod::Pod& pod, const pod::PodStatus& status) {
  if (!status.reason.empty() || !status.message.empty()) {
    log::Warn("pod {}: {}{}{}", pod.metadata.name, status.reason,
              status.reason.empty() || status.message.empty() ? "" : ": ", status.message);
  }
  auto explain = [&](const std::vector<pod::ContainerStatus>& list, const char* kind) {
    for (const auto& c : list) {
      bool sidecar = false;
      for (const auto& spec : pod.spec.init_containers) {
        if (spec.name == c.name) sidecar = pod::IsSidecar(spec);
      }
      if (sidecar) continue;
      if (const auto& t = c.state.terminated;
          t && (t->exit_code != 0 || t->reason != "Completed")) {
        std::string line =
            std::string(kind) + " " + c.name + " failed: exit code " + std::to_string(t->exit_code);
        if (t->signal != 0) line += " (signal " + std::to_string(t->signal) + ")";
        line += ", reason " + (t->reason.empty() ? std::string("Error") : t->reason);
        // S14.20: the container wrote it; quoted so its end is ours.
        if (!t->message.empty()) line += ", message " + TerminalSafeQuoted(t->message);
        if (c.restart_count > 0) line += ", after " + std::to_string(c.restart_count) + " restarts";
        log::Warn("{}", line);
      } else if (const auto& w = c.state.waiting; w && w->reason != "PodInitializing" &&
                                                  w->reason != "ContainerCreating" &&
                                                  !w->reason.empty()) {
        std::string line = std::string(kind) + " " + c.name + " never ran: " + w->reason;
        if (!w->message.empty()) line += ", message " + TerminalSafeQuoted(w->message);
        log::Warn("{}", line);
      }
    }
  };
  explain(status.init_container_statuses, "init container");
  explain(status.container_statuses, "container");
}

// A step of RunPod that refuses the run: the exit status, its message
// printed; nullopt: go on.
using Refusal = std::optional<int>;

Refusal Refuse(int exit_code, const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", message.c_str());
  return exit_code;
}

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

// Runs the Executor to the pod's end: `run`'s exit status.
int Supervise(const pod::Pod& pod, const supervisor::executor::ExecutorOptions& ex,
              const std::map<std::string, image::Image>& images,
              std::optional<cgroups::SupervisorLeaf>& supervisor_leaf) {
  log::Info("running pod {} with {} ({}), cgroup mode {}, network {}", pod.metadata.name,
            ex.runtime.name, ex.runtime.path.string(), cgroups::CgroupModeName(ex.cgroups.mode),
            pod.spec.host_network ? "host" : network::NetworkModeName(ex.network.mode));
  auto executor = supervisor::executor::Executor::Create(pod, ex, images);
  if (!executor) {
    std::fprintf(stderr, "podvisor: cannot run pod %s: %s\n", pod.metadata.name.c_str(),
                 executor.error().message().c_str());
    return kExitHost;
  }
  auto phase = (*executor)->Run();
  pod::PodStatus final_status = (*executor)->FinalStatus();
  const bool stop_requested = (*executor)->StopRequested();
  executor->reset();
  if (supervisor_leaf) {
    if (auto s = supervisor_leaf->Leave(); !s) log::Warn("{}", s.error().message());
  }
  if (!phase) {
    log::Critical("{}", phase.error().message());
    return kExitHost;
  }
  log::Info("pod {} ended: phase={}", pod.metadata.name, pod::PodPhaseName(*phase));
  ExplainEnd(pod, final_status);
  if (*phase == pod::PodPhase::kSucceeded) return kExitSucceeded;
  // S14.40: the record keeps Failed; the status says the stop was asked.
  return stop_requested ? kExitStopped : kExitFailed;
}

int RunPod(RunOptions opts) {
  ConfigureLogging(opts);
  // run -f FILE (kubectl's habit): the manifest's directory is the bundle.
  if (opts.bundle.empty() == opts.file.empty()) {
    std::fprintf(stderr, "podvisor: run takes a BUNDLE directory or -f MANIFEST, not %s\n",
                 opts.bundle.empty() ? "neither" : "both");
    return kExitUsage;
  }
  const bool manifest = !opts.file.empty();
  // Before anything is made under the state directory (validate says it too).
  cgroups::CgroupInfo cg = cgroups::DetectCgroups();
  auto runtime = oci::LocateRuntime(opts.runtime, cgroups::CrunUnusableOn(cg));
  if (!runtime) return *Refuse(kExitHost, runtime.error().message());
  // A bundle image (`podvisor pack`'s OCI layout) is unpacked into the
  // state directory, out of any pod's way (".bundles" is no DNS label),
  // and removed when run returns, however it returns.
  OpenedBundle opened = manifest
                            ? OpenedBundle{}
                            : OpenBundle(opts.bundle, std::filesystem::absolute(opts.state_dir) /
                                                          StateDirEntry::kBundles);
  if (opened.exit_code != 0) return opened.exit_code;
  if (opened.unpacked) {
    log::Info("bundle image {} unpacked into {}", opts.bundle, opened.dir.string());
    opts.bundle = opened.dir.string();
  }
  auto loaded = cli::LoadPodForRun(manifest ? opts.file : opts.bundle, manifest, opts.config_files);
  if (manifest) {
    opts.bundle = std::filesystem::path(opts.file).parent_path().string();
    if (opts.bundle.empty()) opts.bundle = ".";
  }
  if (!loaded.ok()) return loaded.exit_code;
  pod::Pod& pod = loaded.pod;
  // S21: without privileges on the host, into a user namespace of our own
  // before anything of the pod is made (--sandbox none keeps the host's
  // namespaces and the user's own ids, as before).
  RootlessRun rootless;
  if (opts.sandbox != "none") {
    if (auto refused = CheckOwnStateDir(opts.state_dir)) return *refused;
    auto entered = EnterRootless(std::filesystem::absolute(opts.state_dir) / pod.metadata.name);
    if (!entered) {
      return *Refuse(kExitHost, entered.error().message() +
                                    " (run with --sandbox none to run in the host's namespaces "
                                    "as the user, S21.3)");
    }
    rootless = *entered;
  }
  // Root on the host: not the root of our own user namespace.
  const bool root = ::geteuid() == 0 && !rootless.active;
  if (auto refused = CheckPodLevelResources(pod, cg, root, opts.cgroup_parent)) {
    return *refused;
  }

  supervisor::executor::ExecutorOptions ex;
  if (auto refused = ParseSupervisorOptions(opts, ex)) return *refused;
  supervisor::lifecycle::LifecycleOptions& lifecycle = ex.lifecycle;
  lifecycle.qos_class = std::string(pod::QosClassName(pod::ComputeQosClass(pod.spec)));
  image::ImageLoadOptions image_options{
      image::ImageCacheDir(std::filesystem::absolute(opts.state_dir))};
  std::map<std::string, image::Image> images = std::move(loaded.images);
  if (auto refused = LoadImages(pod, opts.bundle, image_options, images, lifecycle)) {
    return *refused;
  }

  bool sandbox = false;
  supervisor::executor::PodNetworkOptions network;
  if (auto refused = ChooseNetwork(opts, pod, root, rootless.active, sandbox, network)) {
    return *refused;
  }
  if (auto refused = CheckHost(opts, pod, root, sandbox)) return *refused;
  // --network host is hostNetwork: true for every pod (the host's network
  // and UTS namespaces, the host's /etc/hosts, podIP = hostIP).
  if (network.mode == network::NetworkMode::kHost) pod.spec.host_network = true;

  if (auto refused = PrepareSupervisorProcess()) return *refused;
  std::optional<cgroups::SupervisorLeaf> supervisor_leaf;
  std::string cgroup_parent = opts.cgroup_parent;
  if (rootless.active) {
    std::string warning;
    cgroup_parent = RootlessCgroupParent(cg, opts.cgroup_parent, warning);
    // S10.11 holds without root too: no pod cgroup, no spec.resources.
    if (cgroup_parent.empty() && pod::HasPodLevelResources(pod.spec)) {
      return *Refuse(kExitHost,
                     "this host cannot run the pod: pod-level resources (spec.resources) need a "
                     "pod cgroup; " +
                         (warning.empty() ? std::string("--cgroup-parent is empty") : warning) +
                         " (S10.11)");
    }
    if (!warning.empty()) log::Warn("{}", warning);
  } else if (opts.cgroup_parent == cgroups::kAutoCgroupParent) {
    std::string why_not;
    cgroup_parent = cgroups::ResolveAutoCgroupParent(cg, root, why_not);
    // README "systemd": outside podvisor's own cgroup, and the log says so.
    if (!why_not.empty()) {
      log::Info("--cgroup-parent=auto: {}; the pod cgroups go under {}, outside podvisor's own",
                why_not, cgroup_parent);
    }
  }
  if (cgroup_parent == cgroups::kSelfCgroupParent) {
    if (auto refused =
            EnterSelfCgroupParent(root || rootless.active, cg, supervisor_leaf, cgroup_parent)) {
      return *refused;
    }
  }

  ex.bundle = std::filesystem::absolute(opts.bundle);
  ex.state_dir = std::filesystem::absolute(opts.state_dir) / pod.metadata.name;
  ex.log_dir = std::filesystem::absolute(opts.log_dir) / pod.metadata.name;
  ex.runtime = *runtime;
  ex.no_pivot = opts.no_pivot;
  ex.cgroup_parent = cgroup_parent;
  ex.cgroups = cg;
  ex.node_hostname = NodeHostname();
  ex.pids_limit = opts.pids_limit;
  ex.sandbox = sandbox;
  ex.image_cache_dir = image_options.cache_dir;
  ex.network = network;
  if (rootless.active) {
    // S21.4: what root keeps under /run is the user's, beside the pods.
    const std::filesystem::path state_root = std::filesystem::absolute(opts.state_dir);
    ex.host_claims_dir = state_root / StateDirEntry::kRootlessClaims;
    ex.network.default_dir = state_root / StateDirEntry::kRootlessCni;
    ex.rootless =
        oci::RootlessConfig{.no_cgroup = cgroup_parent.empty(),
                            .single_id = rootless.mode == process::UserNamespaceMode::kSingleId,
                            .bind_sys = pod.spec.host_network};
  }
  ex.status_text = [](const nlohmann::json& pod_json, bool wide) {
    return StatusTable(pod_json, wide, /*first=*/true, std::chrono::system_clock::now());
  };
  return Supervise(pod, ex, images, supervisor_leaf);
}

}  // namespace

void AddRunCommand(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run the pod in BUNDLE in the foreground until it ends");
  cmd->add_option("BUNDLE", opts->bundle,
                  "the bundle directory (pod.yaml or pod.json, images/), or an OCI layout "
                  "`podvisor pack` wrote");
  cmd->add_option("-f,--filename", opts->file,
                  "a manifest file instead of BUNDLE; its images are in images/ beside it");
  cmd->add_option("--runtime", opts->runtime,
                  "crun, runc or a path (default: the first that works)");
  cmd->add_option("--state-dir", opts->state_dir, "per-pod state: control socket, bundles, events")
      ->capture_default_str();
  cmd->add_option("--log-dir", opts->log_dir, "container logs: DIR/<pod>/<container>/<n>.log")
      ->capture_default_str();
  cmd->add_option("--cgroup-parent", opts->cgroup_parent,
                  "the pod cgroup is <parent>/<pod>; self: beside podvisor's own cgroup "
                  "(cgroup v2), which moves into a leaf _supervisor; auto: self on cgroup v2 "
                  "as root, else /podvisor")
      ->capture_default_str();
  cmd->add_option("--grace", opts->grace, "seconds; overrides terminationGracePeriodSeconds")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--backoff-initial", opts->backoff_initial, "first crash-loop delay (S4)")
      ->capture_default_str();
  cmd->add_option("--backoff-max", opts->backoff_max, "crash-loop delay cap")
      ->capture_default_str();
  cmd->add_option("--backoff-reset", opts->backoff_reset,
                  "a run this long resets the crash-loop backoff")
      ->capture_default_str();
  cmd->add_option("--runtime-timeout", opts->runtime_timeout,
                  "kill a runtime create/start/delete still running after this long; 0: never")
      ->capture_default_str();
  cmd->add_option("--pod-pids-limit", opts->pids_limit,
                  "pids.max of the pod cgroup and of each container")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--log-level", opts->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  cmd->add_option("--log-format", opts->log_format, "the supervisor's own log on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("--node-memory", opts->node_memory,
                  "the node's allocatable memory: bounds a Memory emptyDir without sizeLimit "
                  "(S14.4); default: this host's RAM");
  cmd->add_option("--log-max-size", opts->log_max_size,
                  "rotate a container log at this size (S11.2)")
      ->capture_default_str();
  cmd->add_option("--log-max-files", opts->log_max_files,
                  "log files kept per container instance, the current one included")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  AddConfigFileOptions(*cmd, opts->config_files);
  cmd->add_flag("--no-pivot", opts->no_pivot,
                "pass --no-pivot to the runtime (an initramfs root cannot pivot_root; "
                "detected and set by itself)");
  cmd->add_option("--sandbox", opts->sandbox,
                  "auto (own namespaces when root), namespaces, or none (the host's)")
      ->check(CLI::IsMember({"auto", "namespaces", "none"}))
      ->capture_default_str();
  cmd->add_option("--network", opts->network,
                  "cni, host, none, slirp4netns or pasta (default: cni as root with the "
                  "namespaces sandbox and a CNI plugin directory, else none)")
      ->check(CLI::IsMember({"cni", "host", "none", "slirp4netns", "pasta"}));
  cmd->add_flag("--network-host-loopback", opts->network_host_loopback,
                "with --network slirp4netns or pasta: let the pod reach the host's loopback "
                "through its gateway address (default: refused)");
  cmd->add_option("--cni-conf-dir", opts->cni_conf_dir,
                  "CNI network configurations (.conflist, .conf, .json)")
      ->capture_default_str();
  cmd->add_option("--cni-bin-dir", opts->cni_bin_dir, "CNI plugin directories, colon-separated")
      ->capture_default_str();
  cmd->add_option("--cni-network", opts->cni_network,
                  "the CNI network to join by name (default: the first configuration by file "
                  "name, else podvisor's own)");
  cmd->callback([opts, &exit_code] { exit_code = RunPod(*opts); });
}

void AddSandboxInitCommand(CLI::App& app, int& exit_code) {
  struct Options {
    std::string hostname;
    bool loopback = false;
    bool pid = false;
    std::string keeper;
    bool userns = false;
  };
  auto opts = std::make_shared<Options>();
  // Internal: the pod sandbox's holder process (supervisor/sandbox/sandbox.h).
  CLI::App* cmd = app.add_subcommand("sandbox-init", "");
  cmd->group("");  // hidden from --help
  cmd->add_option("--hostname", opts->hostname);
  cmd->add_flag("--loopback", opts->loopback);
  cmd->add_flag("--pid", opts->pid);
  cmd->add_option("--keeper", opts->keeper);
  cmd->add_flag("--userns", opts->userns);  // S20.5
  cmd->callback([opts, &exit_code] {
    exit_code = supervisor::sandbox::SandboxInitMain(opts->hostname, opts->loopback, opts->pid,
                                                     opts->keeper, opts->userns);
  });
}

}  // namespace podvisor::cli
