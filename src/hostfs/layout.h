// Where podvisor keeps a pod's generated files under the state directory:
// the names are common/pod_dir.h's PodDir (one place for every path, shared
// with the CLI, the shim and recovery); an instance's writable root is
// planned from its directory by instance_plan.h's InstanceRoot.
#pragma once

#include <filesystem>

#include "common/pod_dir.h"

namespace podvisor::hostfs {

struct WritableRootPaths {
  std::filesystem::path lower;   // the image rootfs
  std::filesystem::path upper;   // instance/upper
  std::filesystem::path work;    // instance/work (overlayfs scratch; same filesystem as upper)
  std::filesystem::path merged;  // instance/rootfs: root.path in config.json
};

// The pod's directory as the host filesystem code names it.
using PodLayout = PodDir;

}  // namespace podvisor::hostfs
