// hostUsers: false (S20.22-S20.25): the idmapped mounts of one pod, made
// once before any container and bound from by every container instead of
// the volumes and /etc files themselves:
//
//   LAYOUT/idmapped/volumes/<volume>   each volume a container mounts
//                                      (emptyDir, tmpfs or not, hostPath,
//                                      configMap, secret, downwardAPI,
//                                      projected), idmapped
//   LAYOUT/idmapped/etc                the pod's hosts, hostname and
//                                      resolv.conf, idmapped
//
// Through them a file that is root's on disk is root's inside the pod and
// what container root writes is root's on disk; fsGroup and the files'
// modes work as without a user namespace (a 0400 secret is readable by
// container root, its owner). The pod's /dev/shm (mode 1777) and each
// instance's termination-message file (0666) need no idmap: any id may
// write them. Everything here is unmounted by CleanupPod (volumes.h), also
// when recovery cleans up after a killed supervisor.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostfs/layout.h"
#include "pod/model.h"

namespace podvisor::hostfs {

// Volume name -> LAYOUT/idmapped/volumes/<name> for every volume of a
// supported kind that a container or init container mounts: what
// oci::ContainerConfigInput::idmapped_volume_sources holds (no I/O).
std::map<std::string, std::filesystem::path> IdmappedVolumeSources(const pod::Pod& pod,
                                                                   const PodLayout& layout);

// S20.22: the mounts above, each a clone of the volume's (of the hostPath
// with the mounts below it, not idmapped themselves) idmapped to
// `user_namespace` (/proc/<holder>/ns/user, or a pinned bind of it).
// Call it after the volumes and /etc files exist (PreparePodVolumes,
// WritePodEtcFiles) and before the first container. Idempotent: a mount
// already there is kept. On error what was attached stays for CleanupPod.
// S20.23: a volume whose file system cannot be idmapped is an error
// naming the volume, its path and its file system type.
Status IdmapPodMounts(const pod::Pod& pod, const PodLayout& layout,
                      const std::filesystem::path& user_namespace);

// S20.23, for `run`'s host checks of a hostUsers: false pod (validate
// cannot know the host): the hostPath volumes containers mount, the state
// directory and `image_dirs` (the image roots or layer directories) are
// each on a file system that can be idmapped, probed with a scratch user
// namespace; nothing is mounted. The first one that is not is the error.
Status CheckPodIdmappable(const pod::Pod& pod, const PodLayout& layout,
                          const std::vector<std::filesystem::path>& image_dirs = {});

}  // namespace podvisor::hostfs
