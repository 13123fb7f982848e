// `podvisor oci-config BUNDLE CONTAINER`: prints the OCI runtime config
// `podvisor run` would give the runtime for an instance of CONTAINER: the
// same plan (oci/instance_plan.h) from the same facts, with the paths
// `run` would use (state dir, cgroup parent, --sandbox) and this host's
// memory size, hostname, addresses and (for privileged containers)
// devices. What only a running pod knows is printed as follows: the runtime
// id's last number (which counts the supervisor's create attempts) as 1,
// the sandbox's namespaces as the pod's ns/ files rather than its holder's
// /proc/PID/ns, no pod IPs from a CNI network. Creates nothing.
// S14.24: a Secret's values are printed only with --show-secrets; without
// it each reads "<redacted: secret NAME key KEY>".
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cgroups/mode.h"
#include "cgroups/self_parent.h"
#include "cli/commands.h"
#include "cli/node_facts.h"
#include "common/terminal_text.h"
#include "hostfs/instance_plan.h"
#include "hostfs/layout.h"
#include "hostfs/volumes.h"
#include "image/bundle_image.h"
#include "image/image.h"
#include "image/image_cache.h"
#include "network/pod_network.h"
#include "oci/spec.h"
#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/quantity.h"
#include "pod/validate.h"

namespace podvisor::cli {
namespace {

struct OciConfigOptions {
  std::string bundle;
  std::string container;
  std::string state_dir = "/run/podvisor";
  std::string cgroup_parent = "/podvisor";
  std::string sandbox = "auto";
  std::optional<std::string> node_memory;  // default: this host's RAM
  std::optional<int64_t> pids_limit;
  int instance = 0;
  bool show_secrets = false;
};

// S14.24: every value of the bundle's Secrets becomes a marker naming it,
// before the config is built, so what is derived from a value is redacted
// as well: the env var of a secretKeyRef or an envFrom secretRef, and a
// $(VAR) of either expanded into command, args or a subPathExpr.
void RedactSecretValues(pod::Pod& pod) {
  for (auto& [name, secret] : pod.config.secrets) {
    for (auto& [key, value] : secret.data) {
      value = "<redacted: secret ";
      value.append(name).append(" key ").append(key).append(">");
    }
  }
}

// Whether `run` would make its own pod cgroup (the Executor's
// SetupPodCgroup): cgroup v2 with at least one of the cpu, memory and pids
// controllers, as root. The two must agree: the tier-2 test comparing
// oci-config with run's config.json (tests/e2e/oci_config_test.cc) checks
// it on a cgroup v2 host as root.
bool RunMakesPodCgroup(const std::string& cgroup_parent) {
  if (cgroup_parent.empty() || ::geteuid() != 0) return false;
  cgroups::CgroupInfo cg = cgroups::DetectCgroups();
  if (cg.mode != cgroups::CgroupMode::kUnified) return false;
  return std::any_of(cg.controllers.begin(), cg.controllers.end(), [](const std::string& c) {
    return c == "cpu" || c == "memory" || c == "pids";
  });
}

// The facts `run` would plan the instance with (its PrepareInstance), as
// far as they are known before the pod runs (see the top of this file).
hostfs::InstanceFacts RunFacts(const OciConfigOptions& opts, const pod::Pod& pod,
                               const pod::Container& container, const hostfs::PodLayout& layout,
                               bool sandbox) {
  hostfs::InstanceFacts facts;
  facts.bundle = std::filesystem::absolute(opts.bundle);
  facts.runtime_id = hostfs::InstanceRuntimeId(pod.metadata.name, opts.container, opts.instance, 1);
  facts.instance_dir = layout.ContainersDir() / opts.container / facts.runtime_id;
  facts.own_root = sandbox;
  // S14.2: run binds what each subPath resolves to at a path of its own
  // beneath the instance (oci::BindSubPaths) and mounts that.
  for (std::size_t i = 0; i < container.volume_mounts.size(); ++i) {
    const pod::VolumeMount& vm = container.volume_mounts[i];
    if (vm.sub_path.empty() && vm.sub_path_expr.empty()) continue;
    facts.sub_path_sources[i] = hostfs::SubPathMountDir(facts.instance_dir) / std::to_string(i);
  }
  if (sandbox) {
    if (!pod.spec.host_network) {
      facts.namespaces.network = layout.NamespaceFile("net");
      facts.namespaces.uts = layout.NamespaceFile("uts");
    }
    if (!pod.spec.host_ipc) facts.namespaces.ipc = layout.NamespaceFile("ipc");
    if (pod.spec.share_process_namespace.value_or(false))
      facts.namespaces.pid = layout.NamespaceFile("pid");
  }
  if (RunMakesPodCgroup(opts.cgroup_parent)) {
    // cgroups::PodCgroup's relative path: the parent normalised, then the pod.
    std::filesystem::path rel =
        std::filesystem::path(opts.cgroup_parent).relative_path().lexically_normal();
    if (rel == ".") rel.clear();
    facts.pod_cgroup = "/" + (rel / pod.metadata.name).string();
  }
  facts.cgroup_parent = opts.cgroup_parent;
  // A pod without its own network is on the host's (the Executor's
  // SetupNetwork); a CNI network's addresses exist only once it runs.
  if (pod.spec.host_network || !sandbox) facts.pod_ips = network::HostPrimaryIps();
  facts.pids_limit = opts.pids_limit;
  return facts;
}

// The bundle's pod, defaulted and valid; nullopt (the error printed, the
// exit status in `exit_code`) otherwise.
std::optional<pod::Pod> LoadValidPod(const std::filesystem::path& bundle, int& exit_code) {
  auto parsed = pod::ParseManifestFile(bundle);
  if (!parsed) {
    std::fprintf(stderr, "podvisor: %s\n", parsed.error().message().c_str());
    exit_code = parsed.error().code() != 0 ? kExitHost : kExitUsage;
    return std::nullopt;
  }
  pod::Pod& pod = parsed->pod;
  pod::ApplyDefaults(pod);
  pod::FieldErrors errors = std::move(parsed->errors);
  for (auto& e : pod::ValidatePod(pod)) errors.push_back(std::move(e));
  if (!errors.empty()) {
    // S14.20: a field error quotes the manifest's value, which a bundle
    // image pulled from a registry controls.
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", TerminalSafe(e.ToString()).c_str());
    std::fprintf(stderr, "podvisor: pod \"%s\" is invalid (see `podvisor validate`)\n",
                 pod.metadata.name.c_str());
    exit_code = kExitUsage;
    return std::nullopt;
  }
  return std::move(pod);
}

// The options that cannot describe a run; the exit status, or 0.
int RefuseOptions(const OciConfigOptions& opts, const std::filesystem::path& bundle) {
  // The config names paths in the bundle and the pod's cgroup; a bundle
  // image is unpacked and `self` resolved only by the run that uses them.
  if (image::LooksLikeBundleImage(bundle)) {
    std::fprintf(stderr,
                 "podvisor: oci-config: %s is an OCI layout; give the bundle directory it was "
                 "packed from (run and validate take the layout)\n",
                 bundle.c_str());
    return kExitUsage;
  }
  if (opts.cgroup_parent == cgroups::kSelfCgroupParent) {
    std::fprintf(stderr,
                 "podvisor: oci-config: --cgroup-parent=self is resolved by run from its own "
                 "cgroup; give that cgroup's path\n");
    return kExitUsage;
  }
  return 0;
}

int RunOciConfig(const OciConfigOptions& opts) {
  std::filesystem::path bundle(opts.bundle);
  if (int refused = RefuseOptions(opts, bundle); refused != 0) return refused;
  // As `run` reads --node-memory: the host's RAM unless given.
  std::optional<int64_t> node_memory = NodeMemoryOption(opts.node_memory);
  if (!node_memory) return kExitUsage;
  int exit_code = 0;
  std::optional<pod::Pod> loaded = LoadValidPod(bundle, exit_code);
  if (!loaded) return exit_code;
  pod::Pod& pod = *loaded;

  const pod::Container* container = nullptr;
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == opts.container) container = &c;
    }
  }
  if (!container) {
    std::fprintf(stderr, "podvisor: pod \"%s\" has no container \"%s\"\n",
                 pod.metadata.name.c_str(), opts.container.c_str());
    return kExitUsage;
  }
  std::filesystem::path state_dir = std::filesystem::absolute(opts.state_dir);
  auto image = image::LoadImage(std::filesystem::absolute(bundle), container->image,
                                {image::ImageCacheDir(state_dir)});
  if (!image) {
    std::fprintf(stderr, "podvisor: %s\n", image.error().message().c_str());
    return kExitHost;
  }
  hostfs::PodLayout layout(state_dir, pod.metadata.name);
  bool sandbox = opts.sandbox == "namespaces" || (opts.sandbox == "auto" && ::geteuid() == 0);
  auto host = hostfs::ReadHostFacts(*container, layout.dir());
  if (!host) {
    std::fprintf(stderr, "podvisor: %s\n", host.error().message().c_str());
    return kExitHost;
  }
  host->node_memory_bytes = *node_memory;
  host->node_hostname = NodeHostname();
  oci::ContainerConfigInput in = hostfs::PlanContainerConfig(
      pod, *container, *image, layout, RunFacts(opts, pod, *container, layout, sandbox), *host);

  // After validation, which may read a typed Secret's values.
  if (!opts.show_secrets) RedactSecretValues(pod);
  auto config = oci::GenerateConfig(pod, *container, *image, in);
  if (!config) {
    std::fprintf(stderr, "podvisor: %s\n", config.error().message().c_str());
    return kExitUsage;
  }
  // A Secret's value shown with --show-secrets may be any bytes: invalid
  // UTF-8 becomes U+FFFD rather than an exception.
  std::printf("%s\n",
              config->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return kExitSucceeded;
}

}  // namespace

