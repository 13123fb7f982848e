// Removing the pod's cgroup directories when the pod has ended.
//
// The runtime creates each container's cgroup from its cgroupsPath
// (/<parent>/<pod>/<container>) and removes it on delete, but the parent
// directories it created along the way stay. On a v1 or hybrid host they
// exist once per mounted hierarchy (cpu, memory, pids, ...), so podvisor
// walks every cgroup mount and removes the empty ones, deepest first.
// rmdir() of a cgroup directory fails while it holds processes or
// children, which is exactly the guard wanted: nothing in use is removed.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace podvisor::cgroups {

// Mount points of every cgroup and cgroup2 filesystem (/proc/self/mountinfo).
std::vector<std::filesystem::path> CgroupMounts();

// For every mount M: rmdir M/relative, then its parents up to and
// including M/<first component of relative>, stopping at the first that
// is not empty. Returns how many directories were removed.
int RemoveEmptyCgroupDirs(const std::string& relative);

}  // namespace podvisor::cgroups
