// The task's root filesystem: containerd hands the shim the mounts of the
// image's snapshot (an overlay of the layers, or a bind of one directory)
// and the shim mounts them at BUNDLE/rootfs, as containerd's runc shim
// does. For podvisor that root is a bundle directory (pod.yaml at its top),
// the single layer of a packed bundle image.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace podvisor::shim {

struct RootfsMount {
  std::string type;  // "overlay", "bind", ...
  std::string source;
  std::vector<std::string> options;  // "ro", "lowerdir=...", ...
};

// mount(2) flags and the data string of `options`, split as containerd's
// mount package splits them: known flag words (ro, rw, bind, rbind, nosuid,
// nodev, noexec, ...) become flags, everything else is data.
struct MountCall {
  unsigned long flags = 0;
  std::string data;
  bool bind = false;       // bind or rbind
  bool read_only = false;  // ro: a bind needs a remount for it
};
MountCall ParseMountOptions(const std::vector<std::string>& options);

// Mounts each in order at `target` (created if missing), then checks that
// a mounted bundle (pod.yaml or pod.json at its top) holds only
// directories and regular files (S14.5:
// "bundle image: images/img/rootfs: a symlink leaving the bundle"). On
// failure, unmounts what it mounted.
Status MountRootfs(const std::vector<RootfsMount>& mounts, const std::filesystem::path& target);

// Unmounts everything at `target`, topmost first; absent or unmounted is
// success.
Status UnmountRootfs(const std::filesystem::path& target);

}  // namespace podvisor::shim
