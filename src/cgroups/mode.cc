#include "cgroups/mode.h"

#include <linux/magic.h>
#include <sys/statfs.h>

#include <fstream>
#include <sstream>

namespace podvisor::cgroups {
namespace {

int64_t FilesystemMagic(const std::filesystem::path& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return 0;
  return static_cast<int64_t>(fs.f_type);
}

std::vector<std::string> ReadControllers(const std::filesystem::path& v2_mount) {
  std::ifstream in(v2_mount / "cgroup.controllers");
  std::vector<std::string> out;
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

}  // namespace

std::string_view CgroupModeName(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::kUnified:
      return "unified";
    case CgroupMode::kHybrid:
      return "hybrid";
    case CgroupMode::kLegacy:
      return "legacy";
    case CgroupMode::kNone:
      return "none";
  }
  return "none";
}

CgroupMode ModeFromFilesystemMagic(int64_t root_magic, int64_t unified_magic) {
  if (root_magic == CGROUP2_SUPER_MAGIC) return CgroupMode::kUnified;
  if (root_magic == TMPFS_MAGIC) {
    return unified_magic == CGROUP2_SUPER_MAGIC ? CgroupMode::kHybrid : CgroupMode::kLegacy;
  }
  return CgroupMode::kNone;
}

CgroupInfo DetectCgroups(const std::filesystem::path& root) {
  CgroupInfo info;
  int64_t root_magic = FilesystemMagic(root);
  int64_t unified_magic = root_magic == TMPFS_MAGIC ? FilesystemMagic(root / "unified") : 0;
  info.mode = ModeFromFilesystemMagic(root_magic, unified_magic);
  if (info.mode == CgroupMode::kUnified) info.v2_mount = root;
  if (info.mode == CgroupMode::kHybrid) info.v2_mount = root / "unified";
  if (!info.v2_mount.empty()) info.controllers = ReadControllers(info.v2_mount);
  return info;
}

std::string DescribeCgroups(const CgroupInfo& info) {
  std::ostringstream out;
  out << CgroupModeName(info.mode);
  if (!info.v2_mount.empty()) {
    out << " (cgroup2 at " << info.v2_mount.string() << ", controllers:";
    if (info.controllers.empty()) out << " none";
    for (const auto& c : info.controllers) out << ' ' << c;
    out << ')';
  }
  return out.str();
}

std::string CrunUnusableOn(const CgroupInfo& info) {
  switch (info.mode) {
    case CgroupMode::kUnified:
    case CgroupMode::kLegacy:
      return "";
    case CgroupMode::kHybrid:
      return "this host's hybrid cgroups (cgroup v1/v2 hybrid)";
    case CgroupMode::kNone:
      return "a host without a cgroup filesystem";
  }
  return "";
}

}  // namespace podvisor::cgroups
