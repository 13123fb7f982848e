// volumeMounts[].mountPropagation, as containerd's CRI plugin gives it to
// the runtime: None is "rprivate", HostToContainer "rslave" (mounts made
// on the host later show up in the container), Bidirectional "rshared"
// (and back). Propagation only happens when the host side of the bind is
// itself on a shared (or, for HostToContainer, slave) mount; containerd
// refuses the container otherwise instead of silently giving it a private
// mount, and so does podvisor, naming the mount to make shared.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace podvisor::oci {

// "rprivate", "rslave" or "rshared" for a mountPropagation value ("" is None).
std::string_view PropagationOption(std::string_view mount_propagation);

// One line of /proc/self/mountinfo, as far as propagation needs it.
struct MountInfoEntry {
  std::string mount_point;  // octal escapes (\040) decoded
  bool shared = false;      // optional field "shared:N"
  bool slave = false;       // optional field "master:N"
};

std::vector<MountInfoEntry> ParseMountInfo(std::string_view text);

// The last-mounted entry whose mount point contains `path` (lexically).
const MountInfoEntry* MountContaining(const std::vector<MountInfoEntry>& mounts,
                                      const std::filesystem::path& path);

// Checks that `source` (a host path, resolved through symlinks as far as
// it exists) lies on a mount that can propagate as `mount_propagation`
// asks; `mountinfo` is the text of /proc/self/mountinfo. `field` names the
// volumeMount in the error.
Status CheckPropagationSource(std::string_view mountinfo, const std::filesystem::path& source,
                              std::string_view mount_propagation, const std::string& field);

}  // namespace podvisor::oci
