// OCI image layouts (image-spec "image-layout.md"): a directory with an
// `oci-layout` marker, an `index.json` and content-addressed `blobs/`, as
// `skopeo copy docker://… oci:DIR:TAG` writes it. This file reads one:
// it picks the manifest for a tag and this machine's platform (descending
// into nested image indexes), and returns the manifest's config and layer
// descriptors. Every blob it reads is verified against its descriptor's
// digest and size; errors name the digest.
//
// Unpacking the layers is layer_unpack.h; caching the unpacked result per
// manifest digest is image_cache.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "image/digest.h"

namespace podvisor::image {

// An image platform in Go's GOOS/GOARCH names, as image indexes use them.
struct Platform {
  std::string os;            // "linux"
  std::string architecture;  // "amd64", "arm64", ...
  std::string variant;       // "v8"; empty when unspecified
  std::string ToString() const;
};

// linux/<this machine's architecture>.
Platform HostPlatform();

struct Descriptor {
  std::string media_type;
  Digest digest;
  int64_t size = -1;
  std::optional<Platform> platform;
  std::string ref_name;  // annotation org.opencontainers.image.ref.name
};

enum class LayerCompression { kNone, kGzip, kZstd };

struct LayerDescriptor {
  Descriptor blob;
  LayerCompression compression = LayerCompression::kNone;
  // The config's rootfs.diff_ids entry for this layer: the digest of its
  // uncompressed tar stream (S14.8). Always set by ResolveLayout.
  std::optional<Digest> diff_id;
};

// What a layout resolves to for one tag and platform.
struct ResolvedLayout {
  std::filesystem::path dir;
  Descriptor manifest;
  Descriptor config;
  std::string config_json;  // the config blob, verified
  std::vector<LayerDescriptor> layers;
};

// True when `dir` holds an `oci-layout` marker file.
bool IsOciLayout(const std::filesystem::path& dir);

// dir/blobs/<algorithm>/<hex>.
std::filesystem::path BlobPath(const std::filesystem::path& dir, const Digest& digest);

// Reads a whole (small) blob and verifies it. Blobs above `max_size` are
// refused before reading: manifests and configs are kilobytes, and a
// bogus descriptor must not make us read gigabytes into memory.
Result<std::string> ReadBlob(const std::filesystem::path& dir, const Descriptor& desc,
                             std::size_t max_size);

// The tag part of an image reference, for picking among several manifests
// of one layout: "registry.example/app:1.2" -> "1.2", "busybox" -> "",
// "host:5000/app" -> "" (a port is not a tag), "app@sha256:…" ->
// "sha256:…" (a digest picks the manifest of that digest).
std::string TagOf(std::string_view reference);

// Picks the manifest: by digest when `tag` is one; else index.json's only
// entry, else the entry whose
// ref.name annotation is `tag` ("latest" when empty) or ends in ":<tag>",
// else the entry for `platform`; an image index found on the way is
// descended into with the same platform rule. Reads and verifies the
// manifest and its config, and checks that the config's os/architecture
// (when given) match `platform`.
Result<ResolvedLayout> ResolveLayout(const std::filesystem::path& dir, std::string_view tag,
                                     const Platform& platform);

}  // namespace podvisor::image
