#include "common/beneath.h"

#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <string>
#include <vector>

namespace podvisor {
namespace {

// What the kernel allows (MAXSYMLINKS): a loop of symlinks ends as ELOOP.
constexpr int kMaxSymlinks = 40;
// openat2 answers EAGAIN when a rename raced its ".." resolution; it is
// safe to try again, and a bound keeps a renaming attacker from holding us.
constexpr int kRenameRetries = 16;

std::atomic<bool> kernel_lacks_openat2{false};

std::string Quoted(std::string_view relative) {
  return "\"" + std::string(relative) + "\"";
}

Error Outside(std::string_view relative) {
  return Error(Quoted(relative) + ": resolves outside its root", EXDEV);
}

Error Failed(std::string_view relative, int err) {
  if (err == EXDEV) return Outside(relative);
  return Error::FromErrno("opening " + Quoted(relative) + " beneath its root", err);
}

// "a//b/./c/" -> {"a", "b", "c"}; ".." is kept, it is resolved, not dropped.
std::deque<std::string> Components(std::string_view path) {
  std::deque<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    start = end + 1;
  }
  return parts;
}

bool EndsAsDirectory(std::string_view path) {
  if (path == "." || path == "..") return true;
  return path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
}

Result<Fd> KernelOpen(int root_fd, std::string_view relative, int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  // openat2 refuses a mode without O_CREAT or O_TMPFILE.
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  std::string path = relative.empty() ? std::string(".") : std::string(relative);
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
    if (fd >= 0) return Fd(static_cast<int>(fd));
    if (errno == EAGAIN && attempt < kRenameRetries) continue;
    if (errno == EINTR) continue;
    return Failed(relative, errno);
  }
}

