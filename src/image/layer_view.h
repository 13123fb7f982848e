// Reading one file of a layered image without mounting it: the path is
// looked up top-down through the overlayfs lower directories as overlayfs
// would (a whiteout hides the name below it, an opaque directory hides
// the lower layers' directory, a directory hides a lower non-directory),
// and symlinks are resolved in the merged view as if it were "/"
// (openat2's RESOLVE_IN_ROOT: an absolute target starts at the image root,
// ".." stops there). Every step is an *at() call with O_NOFOLLOW on a
// descriptor of a layer directory, so nothing the image controls leads
// out of the store.
//
// For the few files podvisor reads from an image (oci/user.cc's
// /etc/passwd and /etc/group); not a general union filesystem.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor::image {

// Opens `relative` in the merged view of `layers` (top first) with open(2)
// `flags` (O_NOFOLLOW and O_CLOEXEC added). nullopt when it does not
// exist there. ELOOP after 40 symlinks; ENOTDIR when a non-directory is
// on the way.
Result<std::optional<Fd>> OpenInLayers(const std::vector<std::filesystem::path>& layers,
                                       std::string_view relative, int flags);

}  // namespace podvisor::image
