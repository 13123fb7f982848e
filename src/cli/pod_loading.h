// Loading a pod the way `validate` and `run` both need it: parse, default,
// validate (the images in the bundle included), printing every problem on
// stderr in kubectl's form and choosing the docs/INTERFACE.md exit status.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "network/pod_network.h"
#include "oci/bundle_image.h"
#include "oci/image.h"
#include "pod/model.h"

namespace podvisor::cli {

struct LoadedPod {
  pod::Pod pod;
  // By container name: the images the config check loaded (plain rootfs
  // images, from the bundle as given), for `run` to hand down rather than
  // load again. An OCI layout is loaded only by `run`, into its cache.
  std::map<std::string, oci::Image> images;
  int exit_code = 0;  // 0, kExitUsage (invalid), kExitHost (unreadable)
  bool ok() const { return exit_code == 0; }
};

// ConfigMap and Secret files given on the command line (`--configmap`,
// `--secret`, podman's names), read after the bundle's own.
struct ConfigFiles {
  std::vector<std::string> config_maps;
  std::vector<std::string> secrets;
};

// --configmap FILE and --secret FILE, repeatable and comma-separated as
// in `podman kube play`.
void AddConfigFileOptions(CLI::App& cmd, ConfigFiles& files);

// `path` is a bundle directory or a manifest file (whose directory is then
// the bundle); `check_images` verifies each image directory exists and
// that each container's OCI config can be generated from its image (a
// command to run, its user in the image's passwd, an absolute workingDir).
LoadedPod LoadPod(const std::filesystem::path& path, bool check_images,
                  const ConfigFiles& config_files = {});

// For `run`: LoadPod with images, plus the checks of what this build of
// podvisor can run (probe kinds it cannot perform are refused up front
// rather than failing later).
// `manifest` (run -f FILE): `path` is a manifest file whose directory is
// the bundle (its images/ beside it); otherwise a bundle directory.
LoadedPod LoadPodForRun(const std::filesystem::path& path, bool manifest = false,
                        const ConfigFiles& config_files = {});

// The rules of `--network` (docs/INTERFACE.md "Networking"), which `run`
// and `validate --network` both apply: a hostPort needs a network to map
// it from (cni, or host with hostPort == containerPort), and cni needs the
// pod's own namespaces (`sandbox`). The message of the first refusal
// (exit 2), or nothing.
std::optional<std::string> CheckPodNetwork(const pod::Pod& pod, network::NetworkMode mode,
                                           bool sandbox);

// BUNDLE given as a bundle image (an OCI layout `podvisor pack` wrote):
// `dir` is where it was unpacked (under `unpack_parent`), removed when the
// OpenedBundle goes. For a bundle directory or manifest, `dir` is `path`
// and nothing is unpacked. exit_code: kExitUsage for an OCI layout that is
// not a bundle, kExitHost for one that cannot be read; the error is
// printed.
struct OpenedBundle {
  std::filesystem::path dir;
  std::optional<oci::UnpackedBundle> unpacked;
  int exit_code = 0;
};
OpenedBundle OpenBundle(const std::filesystem::path& path,
                        const std::filesystem::path& unpack_parent);

// --cni-bin-dir's default, whose existence makes cni the default mode.
inline constexpr const char* kDefaultCniBinDirs = "/usr/lib/cni:/opt/cni/bin";

// "10s", "1.5s", "500ms", "5m", "2h", or a plain number of seconds.
Result<Duration> ParseDuration(std::string_view text);

}  // namespace podvisor::cli
