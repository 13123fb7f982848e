#include "hostfs/rootfs.h"

#include <linux/magic.h>
#include <sys/mount.h>

#include <system_error>

#include "common/mounts.h"

namespace podvisor::hostfs {
namespace {

// overlayfs splits its mount data at ',' and lowerdir at ':'; a backslash
// makes the next character literal (image directories like
// "registry.example/app:1.2" contain a colon).
std::string EscapeOverlayPath(const std::filesystem::path& p) {
  std::string out;
  for (char c : p.string()) {
    if (c == ',' || c == ':' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string OverlayMountData(const WritableRootPaths& paths) {
  return "lowerdir=" + EscapeOverlayPath(paths.lower) +
         ",upperdir=" + EscapeOverlayPath(paths.upper) +
         ",workdir=" + EscapeOverlayPath(paths.work);
}

Status MountWritableRoot(const WritableRootPaths& paths) {
  if (IsMountPoint(paths.merged)) {
    if (FilesystemType(paths.merged) == OVERLAYFS_SUPER_MAGIC) return Ok();
    return Error(paths.merged.string() + " is already a mount point of another kind", EBUSY);
  }
  for (const auto* dir : {&paths.upper, &paths.work, &paths.merged}) {
    if (Status s = MakeDirs(*dir, 0755); !s) return s.error().Wrap("preparing the writable root");
  }
  std::string data = OverlayMountData(paths);
  if (::mount("overlay", paths.merged.c_str(), "overlay", MS_NODEV, data.c_str()) != 0) {
    int err = errno;
    std::string hint;
    if (err == EINVAL && FilesystemType(paths.upper) == OVERLAYFS_SUPER_MAGIC) {
      hint =
          " (the state directory is itself on overlayfs, which cannot be an upper layer; use "
          "--state-dir on tmpfs or a disk filesystem)";
    }
    return Error::FromErrno("mounting the overlay root " + paths.merged.string() + " over " +
                                paths.lower.string() + hint,
                            err);
  }
  return Ok();
}

Status RemoveWritableRoot(const WritableRootPaths& paths) {
  if (Status s = Unmount(paths.merged); !s) return s;
  std::error_code ec;
  for (const auto* dir : {&paths.merged, &paths.work, &paths.upper}) {
    // Never recurse into something still mounted: that would delete the
    // content of whatever is mounted there.
    if (IsMountPoint(*dir))
      return Error("not removing " + dir->string() + ": still mounted", EBUSY);
    std::filesystem::remove_all(*dir, ec);
    if (ec) return Error("removing " + dir->string() + ": " + ec.message(), ec.value());
  }
  return Ok();
}

}  // namespace podvisor::hostfs
