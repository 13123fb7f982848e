#include "cgroups/cgroup_name.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/file_io.h"

namespace podvisor::cgroups {
namespace {

// A claim key is one file name: the parent's '/' and '%' are escaped.
std::string ClaimKey(std::string_view parent, std::string_view name) {
  std::string key;
  for (char c : std::string(std::filesystem::path(parent).relative_path().lexically_normal()) +
                    "/" + std::string(name)) {
    if (c == '%') {
      key += "%25";
    } else if (c == '/') {
      key += "%2F";
    } else {
      key += c;
    }
  }
  return key;
}

// A recorded name is trusted only as one this code could have chosen.
bool PlausibleName(std::string_view name) {
  if (name.empty() || name.size() > 80) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return name != "." && name != "..";
}

}  // namespace

std::string StateDirTag(const std::filesystem::path& state_root) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : state_root.string()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>((h ^ (h >> 32)) & 0xffffffffU));
  return buf;
}

Result<ClaimedCgroupName> ClaimPodCgroupName(const std::filesystem::path& claims_root,
                                             std::string_view parent, const ClaimOwner& owner,
                                             const std::optional<std::string>& recorded) {
  std::vector<std::string> candidates;
  if (recorded && PlausibleName(*recorded)) candidates.push_back(*recorded);
  for (std::string name : {owner.pod, owner.pod + "." + StateDirTag(owner.state_root)}) {
    if (candidates.empty() || candidates.front() != name) candidates.push_back(std::move(name));
  }
  std::string refusals;
  for (const std::string& name : candidates) {
    auto claim = HostClaim::Take(claims_root, "cgroups", ClaimKey(parent, name), owner);
    if (claim) return ClaimedCgroupName{name, std::move(*claim)};
    if (claim.error().code() != EBUSY) return claim.take_error().Wrap("claiming a pod cgroup name");
    refusals += (refusals.empty() ? "" : "; ") + claim.error().message();
  }
  return Error(
      "no cgroup name for pod " + owner.pod + " under " + std::string(parent) + ": " + refusals,
      EBUSY);
}

std::optional<std::string> ReadRecordedCgroupName(const std::filesystem::path& pod_dir) {
  auto text = ReadFileBounded(pod_dir / kCgroupNameFile, 256);
  if (!text) return std::nullopt;
  std::string name = *text;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  if (!PlausibleName(name)) return std::nullopt;
  return name;
}

Status RecordCgroupName(const std::filesystem::path& pod_dir, const std::string& name) {
  return WriteFileAtomic(pod_dir / kCgroupNameFile, name + "\n", 0644);
}

}  // namespace podvisor::cgroups
