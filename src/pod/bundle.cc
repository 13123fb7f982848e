#include "pod/bundle.h"

namespace podvisor::pod {

// Checked on the raw string, before any normalisation, so "a/../b" is
// refused even though it would stay inside the bundle: a reference that
// needs ".." is a mistake or an attack, and refusing it keeps the rule easy
// to state.
bool HasDotDotComponent(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

namespace {

// lexically_normal() keeps a trailing separator ("images/busybox/"); drop it
// so "busybox" and "busybox/" resolve to the same path.
std::filesystem::path DropTrailingSeparator(std::filesystem::path p) {
  if (!p.has_filename() && p.has_relative_path()) return p.parent_path();
  return p;
}

}  // namespace

Result<std::filesystem::path> ResolveImageDir(const std::filesystem::path& bundle,
                                              std::string_view image) {
  // The messages read as the detail of "spec.containers[0].image: Invalid
  // value: ...", which is where ValidateImages puts them.
  if (image.empty()) return Error("must not be empty");
  if (HasDotDotComponent(image)) return Error("must not contain '..'");

  std::filesystem::path ref(image);
  // S14.6: an image is always the bundle's own. An absolute path would
  // name a host directory, and the pod may come from a bundle image
  // (registry content, or the shim's containerd snapshot, which podvisor
  // reads as a plain directory and cannot tell from the operator's).
  if (ref.is_absolute()) {
    return Error("must name a directory under BUNDLE/images, not an absolute path");
  }

  // "." or "./" would name BUNDLE/images itself; only a directory *under*
  // it is an image. Without "..", lexical normalisation cannot climb out of
  // BUNDLE/images, so "inside" reduces to "strictly below".
  std::filesystem::path images = (bundle / "images").lexically_normal();
  images = DropTrailingSeparator(images);
  std::filesystem::path resolved = DropTrailingSeparator((images / ref).lexically_normal());
  std::filesystem::path rel = resolved.lexically_relative(images);
  if (rel.empty() || rel == "." || *rel.begin() == "..") {
    return Error("must name a directory under " + images.string());
  }
  // As skopeo writes them: `skopeo copy ... oci:images/debian:12` puts
  // the tag into the layout images/debian/ (index.json's
  // org.opencontainers.image.ref.name), so "debian:12" and
  // "debian@sha256:..." also name images/debian/ when that is an OCI
  // layout and no directory of the full name exists. The tag or digest
  // then picks the manifest (oci/oci_layout.cc).
  std::error_code ec;
  if (!std::filesystem::exists(resolved, ec)) {
    const std::string name(image);
    std::size_t slash = name.rfind('/');
    std::size_t at = name.find('@');
    std::size_t colon = name.find(':', slash == std::string::npos ? 0 : slash);
    std::size_t cut = at != std::string::npos ? at : colon;
    if (cut != std::string::npos && cut > 0) {
      std::filesystem::path base =
          DropTrailingSeparator((images / name.substr(0, cut)).lexically_normal());
      std::filesystem::path base_rel = base.lexically_relative(images);
      if (!base_rel.empty() && base_rel != "." && *base_rel.begin() != ".." &&
          std::filesystem::is_regular_file(base / "oci-layout", ec)) {
        return base;
      }
    }
  }
  return resolved;
}

bool ImageInBundle(const std::filesystem::path& bundle, std::string_view image) {
  auto dir = ResolveImageDir(bundle, image);
  if (!dir) return true;
  std::error_code ec;
  return std::filesystem::exists(*dir, ec);
}

}  // namespace podvisor::pod
