// Where podvisor keeps a pod's generated files under the state directory:
// the names are common/pod_dir.h's PodDir (one place for every path, shared
// with the CLI, the shim and recovery); an instance's writable root is
// planned from its directory by instance_plan.h's InstanceRoot.
#pragma once

#include <filesystem>
#include <vector>

#include "common/pod_dir.h"

namespace podvisor::hostfs {

struct WritableRootPaths {
  // The top lower directory: a plain image's rootfs, a layered image's top
  // layer. The handover record keeps only this one (an adopted instance's
  // root is only ever removed, never mounted again).
  std::filesystem::path lower;
  std::filesystem::path upper;   // instance/upper
  std::filesystem::path work;    // instance/work (overlayfs scratch; same filesystem as upper)
  std::filesystem::path merged;  // instance/rootfs: root.path in config.json
  // overlayfs's lower directories, top first: a plain rootfs is a list of
  // one, a layered image its layers (S16.3). Empty: {lower}.
  std::vector<std::filesystem::path> lower_dirs = {};

  std::vector<std::filesystem::path> LowerDirs() const {
    return lower_dirs.empty() ? std::vector<std::filesystem::path>{lower} : lower_dirs;
  }
};

// The pod's directory as the host filesystem code names it.
using PodLayout = PodDir;

}  // namespace podvisor::hostfs
