#include "common/mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace podvisor {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto octal = [&](std::size_t k) { return s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && i + 3 < s.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(
          static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool IsUnder(const std::filesystem::path& p, const std::filesystem::path& dir) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

Result<std::vector<std::string>> ListMountPoints() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return Error::FromErrno("reading /proc/self/mountinfo");
  std::vector<std::string> points;
  std::string line;
  while (std::getline(in, line)) {
    // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw"
    std::istringstream fields(line);
    std::string id, parent, devno, root, mount_point;
    if (fields >> id >> parent >> devno >> root >> mount_point)
      points.push_back(Unescape(mount_point));
  }
  return points;
}

Result<std::vector<std::string>> MountPointsUnder(const std::filesystem::path& dir) {
  auto all = ListMountPoints();
  if (!all) return all.take_error();
  std::filesystem::path base = dir.lexically_normal();
  std::vector<std::string> under;
  for (const auto& p : *all) {
    if (IsUnder(std::filesystem::path(p).lexically_normal(), base) &&
        std::find(under.begin(), under.end(), p) == under.end()) {
      under.push_back(p);
    }
  }
  // Deepest first; for stacked mounts at one point mountinfo lists the
  // lower first, and Unmount() is repeated until the point is free.
  std::stable_sort(under.begin(), under.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  return under;
}

bool IsMountPoint(const std::filesystem::path& path) {
  struct statx stx {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0)
    return false;
  if (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) {
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  }
  // Kernels before 5.8: a different device than the parent's.
  struct stat self {
  }, parent{};
  if (::lstat(path.c_str(), &self) != 0) return false;
  if (::lstat((path / "..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev || self.st_ino == parent.st_ino;
}

long FilesystemType(const std::filesystem::path& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return 0;
  return static_cast<long>(fs.f_type);
}

Status Unmount(const std::filesystem::path& path) {
  // Stacked mounts come off one per call; the bound keeps a misbehaving
  // kernel answer from looping forever.
  for (int round = 0; round < 16 && IsMountPoint(path); ++round) {
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW) == 0) continue;
    if (errno == EINVAL || errno == ENOENT) return Ok();  // raced with another unmount
    if (errno != EBUSY) return Error::FromErrno("unmounting " + path.string());
    if (::umount2(path.c_str(), UMOUNT_NOFOLLOW | MNT_DETACH) != 0 && errno != EINVAL) {
      return Error::FromErrno("detaching " + path.string());
    }
  }
  if (IsMountPoint(path)) return Error("unmounting " + path.string() + ": still mounted", EBUSY);
  return Ok();
}

Status UnmountAllUnder(const std::filesystem::path& dir) {
  auto points = MountPointsUnder(dir);
  if (!points) return points.take_error();
  for (const auto& p : *points) {
    if (Status s = Unmount(p); !s) return s;
  }
  auto left = MountPointsUnder(dir);
  if (!left) return left.take_error();
  if (!left->empty())
    return Error("still mounted under " + dir.string() + ": " + left->front(), EBUSY);
  return Ok();
}

Status MakeDirs(const std::filesystem::path& dir, unsigned mode) {
  std::filesystem::path current;
  for (const auto& part : dir) {
    current /= part;
    if (::mkdir(current.c_str(), mode) == 0) {
      if (::chmod(current.c_str(), mode) != 0) return Error::FromErrno("chmod " + current.string());
      continue;
    }
    if (errno != EEXIST) return Error::FromErrno("creating directory " + current.string());
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Error::FromErrno("creating directory " + dir.string());
  if (!S_ISDIR(st.st_mode))
    return Error("creating directory " + dir.string() + ": not a directory", ENOTDIR);
  return Ok();
}

}  // namespace podvisor
