// configMap, secret, downwardAPI and projected volumes: their files,
// computed from the pod's config objects and the downward API, written
// once at pod start the way the kubelet's AtomicWriter writes them
// (pkg/volume/util/atomic_writer.go):
//
//   VOLUME/..2026_11_23_23_40_01.123456789/   the files, modes applied
//   VOLUME/..data -> ..2026_11_23_23_40_01.123456789
//   VOLUME/<top-level name> -> ..data/<top-level name>   one per file or dir
//
// so an application that watches ..data, as it would in a cluster, finds
// what it expects. S14.15: a volume that holds a Secret's data (a secret
// volume, a projected volume with a secret source) is a tmpfs of its own,
// mounted before anything is written (its values never touch a disk, as
// the kubelet keeps them), or, where no tmpfs can be mounted (no
// privilege), a directory on a tmpfs the caller provides (a --state-dir
// on $XDG_RUNTIME_DIR, /dev/shm); elsewhere it is refused. With fsGroup, everything is group-owned
// by it and group-readable, directories setgid, as the kubelet's SetVolumeOwnership does for
// read-only volumes. Containers mount these volumes read-only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "pod/env_resolution.h"
#include "pod/model.h"

namespace podvisor::hostfs {

// The kubelet's default file mode for these volumes.
inline constexpr int32_t kDefaultVolumeFileMode = 0644;

struct ProjectedFile {
  std::string path;  // relative, validated (no "..", not absolute)
  std::string content;
  uint32_t mode = kDefaultVolumeFileMode;
  friend bool operator==(const ProjectedFile&, const ProjectedFile&) = default;
};

// True for the four kinds above.
bool IsProjectedKind(const pod::Volume& volume);

// S14.15: true for a secret volume and a projected volume with a secret
// source, the volumes whose files must only ever be on a tmpfs. (Service
// account tokens, which the kubelet also keeps on tmpfs, are not written:
// model.h.)
bool HoldsSecretData(const pod::Volume& volume);

// The files of VOLUME, sorted by path; a later projection source replaces
// an earlier file of the same path. Errors name the volume and the
// missing object or key (validation reports them first; see
// validate_config.cc).
Result<std::vector<ProjectedFile>> ProjectedVolumeFiles(const pod::Pod& pod,
                                                        const pod::Volume& volume,
                                                        const pod::DownwardApiNode& node);

// Writes FILES into DIR (which exists and is empty) in the layout above.
Status WriteAtomically(const std::filesystem::path& dir, const std::vector<ProjectedFile>& files,
                       std::optional<int64_t> fs_group);

// The whole volume: DIR created (a tmpfs on it when it holds secret data),
// files computed and written.
Status PrepareProjectedVolume(const pod::Pod& pod, const pod::Volume& volume,
                              const std::filesystem::path& volumes_dir,
                              const pod::DownwardApiNode& node);

}  // namespace podvisor::hostfs