void AddOciConfigCommand(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<OciConfigOptions>();
  CLI::App* cmd = app.add_subcommand(
      "oci-config", "Print the OCI runtime config podvisor would generate for a container");
  cmd->add_option("BUNDLE", opts->bundle, "The pod bundle directory")->required();
  cmd->add_option("CONTAINER", opts->container, "The container (init, sidecar or regular)")
      ->required();
  cmd->add_option("--state-dir", opts->state_dir, "State directory, as for `run`")
      ->capture_default_str();
  cmd->add_option("--cgroup-parent", opts->cgroup_parent, "Cgroup parent, as for `run`")
      ->capture_default_str();
  cmd->add_option("--sandbox", opts->sandbox, "auto, namespaces or none, as for `run`")
      ->check(CLI::IsMember({"auto", "namespaces", "none"}))
      ->capture_default_str();
  cmd->add_option("--node-memory", opts->node_memory,
                  "the node's allocatable memory, as for `run`; default: this host's RAM");
  cmd->add_option("--pod-pids-limit", opts->pids_limit, "as for `run`")->check(CLI::PositiveNumber);
  cmd->add_option("--instance", opts->instance, "Instance (restart count) of the container")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--show-secrets", opts->show_secrets,
                "Print the values of the bundle's Secrets (redacted by default)");
  cmd->callback([opts, &exit_code] { exit_code = RunOciConfig(*opts); });
}

}  // namespace podvisor::cli
