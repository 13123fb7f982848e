#include "cgroups/oom.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <string_view>

namespace podvisor::cgroups {
namespace {

// "key value" lines; the value of `key`, or nullopt.
std::optional<uint64_t> FlatKeyed(const std::filesystem::path& file, std::string_view key) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace

uint64_t OomKillCount(const std::filesystem::path& cgroup_dir) {
  if (auto v2 = FlatKeyed(cgroup_dir / "memory.events", "oom_kill")) return *v2;
  return FlatKeyed(cgroup_dir / "memory.oom_control", "oom_kill").value_or(0);
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
