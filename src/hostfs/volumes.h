// The pod's volumes on the host, prepared before any container starts and
// removed when the pod ends (docs/INTERFACE.md: emptyDir and hostPath).
//
//  - emptyDir: LAYOUT/volumes/<name>/, mode 0777 as the kubelet makes it so
//    that non-root containers can write. medium Memory: a tmpfs mounted on
//    that directory, bounded as in S14.4 (MemoryEmptyDirBytes), so all
//    containers of the pod share it.
//  - hostPath: the `type` check of Kubernetes: DirectoryOrCreate (mkdir -p,
//    0755), FileOrCreate (an empty 0644 file; the parent must exist, as in
//    Kubernetes), Directory, File, Socket, CharDevice, BlockDevice (must
//    exist and be that), "" (no check).
// Errors name the volume and the path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "hostfs/layout.h"
#include "pod/model.h"

namespace podvisor::hostfs {

Status PrepareHostPath(const pod::Volume& volume);

// S14.4: the size of a Memory emptyDir's tmpfs: the smallest of the
// node's memory (`node_memory_bytes`, 0: this host's RAM), the pod's
// memory limit (when every container has one) and the volume's sizeLimit.
int64_t MemoryEmptyDirBytes(const pod::EmptyDirVolumeSource& empty_dir,
                            std::optional<int64_t> pod_memory_limit, int64_t node_memory_bytes);

Status PrepareEmptyDir(const pod::Volume& volume, const std::filesystem::path& volumes_dir,
                       std::optional<int64_t> pod_memory_limit, int64_t node_memory_bytes = 0);

// Every volume of the pod, in order; stops at the first error. `pod_ips`:
// the pod network's addresses for the downward API's status.podIP(s)
// (empty: the host's under hostNetwork, else none). `node_memory_bytes`:
// what bounds a Memory emptyDir (S14.4); 0: this host's RAM.
Status PreparePodVolumes(const pod::Pod& pod, const std::filesystem::path& volumes_dir,
                         const std::vector<std::string>& pod_ips = {},
                         int64_t node_memory_bytes = 0);

// Where the runtime finds each subPath: volumeMounts index -> host path.
using SubPathSources = std::map<std::size_t, std::filesystem::path>;

// S14.1-S14.3: every subPath (and subPathExpr) of `container`, resolved
// beneath its volume (beneath.h: no symlink leads out of it), its missing
// directories made beneath it (as the kubelet does), and the resolved
// file or directory bound (MS_BIND | MS_REC, from its descriptor) at
// `mount_dir`/<index>. Give the runtime those paths, never the volume's
// path joined with the subPath: that one can be swapped for a symlink by
// whoever shares the volume between our check and the runtime's mount.
// On error nothing stays mounted. Needs CAP_SYS_ADMIN.
// S20.24: `idmapped` (volume name -> its idmapped mount, idmapped_pod.h)
// for a hostUsers: false pod: the subPath is resolved and bound beneath
// that view, so the bind is idmapped too; its missing directories are
// made beneath the volume itself (host root cannot create through an
// idmap that does not map it).
Result<SubPathSources> BindSubPaths(
    const pod::Pod& pod, const pod::Container& container, const std::filesystem::path& volumes_dir,
    const std::filesystem::path& mount_dir, const std::vector<std::string>& pod_ips = {},
    const std::map<std::string, std::filesystem::path>& idmapped = {});

// Where an instance's subPath binds live: <instance_dir>/subpaths.
std::filesystem::path SubPathMountDir(const std::filesystem::path& instance_dir);

// Unmounts the binds of BindSubPaths and removes `mount_dir` (only once
// nothing is mounted below it). Idempotent. Call it after the runtime
// deleted the container.
Status UnbindSubPaths(const std::filesystem::path& mount_dir);

// The pod's own /dev/shm: a 64 MiB tmpfs at LAYOUT/shm (idempotent).
Status MountPodShm(const PodLayout& layout);

// Unmounts everything podvisor mounted under the pod directory (overlays,
// tmpfs volumes, shm, the idmapped mounts of S20.22; MNT_DETACH as the
// last resort) and removes the directories of layout.h below it:
// containers/, volumes/, etc/, shm/, idmapped/ and ns/ (its pinned
// namespaces are unmounted with the rest). Refuses to
// delete anything while a mount is left below it. Idempotent. The pod
// directory itself (control socket, events, runtime root) belongs to the
// supervisor.
Status CleanupPod(const PodLayout& layout);

}  // namespace podvisor::hostfs
