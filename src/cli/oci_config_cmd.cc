// `podvisor oci-config BUNDLE CONTAINER`: prints the OCI runtime config
// podvisor would generate for the first instance of CONTAINER, with the
// paths `podvisor run` would use (state dir, cgroup parent, the pod's
// pinned namespaces). Reads the bundle and this host's memory size,
// hostname and (for privileged containers) devices; creates nothing.
// S14.24: a Secret's values are printed only with --show-secrets; without
// it each reads "<redacted: secret NAME key KEY>".
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cgroups/self_parent.h"
#include "cli/commands.h"
#include "common/terminal_text.h"
#include "oci/bundle_image.h"
#include "oci/capabilities.h"
#include "oci/devices.h"
#include "oci/image.h"
#include "oci/image_cache.h"
#include "oci/layout.h"
#include "oci/node_info.h"
#include "oci/spec.h"
#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/validate.h"

namespace podvisor::cli {
namespace {

struct OciConfigOptions {
  std::string bundle;
  std::string container;
  std::string state_dir = "/run/podvisor";
  std::string cgroup_parent = "/podvisor";
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

int64_t NodeMemoryBytes() {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  return static_cast<int64_t>(info.totalram) * info.mem_unit;
}

std::string NodeHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

int RunOciConfig(const OciConfigOptions& opts) {
  std::filesystem::path bundle(opts.bundle);
  // The config names paths in the bundle and the pod's cgroup; a bundle
  // image is unpacked and `self` resolved only by the run that uses them.
  if (oci::LooksLikeBundleImage(bundle)) {
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
  auto parsed = pod::ParseManifestFile(bundle);
  if (!parsed) {
    std::fprintf(stderr, "podvisor: %s\n", parsed.error().message().c_str());
    return parsed.error().code() != 0 ? kExitHost : kExitUsage;
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
    return kExitUsage;
  }

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
  auto image = oci::LoadImage(bundle, container->image,
                              {oci::ImageCacheDir(std::filesystem::absolute(opts.state_dir))});
  if (!image) {
    std::fprintf(stderr, "podvisor: %s\n", image.error().message().c_str());
    return kExitHost;
  }

  oci::PodLayout layout(opts.state_dir, pod.metadata.name);
  oci::ContainerConfigInput in;
  in.bundle = bundle;
  in.root_path = layout.WritableRoot(container->name, opts.instance, image->rootfs).merged;
  in.volumes_dir = layout.VolumesDir();
  in.termination_message_file = layout.TerminationMessageFile(container->name, opts.instance);
  in.etc_hosts = layout.HostsFile();
  in.etc_hostname = layout.HostnameFile();
  in.etc_resolv_conf = layout.ResolvConfFile();
  if (!pod.spec.host_ipc) in.pod_shm_dir = layout.ShmDir();
  if (!pod.spec.host_network) {
    in.namespaces.network = layout.NamespaceFile("net");
    in.namespaces.uts = layout.NamespaceFile("uts");
  }
  if (!pod.spec.host_ipc) in.namespaces.ipc = layout.NamespaceFile("ipc");
  if (pod.spec.share_process_namespace.value_or(false))
    in.namespaces.pid = layout.NamespaceFile("pid");
  in.cgroups_path = opts.cgroup_parent + "/" + pod.metadata.name + "/" + container->name;
  in.node_memory_bytes = NodeMemoryBytes();
  in.node_hostname = NodeHostname();
  oci::AddNodeFacts(in, pod.spec.host_network, opts.state_dir);
  in.available_capabilities = oci::CurrentBoundingCapabilities();
  if (oci::IsPrivileged(*container)) {
    auto devices = oci::ScanHostDevices();
    if (!devices) {
      std::fprintf(stderr, "podvisor: %s\n", devices.error().message().c_str());
      return kExitHost;
    }
    in.host_devices = std::move(*devices);
  }

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
  cmd->add_option("--instance", opts->instance, "Instance (restart count) of the container")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--show-secrets", opts->show_secrets,
                "Print the values of the bundle's Secrets (redacted by default)");
  cmd->callback([opts, &exit_code] { exit_code = RunOciConfig(*opts); });
}

}  // namespace podvisor::cli
