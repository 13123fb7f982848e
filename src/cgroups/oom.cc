#include "cgroups/oom.h"

#include <algorithm>
#include <optional>

#include "common/file_io.h"

namespace podvisor::cgroups {
namespace {

// The oom_kill counter of a flat-keyed file, or nullopt when the file is
// missing, unreadable or has no such counter.
std::optional<uint64_t> OomKillOf(const std::filesystem::path& file) {
  auto events = ReadFlatKeyed(file);
  if (!events) return std::nullopt;
  return events->FindUnsigned("oom_kill");
}

}  // namespace

uint64_t OomKillCount(const std::filesystem::path& cgroup_dir) {
  if (auto v2 = OomKillOf(cgroup_dir / "memory.events")) return *v2;
  return OomKillOf(cgroup_dir / "memory.oom_control").value_or(0);
}

uint64_t ContainerOomKills(const std::string& cgroups_path,
                           const std::vector<std::filesystem::path>& mounts) {
  std::filesystem::path rel =
      std::filesystem::path(cgroups_path).relative_path().lexically_normal();
  if (rel.empty() || cgroups_path.find("..") != std::string::npos) return 0;
  uint64_t kills = 0;
  for (const auto& mount : mounts) kills = std::max(kills, OomKillCount(mount / rel));
  return kills;
}

}  // namespace podvisor::cgroups
