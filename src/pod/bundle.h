// Image references to directories of a bundle (docs/INTERFACE.md "Bundle layout").
//   image: busybox                   -> BUNDLE/images/busybox/
//   image: registry.example/app:1.2  -> BUNDLE/images/registry.example/app:1.2/
// An absolute path (S14.6), a reference containing a ".." component, or
// one resolving outside BUNDLE/images, is rejected.
#pragma once

#include <filesystem>
#include <string_view>

#include "common/result.h"

namespace podvisor::pod {

// True when any '/'-separated component of `path` is "..".
bool HasDotDotComponent(std::string_view path);

Result<std::filesystem::path> ResolveImageDir(const std::filesystem::path& bundle,
                                              std::string_view image);

// Whether `image` names something of the bundle: a directory (or OCI
// layout) ResolveImageDir finds, or a reference it refuses (S14.6: loading
// it reports why). False: a registry image (S16.4).
bool ImageInBundle(const std::filesystem::path& bundle, std::string_view image);

}  // namespace podvisor::pod
