// The host's device nodes, for privileged containers (Kubernetes gives
// them every host device, as containerd's HostDevices does).
#pragma once

#include <filesystem>
#include <vector>

#include "common/result.h"
#include "oci/spec.h"

namespace podvisor::oci {

// Character and block devices under `dev_dir` (default /dev), sorted by
// path, skipping pts/, shm/, mqueue/, fd/ and /dev/console (the runtime
// sets those up itself) and symlinks.
Result<std::vector<HostDevice>> ScanHostDevices(const std::filesystem::path& dev_dir = "/dev");

}  // namespace podvisor::oci
