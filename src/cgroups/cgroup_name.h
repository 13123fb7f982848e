// The name of a pod's cgroup under --cgroup-parent (docs/SEMANTICS.md
// S14.31): unique on the host, whatever state directory the pod is in.
//
// It is the pod's name when no other state directory's pod of that name
// holds it, which is the common case and what `systemd-cgls` shows best;
// otherwise "<pod>.<8 hex digits of the state directory's path>" (a dot is
// in no pod name, so that never names another pod's cgroup). The name is a
// HostClaim ("cgroups" kind), kept until the pod's clean end, and is
// recorded in the pod's directory so that a run after a SIGKILLed
// supervisor (or the shim's cleanup) finds the cgroup it must clean even
// when the other name was free by then.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/host_claim.h"
#include "common/result.h"

namespace podvisor::cgroups {

struct ClaimedCgroupName {
  std::string name;  // the last component: "web" or "web.1f2e3d4c"
  HostClaim claim;
};

// The second choice's suffix: 8 hex digits of FNV-1a over `state_root`.
std::string StateDirTag(const std::filesystem::path& state_root);

// Tries the recorded name (a previous run's), the pod's name, then the
// state directory's; the first `owner` can take.
Result<ClaimedCgroupName> ClaimPodCgroupName(const std::filesystem::path& claims_root,
                                             std::string_view parent, const ClaimOwner& owner,
                                             const std::optional<std::string>& recorded);

// DIR/<pod>/cgroup-name: written once the name is claimed, removed at the
// clean end.
inline constexpr const char* kCgroupNameFile = "cgroup-name";
std::optional<std::string> ReadRecordedCgroupName(const std::filesystem::path& pod_dir);
Status RecordCgroupName(const std::filesystem::path& pod_dir, const std::string& name);

}  // namespace podvisor::cgroups
