#include "cgroups/cleanup.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace podvisor::cgroups {

std::vector<std::filesystem::path> CgroupMounts() {
  // mountinfo: id parent major:minor root mountpoint options ... - fstype source superopts
  std::vector<std::filesystem::path> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, mountpoint, field;
    fields >> id >> parent >> dev >> root >> mountpoint;
    while (fields >> field && field != "-") {
    }
    std::string fstype;
    fields >> fstype;
    if (fstype == "cgroup" || fstype == "cgroup2") mounts.emplace_back(mountpoint);
  }
  return mounts;
}

int RemoveEmptyCgroupDirs(const std::string& relative) {
  std::filesystem::path rel = std::filesystem::path(relative).relative_path().lexically_normal();
  if (rel.empty() || rel.string().find("..") != std::string::npos) return 0;
  int removed = 0;
  for (const auto& mount : CgroupMounts()) {
    for (std::filesystem::path p = rel; !p.empty() && p != "."; p = p.parent_path()) {
      if (::rmdir((mount / p).c_str()) != 0) break;  // ENOENT, ENOTEMPTY, EBUSY
      ++removed;
    }
  }
  return removed;
}

}  // namespace podvisor::cgroups
