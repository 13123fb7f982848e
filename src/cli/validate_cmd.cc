// `podvisor validate BUNDLE|MANIFEST`: every problem of the pod, one per
// line in kubectl's form, without starting anything.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cgroups/mode.h"
#include "cgroups/pod_cgroup.h"
#include "cli/commands.h"
#include "cli/pod_loading.h"
#include "oci/capabilities.h"
#include "oci/runtime_locator.h"
#include "pod/resources.h"

namespace podvisor::cli {
namespace {

struct ValidateOptions {
  std::string path;
  bool skip_images = false;
  bool quiet = false;
  std::string network;  // "": run's default on this host
  std::string runtime;  // "": not checked (a CI host that validates may have none)
  ConfigFiles config_files;
};

std::string Plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A scratch directory for unpacking a bundle image, removed with it.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/podvisor-validate-XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// What `run --runtime` would refuse, in run's words (oci::LocateRuntime
// with the host's cgroups): exit 3, the host cannot run the pod so. Said
// besides the pod's own problems, which are still checked.
bool RuntimeRefused(const ValidateOptions& opts) {
  if (opts.runtime.empty()) return false;
  auto runtime =
      oci::LocateRuntime(opts.runtime, cgroups::CrunUnusableOn(cgroups::DetectCgroups()));
  if (runtime) return false;
  std::fprintf(stderr, "podvisor: %s\n", runtime.error().message().c_str());
  return true;
}

int RunValidate(const ValidateOptions& opts) {
  const bool runtime_refused = RuntimeRefused(opts);
  // A bundle image is checked as `run` would run it: unpacked first.
  ScratchDir scratch;
  OpenedBundle opened = OpenBundle(opts.path, scratch.path / "bundle");
  if (opened.exit_code != 0) return runtime_refused ? kExitHost : opened.exit_code;
  LoadedPod loaded = cli::LoadPod(opened.dir, !opts.skip_images, opts.config_files);
  if (!loaded.ok()) return runtime_refused ? kExitHost : loaded.exit_code;
  const pod::Pod& pod = loaded.pod;
  // What `run --network` would refuse; its default as `run` computes it
  // (root with the namespaces sandbox, which is --sandbox auto for root).
  bool root = ::geteuid() == 0;
  network::NetworkMode mode =
      opts.network.empty() ? network::DefaultNetworkMode(
                                 root, true, network::SplitPathList(kDefaultCniBinDirs),
                                 root ? std::nullopt : std::optional(network::FindUserModeTools()))
                           : *network::ParseNetworkMode(opts.network);
  if (auto refused = CheckPodNetwork(pod, mode, /*sandbox=*/true)) {
    std::fprintf(stderr, "%s (with --network %s)\n", refused->c_str(),
                 network::NetworkModeName(mode));
    return runtime_refused ? kExitHost : kExitUsage;
  }
  // run refuses the runtime first, with exit 3, whatever else is wrong.
  if (runtime_refused) return kExitHost;
  // What no container could be given on this host (S14.35), as run says it.
  if (auto s = oci::CheckCapabilitiesAvailable(pod.spec, oci::CurrentBoundingCapabilities()); !s) {
    std::fprintf(stderr, "podvisor: this host cannot run the pod: %s (S14.35)\n",
                 s.error().message().c_str());
    return kExitHost;
  }
  // S10.11: pod-level resources need a pod cgroup, as run says it.
  if (pod::HasPodLevelResources(pod.spec)) {
    std::string why = cgroups::PodLevelResourcesUnenforceable(cgroups::DetectCgroups(), root);
    if (!why.empty()) {
      std::fprintf(stderr,
                   "podvisor: this host cannot run the pod: pod-level resources (spec.resources) "
                   "need %s (S10.11)\n",
                   why.c_str());
      return kExitHost;
    }
  }
  if (!opts.quiet) {
    std::size_t sidecars = 0;
    for (const auto& c : pod.spec.init_containers) sidecars += pod::IsSidecar(c) ? 1 : 0;
    std::printf(
        "pod/%s is valid: %s, %s, %s\n", pod.metadata.name.c_str(),
        Plural(pod.spec.init_containers.size() - sidecars, "init container", "init containers")
            .c_str(),
        Plural(sidecars, "sidecar", "sidecars").c_str(),
        Plural(pod.spec.containers.size(), "container", "containers").c_str());
  }
  return kExitSucceeded;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a pod bundle or manifest without running it; print every problem");
  cmd->add_option("BUNDLE|MANIFEST", opts->path,
                  "a bundle directory (with pod.yaml or pod.json), a bundle image (an OCI "
                  "layout `podvisor pack` wrote) or a manifest file")
      ->required();
  cmd->add_flag("--no-images", opts->skip_images,
                "do not check that each container's image directory exists");
  AddConfigFileOptions(*cmd, opts->config_files);
  cmd->add_flag("-q,--quiet", opts->quiet, "print nothing when the pod is valid");
  cmd->add_option("--network", opts->network,
                  "check against run --network cni, host, none, slirp4netns or pasta (default: "
                  "run's default here)")
      ->check(CLI::IsMember({"cni", "host", "none", "slirp4netns", "pasta"}));
  cmd->add_option("--runtime", opts->runtime,
                  "check that run --runtime crun, runc or PATH can run here (crun cannot run "
                  "on hybrid cgroups)");
  cmd->callback([opts, &exit_code] { exit_code = RunValidate(*opts); });
}

}  // namespace podvisor::cli
