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
// what it expects. A secret volume is a tmpfs (its values never touch a
// disk). With fsGroup, everything is group-owned by it and group-readable,
// directories setgid, as the kubelet's SetVolumeOwnership does for
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

namespace podvisor::oci {

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

// The whole volume: DIR created (a tmpfs on it for a secret volume),
// files computed and written.
Status PrepareProjectedVolume(const pod::Pod& pod, const pod::Volume& volume,
                              const std::filesystem::path& volumes_dir,
                              const pod::DownwardApiNode& node);

}  // namespace podvisor::oci
