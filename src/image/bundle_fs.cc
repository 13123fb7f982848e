#include "image/bundle_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "common/beneath.h"

namespace podvisor::image {
namespace {

std::string KindOf(mode_t mode) {
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// Sorted names of the directory `dir_fd` (which it consumes).
Result<std::vector<std::string>> ListDir(Fd dir_fd, const std::string& rel) {
  DIR* dir = ::fdopendir(dir_fd.get());
  if (dir == nullptr) return Error::FromErrno("listing " + rel);
  dir_fd.Release();  // closedir closes it
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return Error::FromErrno("listing " + rel, err);
  std::sort(names.begin(), names.end());
  return names;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// "<prefix>: <rel>[: <what>]", the form of every error of the walk.
std::string At(const std::string& prefix, const std::string& rel, std::string_view what = {}) {
  std::string out = prefix;
  out.append(": ").append(rel);
  if (!what.empty()) out.append(": ").append(what);
  return out;
}

}  // namespace

Status CheckConfinedTree(const std::filesystem::path& root, std::string_view what,
                         uint64_t max_entries) {
  const std::string prefix(what);
  Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root_fd) return Error::FromErrno(prefix + ": opening " + root.string());
  // Depth first without recursion: each directory is opened again from the
  // root, so a deep tree holds one descriptor at a time, not one per level.
  std::vector<std::string> pending = {""};
  uint64_t seen = 0;
  while (!pending.empty()) {
    std::string dir_rel = std::move(pending.back());
    pending.pop_back();
    // Every component of dir_rel was seen as a directory (fstatat, not
    // following): O_NOFOLLOW keeps its last one from being anything else.
    auto dir_fd = OpenBeneath(root_fd.get(), dir_rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (!dir_fd) return dir_fd.take_error().Wrap(prefix + ": opening");
    int at = dir_fd->get();
    Fd dup(::fcntl(at, F_DUPFD_CLOEXEC, 0));
    if (!dup) return Error::FromErrno(At(prefix, dir_rel));
    auto names = ListDir(std::move(dup), dir_rel.empty() ? "." : dir_rel);
    if (!names) return names.take_error().Wrap(prefix);
    std::vector<std::string> subdirs;
    for (const std::string& name : *names) {
      if (++seen > max_entries) {
        return Error(At(prefix, "more than " + std::to_string(max_entries) + " entries"), EFBIG);
      }
      std::string rel = Join(dir_rel, name);
      struct stat st {};
      if (::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return Error::FromErrno(At(prefix, rel));
      }
      if (S_ISDIR(st.st_mode)) {
        subdirs.push_back(std::move(rel));
        continue;
      }
      if (S_ISREG(st.st_mode)) continue;
      if (!S_ISLNK(st.st_mode)) {
        return Error(At(prefix, rel, KindOf(st.st_mode)), EINVAL);
      }
      // Followed under RESOLVE_BENEATH: EXDEV is exactly "ends outside".
      auto followed = OpenBeneath(root_fd.get(), rel, O_PATH);
      bool leaves = !followed && IsOutsideRoot(followed.error());
      return Error(At(prefix, rel, leaves ? "a symlink leaving the bundle" : "a symlink"), EINVAL);
    }
    // Reversed, so the stack pops them in name order.
    pending.insert(pending.end(), subdirs.rbegin(), subdirs.rend());
  }
  return Ok();
}

}  // namespace podvisor::image
