// What `podvisor run` checks of the host before it starts anything, so a
// host that cannot run the pod fails once, with its cause, instead of
// every container's create failing and being retried with backoff (S2.3)
// forever. These are the places embedding podvisor goes wrong: as PID 1
// of a container without the privileges a runtime needs, with the cgroup
// filesystem read-only, on a kernel without overlayfs, and on an
// initramfs root that cannot pivot_root (README "Embedding podvisor").
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "pod/model.h"

namespace podvisor::supervisor::executor {

// The capabilities a root supervisor with the namespaces sandbox needs in
// its effective set, with why: podvisor makes namespaces and overlay
// mounts itself, and the runtime it runs needs the rest.
struct RequiredCapability {
  int number;
  const char* name;
  const char* why;
};
const std::vector<RequiredCapability>& RequiredCapabilities();

// The names of the required capabilities missing from the CapEff line of
// a /proc/<pid>/status text; an unreadable text misses all of them.
std::vector<std::string> MissingCapabilities(std::string_view proc_status);

// The mount points of cgroup and cgroup2 filesystems mounted read-only in
// a /proc/<pid>/mountinfo text (a container's default cgroup mount): the
// runtime cannot make a container's cgroup under them.
std::vector<std::string> ReadOnlyCgroupMounts(std::string_view mountinfo);

// Whether a mountinfo text's "/" is the initial rootfs (an initramfs),
// which pivot_root(2) cannot move: the runtime needs --no-pivot there.
bool MountinfoRootIsInitramfs(std::string_view mountinfo);
bool RootIsInitramfs();  // of this process

// Whether a /proc/filesystems text lists a filesystem type.
bool FilesystemListed(std::string_view proc_filesystems, std::string_view type);

struct HostCheckOptions {
  bool privileged = false;  // root, with a real runtime: capabilities and cgroups
  bool overlay = false;     // instances get overlay roots (the sandbox)
  // Where a trial overlay mount may be made (made if missing; the trial's
  // own directory is removed again).
  std::filesystem::path scratch_dir;
  // The pod: what its containers ask of the host (capabilities, S14.35).
  const pod::PodSpec* pod = nullptr;
};

// Every check that applies, one error naming every cause found and what
// to do about it; Ok when the host can run the pod.
Status CheckHostForPod(const HostCheckOptions& options);

}  // namespace podvisor::supervisor::executor
