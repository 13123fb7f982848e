// Small mount helpers shared by rootfs.cc and volumes.cc: what is mounted
// where (/proc/self/mountinfo), and unmounting that always ends with the
// mount gone from our namespace.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace podvisor {

// Mount points of this process's mount namespace, unescaped ("\040" -> " "),
// in mountinfo order.
Result<std::vector<std::string>> ListMountPoints();

// Mount points at or below `dir` (compared on path components), deepest first.
Result<std::vector<std::string>> MountPointsUnder(const std::filesystem::path& dir);

// True when `path` is the root of a mount (statx STATX_ATTR_MOUNT_ROOT).
bool IsMountPoint(const std::filesystem::path& path);

// The filesystem magic of `path` (statfs f_type), 0 on error.
long FilesystemType(const std::filesystem::path& path);

// Unmounts `path` if it is a mount point; not one is success. A busy mount
// (a process still inside, a container not yet deleted) is detached with
// MNT_DETACH as the last resort, so it disappears from the namespace now
// and from the kernel when the last user goes.
Status Unmount(const std::filesystem::path& path);

// Unmounts everything at or below `dir`, deepest first, and checks that
// nothing is left.
Status UnmountAllUnder(const std::filesystem::path& dir);

// mkdir -p with `mode` for the directories it creates (not umask-filtered).
Status MakeDirs(const std::filesystem::path& dir, unsigned mode);

}  // namespace podvisor
