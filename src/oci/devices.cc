#include "oci/devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <system_error>

namespace podvisor::oci {

Result<std::vector<HostDevice>> ScanHostDevices(const std::filesystem::path& dev_dir) {
  std::vector<HostDevice> devices;
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(
      dev_dir, std::filesystem::directory_options::skip_permission_denied, ec);
  if (ec) return Error("listing " + dev_dir.string() + ": " + ec.message(), ec.value());
  for (; it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Error("listing " + dev_dir.string() + ": " + ec.message(), ec.value());
    const std::filesystem::path& p = it->path();
    std::string name = p.filename().string();
    if (it.depth() == 0 && (name == "pts" || name == "shm" || name == "mqueue" || name == "fd" ||
                            name == "console" || name == ".lxc" || name == ".udev")) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;  // vanished meanwhile
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) continue;
    devices.push_back({p.string(), S_ISCHR(st.st_mode) ? 'c' : 'b',
                       static_cast<int64_t>(major(st.st_rdev)),
                       static_cast<int64_t>(minor(st.st_rdev)),
                       static_cast<uint32_t>(st.st_mode & 07777), st.st_uid, st.st_gid});
  }
  std::sort(devices.begin(), devices.end(),
            [](const HostDevice& a, const HostDevice& b) { return a.path < b.path; });
  return devices;
}

}  // namespace podvisor::oci
