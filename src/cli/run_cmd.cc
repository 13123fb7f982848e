// `podvisor run [opts] BUNDLE`: this process becomes the pod's supervisor
// and runs the pod in the foreground until it ends (docs/INTERFACE.md).
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>
#include "common/log.h"

#include "cgroups/mode.h"
#include "cgroups/pod_cgroup.h"
#include "cli/commands.h"
#include "cli/node_facts.h"
#include "cli/pod_loading.h"
#include "cli/pod_summary.h"
#include "cli/rootless_run.h"
#include "cli/run_steps.h"
#include "cli/user_dirs.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "image/image.h"
#include "image/image_cache.h"
#include "network/pod_network.h"
#include "oci/runtime_locator.h"
#include "pod/resources.h"
#include "supervisor/executor/executor.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::cli {
namespace {

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