// The last component, once the walk has reached its directory: opened with
// O_NOFOLLOW relative to that directory, so what is opened is an entry of
// it whatever was swapped in meanwhile (a symlink put there now is ELOOP).
Result<Fd> OpenLast(const Fd& dir, const std::string& name, Fd entry, int flags, mode_t mode,
                    std::string_view relative) {
  bool path_only = (flags & O_PATH) != 0;
  if (path_only && entry) {
    struct stat st {};
    if (::fstat(entry.get(), &st) != 0) return Failed(relative, errno);
    if ((flags & O_DIRECTORY) != 0 && !S_ISDIR(st.st_mode)) return Failed(relative, ENOTDIR);
    return entry;
  }
  Fd fd(::openat(dir.get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return Failed(relative, errno);
  return fd;
}

Result<std::string> ReadLink(const Fd& link, std::string_view relative) {
  // Magic links live in procfs; their text is not a path to follow.
  struct statfs fs {};
  if (::fstatfs(link.get(), &fs) != 0) return Failed(relative, errno);
  if (fs.f_type == PROC_SUPER_MAGIC) return Failed(relative, ELOOP);
  char target[4096];
  ssize_t n = ::readlinkat(link.get(), "", target, sizeof target);
  if (n < 0) return Failed(relative, errno);
  if (n == 0 || static_cast<std::size_t>(n) == sizeof target) return Failed(relative, ENOENT);
  return std::string(target, static_cast<std::size_t>(n));
}

// What openat2(RESOLVE_BENEATH) does, one component at a time: each step
// is an openat(O_PATH | O_NOFOLLOW) in the directory reached so far; ".."
// pops our own stack of directories (never the kernel's ".."), so a
// directory moved away meanwhile cannot lead out; a symlink's text is
// spliced into the components still to walk.
Result<Fd> WalkOpen(int root_fd, std::string_view relative, int flags, mode_t mode) {
  if (!relative.empty() && relative[0] == '/') return Outside(relative);
  std::vector<Fd> dirs;
  dirs.emplace_back(::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirs.back()) return Failed(relative, errno);
  std::deque<std::string> pending = Components(relative);
  // "a/", "a/." name a directory: a final symlink is followed and must
  // lead to one, as the kernel resolves them.
  bool must_be_dir = EndsAsDirectory(relative);
  // open(2) does not follow a final symlink with O_NOFOLLOW, nor with
  // O_CREAT | O_EXCL (EEXIST instead).
  bool follow_last = must_be_dir || ((flags & O_NOFOLLOW) == 0 &&
                                     !((flags & O_CREAT) != 0 && (flags & O_EXCL) != 0));
  int links = 0;
  while (!pending.empty()) {
    std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == "..") {
      if (dirs.size() == 1) return Outside(relative);
      dirs.pop_back();
      continue;
    }
    bool last = pending.empty();
    Fd entry(::openat(dirs.back().get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!entry) {
      if (last && errno == ENOENT && (flags & O_CREAT) != 0)
        return OpenLast(dirs.back(), name, Fd(), flags, mode, relative);
      return Failed(relative, errno);
    }
    struct stat st {};
    if (::fstat(entry.get(), &st) != 0) return Failed(relative, errno);
    if (S_ISLNK(st.st_mode) && (!last || follow_last)) {
      if (++links > kMaxSymlinks) return Failed(relative, ELOOP);
      auto target = ReadLink(entry, relative);
      if (!target) return target.take_error();
      if ((*target)[0] == '/') return Outside(relative);
      // A last symlink to "dir/" names a directory, as "a/" does.
      if (last && EndsAsDirectory(*target)) must_be_dir = true;
      std::deque<std::string> spliced = Components(*target);
      pending.insert(pending.begin(), spliced.begin(), spliced.end());
      continue;
    }
    if (!S_ISDIR(st.st_mode) && (!last || must_be_dir)) return Failed(relative, ENOTDIR);
    if (last) return OpenLast(dirs.back(), name, std::move(entry), flags, mode, relative);
    dirs.push_back(std::move(entry));
  }
  // The path ended at a directory ("", ".", "a/.."): open it as asked.
  Fd fd(::openat(dirs.back().get(), ".", flags | O_CLOEXEC, mode));
  if (!fd) return Failed(relative, errno);
  return fd;
}

}  // namespace

Result<Fd> OpenBeneath(int root_fd, std::string_view relative, int flags, mode_t mode,
                       BeneathResolver resolver) {
  if (resolver == BeneathResolver::kWalk) return WalkOpen(root_fd, relative, flags, mode);
  if (resolver == BeneathResolver::kAuto && kernel_lacks_openat2.load()) {
    return WalkOpen(root_fd, relative, flags, mode);
  }
  auto fd = KernelOpen(root_fd, relative, flags, mode);
  if (!fd && fd.error().code() == ENOSYS && resolver == BeneathResolver::kAuto) {
    kernel_lacks_openat2.store(true);
    return WalkOpen(root_fd, relative, flags, mode);
  }
  return fd;
}

Result<Fd> MakeDirsBeneath(int root_fd, std::string_view relative, mode_t mode,
                           BeneathResolver resolver) {
  constexpr int kDirFlags = O_PATH | O_DIRECTORY;
  auto current = OpenBeneath(root_fd, ".", kDirFlags, 0, resolver);
  if (!current) return current.take_error();
  std::string prefix;
  for (const std::string& name : Components(relative)) {
    prefix += (prefix.empty() ? "" : "/") + name;
    auto next = OpenBeneath(root_fd, prefix, kDirFlags, 0, resolver);
    if (!next && next.error().code() == ENOENT && name != "..") {
      // `current` is where the prefix's parent resolved, beneath the root;
      // mkdirat makes `name` in it and never follows a symlink there (an
      // entry of any kind, a dangling symlink too, is EEXIST).
      if (::mkdirat(current->get(), name.c_str(), mode) == 0) {
        Fd made(::openat(current->get(), name.c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!made || ::fchmod(made.get(), mode) != 0) return Failed(prefix, errno);
      } else if (errno != EEXIST) {
        return Error::FromErrno("creating directory " + Quoted(prefix) + " beneath its root");
      }
      // Resolved again, beneath the root: whatever is there now (ours, or
      // what a racing writer put there) is used only if it stays inside.
      next = OpenBeneath(root_fd, prefix, kDirFlags, 0, resolver);
    }
    if (!next) return next.take_error();
    current = std::move(next);
  }
  return current;
}

bool IsOutsideRoot(const Error& error) {
  return error.code() == EXDEV;
}

}  // namespace podvisor
