// Reading a container's OOM kills from its cgroup (SEMANTICS S9.5).
//
// The kernel counts each OOM kill in the memory cgroup of the victim and
// its ancestors before it delivers the SIGKILL: cgroup v2 `oom_kill` in
// memory.events, cgroup v1 `oom_kill` in memory.oom_control (Linux 4.13).
// So when the supervisor learns of a container init's exit from waitid,
// the count already includes the kill that caused it, and reading it then
// (before the runtime's delete removes the cgroup) is exact. Each
// container instance has its own cgroup (the runtime id is unique per
// attempt), so a count that grew since the instance was created was
// caused while that instance ran.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace podvisor::cgroups {

// The oom_kill count of one cgroup directory: memory.events (v2) or
// memory.oom_control (v1); 0 when neither is there or readable.
uint64_t OomKillCount(const std::filesystem::path& cgroup_dir);

// The largest OomKillCount of `cgroups_path` (an OCI cgroupsPath such as
// "/podvisor/web/web_app_0_1") under any of `mounts` (CgroupMounts()): on
// a hybrid host the memory controller is a v1 hierarchy, on a unified one
// it is the cgroup2 mount.
uint64_t ContainerOomKills(const std::string& cgroups_path,
                           const std::vector<std::filesystem::path>& mounts);

}  // namespace podvisor::cgroups
