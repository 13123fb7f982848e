// The imageID of a plain rootfs image (issue 16): a digest of its content,
// as the kubelet reports the digest of every image. A plain directory has
// no manifest, so its content is hashed: every entry in name order, with
// its relative path, type, mode, owner, size, symlink target and bytes;
// timestamps are left out, so a copy of the same tree has the same
// digest. An OCI layout's imageID is its manifest digest instead.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"

namespace podvisor::image {

// "sha256:<hex>" of the tree at `rootfs` (symlinks are not followed).
Result<std::string> RootfsDigest(const std::filesystem::path& rootfs);

}  // namespace podvisor::image
