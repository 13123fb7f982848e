// Which cgroup hierarchy this host has, decided the way systemd and crun
// decide it: by the filesystem type of /sys/fs/cgroup (statfs), not by
// parsing /proc/mounts.
//   unified: /sys/fs/cgroup is cgroup2 - full v2, what podvisor wants;
//   hybrid:  /sys/fs/cgroup is a tmpfs of v1 hierarchies with cgroup2 at
//            /sys/fs/cgroup/unified, usually without controllers (this is
//            the development hosts' mode; crun refuses it, runc copes);
//   legacy:  v1 only;  none: no cgroup filesystem at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace podvisor::cgroups {

enum class CgroupMode { kUnified, kHybrid, kLegacy, kNone };
std::string_view CgroupModeName(CgroupMode mode);  // "unified", "hybrid", ...

struct CgroupInfo {
  CgroupMode mode = CgroupMode::kNone;
  std::filesystem::path v2_mount;        // empty without cgroup2
  std::vector<std::string> controllers;  // cgroup.controllers of the v2 root
};

// Pure decision from the statfs magic numbers (0 = path absent).
CgroupMode ModeFromFilesystemMagic(int64_t root_magic, int64_t unified_magic);

// Looks at `root` (normally /sys/fs/cgroup). Never fails: an unreadable
// hierarchy is reported as kNone.
CgroupInfo DetectCgroups(const std::filesystem::path& root = "/sys/fs/cgroup");

// "unified (cgroup2 at /sys/fs/cgroup, controllers: cpu memory pids)".
std::string DescribeCgroups(const CgroupInfo& info);

// Why crun cannot run on a host with these cgroups, as the end of "crun
// cannot run on ...", or "" when it can: crun refuses a v1/v2 hybrid
// hierarchy outright (every container fails to start, so a pod would
// crash-loop), and needs some cgroup filesystem; runc copes with both. The
// one answer for run, validate, version and the shim, handed to
// oci::LocateRuntime, which refuses an explicit crun with it.
std::string CrunUnusableOn(const CgroupInfo& info);

}  // namespace podvisor::cgroups
