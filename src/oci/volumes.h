// The pod's volumes on the host, prepared before any container starts and
// removed when the pod ends (docs/INTERFACE.md: emptyDir and hostPath).
//
//  - emptyDir: LAYOUT/volumes/<name>/, mode 0777 as the kubelet makes it so
//    that non-root containers can write. medium Memory: a tmpfs mounted on
//    that directory (size = sizeLimit, else the pod's memory limit when
//    every container has one, else the kernel default of half the RAM),
//    so all containers of the pod share it.
//  - hostPath: the `type` check of Kubernetes: DirectoryOrCreate (mkdir -p,
//    0755), FileOrCreate (an empty 0644 file; the parent must exist, as in
//    Kubernetes), Directory, File, Socket, CharDevice, BlockDevice (must
//    exist and be that), "" (no check).
// Errors name the volume and the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "oci/layout.h"
#include "pod/model.h"

namespace podvisor::oci {

Status PrepareHostPath(const pod::Volume& volume);

// `default_memory_bytes`: the tmpfs size for a Memory emptyDir without
// sizeLimit (nullopt: kernel default).
Status PrepareEmptyDir(const pod::Volume& volume, const std::filesystem::path& volumes_dir,
                       std::optional<int64_t> default_memory_bytes);

// Every volume of the pod, in order; stops at the first error. `pod_ips`:
// the pod network's addresses for the downward API's status.podIP(s)
// (empty: the host's under hostNetwork, else none).
Status PreparePodVolumes(const pod::Pod& pod, const std::filesystem::path& volumes_dir,
                         const std::vector<std::string>& pod_ips = {});

// Creates the subPath directories `container` mounts that do not exist yet
// (as the kubelet does), refusing any that resolves outside its volume
// through a symlink.
Status PrepareSubPaths(const pod::Pod& pod, const pod::Container& container,
                       const std::filesystem::path& volumes_dir,
                       const std::vector<std::string>& pod_ips = {});

// The pod's own /dev/shm: a 64 MiB tmpfs at LAYOUT/shm (idempotent).
Status MountPodShm(const PodLayout& layout);

// Unmounts everything podvisor mounted under the pod directory (overlays,
// tmpfs volumes, shm; MNT_DETACH as the last resort) and removes the
// directories of layout.h below it: containers/, volumes/, etc/, shm/ and
// ns/ (its pinned namespaces are unmounted with the rest). Refuses to
// delete anything while a mount is left below it. Idempotent. The pod
// directory itself (control socket, events, runtime root) belongs to the
// supervisor.
Status CleanupPod(const PodLayout& layout);

}  // namespace podvisor::oci
