// Where podvisor keeps a pod's generated files under the state directory:
// the names are common/pod_dir.h's PodDir (one place for every path, shared
// with the CLI, the shim and recovery); PodLayout adds what needs an image,
// the paths of an instance's writable root.
#pragma once

#include <filesystem>
#include <string_view>

#include "common/pod_dir.h"

namespace podvisor::oci {

struct WritableRootPaths {
  std::filesystem::path lower;   // the image rootfs
  std::filesystem::path upper;   // instance/upper
  std::filesystem::path work;    // instance/work (overlayfs scratch; same filesystem as upper)
  std::filesystem::path merged;  // instance/rootfs: root.path in config.json
};

class PodLayout : public PodDir {
 public:
  using PodDir::PodDir;

  WritableRootPaths WritableRoot(std::string_view container, int instance,
                                 const std::filesystem::path& image_rootfs) const {
    std::filesystem::path d = InstanceDir(container, instance);
    return {image_rootfs, d / InstanceFile::kUpperDir, d / InstanceFile::kWorkDir,
            d / InstanceFile::kRootfsDir};
  }
};

}  // namespace podvisor::oci
