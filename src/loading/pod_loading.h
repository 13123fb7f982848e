// Loading a pod the way `validate`, `run` and the containerd shim all need
// it: parse, default, validate (the images in the bundle included). It
// prints nothing: what the user must read comes back as lines, already
// escaped for a terminal (S14.20), for the caller to print (the CLI) or to
// send (the shim's reply to containerd).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "image/bundle_image.h"
#include "image/image.h"
#include "network/pod_network.h"
#include "pod/model.h"

namespace podvisor::loading {

// Why a pod was not loaded: the user's input (invalid, exit 2 for the CLI)
// or the host (unreadable, exit 3).
enum class LoadFailure { kNone, kInvalid, kUnreadable };

struct LoadedPod {
  pod::Pod pod;
  // By container name: the images the config check loaded (plain rootfs
  // images, from the bundle as given), for `run` to hand down rather than
  // load again. An OCI layout is loaded only by `run`, into its cache.
  std::map<std::string, image::Image> images;
  LoadFailure failure = LoadFailure::kNone;
  // Every line for the user, in order: "Warning: ..." lines, then when
  // invalid each problem in kubectl's form and "podvisor: pod NAME is
  // invalid: N problems" (or the one reason it could not be read).
  std::vector<std::string> messages;
  // The problems alone (kubectl's "field: reason" lines), when invalid.
  std::vector<std::string> problems;
  bool ok() const { return failure == LoadFailure::kNone; }
};

// ConfigMap and Secret files given on the command line (`--configmap`,
// `--secret`, podman's names), read after the bundle's own.
struct ConfigFiles {
  std::vector<std::string> config_maps;
  std::vector<std::string> secrets;
};

// `path` is a bundle directory or a manifest file (whose directory is then
// the bundle); `check_images` verifies each image directory exists and
// that each container's OCI config can be generated from its image (a
// command to run, its user in the image's passwd, an absolute workingDir).
// What this build of podvisor cannot perform (a host name in a probe's or
// hook's httpGet or tcpSocket) is refused here, for `validate` as for `run`.
LoadedPod LoadPod(const std::filesystem::path& path, bool check_images,
                  const ConfigFiles& config_files = {});

// For `run`: LoadPod with images.
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
// and nothing is unpacked. failure: kInvalid for an OCI layout that is not
// a bundle, kUnreadable for one that cannot be read; `error` says why.
struct OpenedBundle {
  std::filesystem::path dir;
  std::optional<image::UnpackedBundle> unpacked;
  LoadFailure failure = LoadFailure::kNone;
  std::string error;
};
OpenedBundle OpenBundle(const std::filesystem::path& path,
                        const std::filesystem::path& unpack_parent);

}  // namespace podvisor::loading
