// Images of a bundle (docs/INTERFACE.md "Bundle layout"): BUNDLE/images/<ref>/
// holds rootfs/ and an optional image.json, an OCI image configuration
// whose config.Entrypoint, Cmd, Env, WorkingDir, User and StopSignal are
// the container's defaults; or it is an OCI image layout (oci-layout,
// index.json, blobs/), unpacked once into a cache (image_cache.h) that then
// provides the same two things. This file reads them; how they combine
// with the container's own command, args and env is process_env.h.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "pod/model.h"

namespace podvisor::image {

// The part of an OCI image configuration podvisor honours. Absent fields
// are empty.
struct ImageConfig {
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> env;  // "NAME=value", in image order
  std::string working_dir;
  std::string user;         // "name", "uid", "name:group", "uid:gid"
  std::string stop_signal;  // "SIGTERM", "TERM", "15"; empty: none
  friend bool operator==(const ImageConfig&, const ImageConfig&) = default;
};

struct Image {
  std::string reference;         // as written in the pod
  std::filesystem::path dir;     // BUNDLE/images/<ref>, or the absolute ref
  std::filesystem::path rootfs;  // dir/rootfs; empty for an image of the layer store
  // An image of the layer store (layer_store.h): its overlayfs lower
  // directories, top layer first. Empty for a plain rootfs.
  std::vector<std::filesystem::path> layers;
  ImageConfig config;
  std::string manifest_digest;  // an OCI layout's or a pulled image's manifest; empty otherwise
  // What the status reports as imageID: a pulled image's repository digest
  // ("docker.io/library/nginx@sha256:…"); empty: the manifest digest, or a
  // plain rootfs's content digest.
  std::string image_id;
};

struct ImageLoadOptions {
  // Where OCI layouts are unpacked (ImageCacheDir(state dir)); empty: an
  // OCI layout is an error.
  std::filesystem::path cache_dir;
};

// Parses the text of an image.json. `file` only names the source in errors.
// Wrong JSON types are errors ("image.json: config.Cmd: must be an array of
// strings"); unknown fields are ignored, as every image tool does.
Result<ImageConfig> ParseImageConfig(std::string_view json_text, const std::filesystem::path& file);

// Resolves `reference` with pod::ResolveImageDir. An OCI layout there is
// unpacked into options.cache_dir (or found there); otherwise rootfs/ must
// be a directory and image.json is read when present.
Result<Image> LoadImage(const std::filesystem::path& bundle, std::string_view reference,
                        const ImageLoadOptions& options = {});

// The signal that asks the container to stop: lifecycle.stopSignal, else
// the image's StopSignal, else SIGTERM (Kubernetes' order).
Result<int> EffectiveStopSignal(const pod::Container& container, const ImageConfig& image);

}  // namespace podvisor::image
