// A pod bundle as an OCI image (docs/INTERFACE.md "Bundles as OCI
// images"): `podvisor pack` writes an image layout whose single layer
// holds the bundle at the layer's root (pod.yaml or pod.json, config/,
// images/<ref>/ each an OCI layout), so a mounted rootfs of the image is a
// bundle directory. The image config carries the label
// io.podvisor.bundle=1 and the manifest the annotation of the same name:
// that is how `run`, `validate` and the containerd shim tell a bundle
// from an ordinary image.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "image/oci_layout.h"

namespace podvisor::image {

inline constexpr std::string_view kBundleLabel = "io.podvisor.bundle";
inline constexpr std::string_view kBundleLabelValue = "1";
// The pod's name, informational (`skopeo inspect` shows it).
inline constexpr std::string_view kBundlePodLabel = "io.podvisor.pod";

// What `pack` puts in: paths relative to the bundle.
struct PackInput {
  std::filesystem::path bundle;
  std::string manifest_file;        // "pod.yaml" or "pod.json"
  std::vector<std::string> images;  // references as the pod names them (relative)
  std::string pod_name;
  std::string tag = "latest";  // index.json's org.opencontainers.image.ref.name
};

struct PackResult {
  Descriptor manifest;
  Descriptor layer;
  std::vector<std::string> converted_images;  // rootfs directories turned into OCI layouts
};

// Writes the OCI image layout `out` (which must not exist yet): built in
// a sibling scratch directory and renamed into place, so `out` appears
// whole or not at all. The same bundle always packs to the same digests.
Result<PackResult> PackBundle(const PackInput& input, const std::filesystem::path& out);

// True when `dir` is an OCI layout rather than a bundle directory
// (an oci-layout marker and no pod.yaml or pod.json).
bool LooksLikeBundleImage(const std::filesystem::path& dir);

// Resolves the layout's manifest (its only one, else the `latest` tag)
// and checks it is a podvisor bundle: an error naming the label when it
// is an ordinary image.
Result<ResolvedLayout> ResolveBundleImage(const std::filesystem::path& dir);

// A bundle unpacked from an image into a private directory, removed when
// this object goes. The directory is locked (flock) while it lives, so a
// later SweepUnpackedBundles can tell a live pod's from one a SIGKILLed
// supervisor left.
class UnpackedBundle {
 public:
  UnpackedBundle(std::filesystem::path dir, Fd lock)
      : dir_(std::move(dir)), lock_(std::move(lock)) {}
  UnpackedBundle(UnpackedBundle&& other) noexcept;
  UnpackedBundle& operator=(UnpackedBundle&&) = delete;
  UnpackedBundle(const UnpackedBundle&) = delete;
  ~UnpackedBundle();
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  Fd lock_;
};

// Unpacks the bundle image at `layout_dir` into a new directory under
// `parent` (mode 0700, named by the manifest digest and the pid), through
// the same layer code as every image.
Result<UnpackedBundle> UnpackBundleImage(const std::filesystem::path& layout_dir,
                                         const std::filesystem::path& parent);

// Removes directories under `parent` whose lock nobody holds: what a
// supervisor killed by SIGKILL could not remove itself; `parent` too when
// that leaves it empty. Returns how many went.
int SweepUnpackedBundles(const std::filesystem::path& parent);

}  // namespace podvisor::image
