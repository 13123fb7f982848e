// Merging overlayfs lower directories into one tree (layer_merge.h).
// Every layer entry is reached through the descriptor of its directory
// with O_NOFOLLOW or AT_SYMLINK_NOFOLLOW: a layer's symlink is copied as a
// symlink, never followed, and the target tree is only ever changed
// through descriptors of directories made by this merge.
#include "image/layer_merge.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <vector>

#include "common/fd.h"
#include "common/file_io.h"
#include "common/mounts.h"
#include "image/layer_store.h"
#include "image/layer_unpack.h"
#include "image/store_paths.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

Result<std::vector<std::string>> ListDir(int dir_fd) {
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return Error::FromErrno("dup");
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    ::close(dup);
    return Error::FromErrno("fdopendir");
  }
  ::rewinddir(dir);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

// rm -r of `name` in `dir_fd`, never through a symlink.
Status RemoveAt(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Ok() : Error::FromErrno("stat " + name);
  }
  if (S_ISDIR(st.st_mode)) {
    Fd dir(::openat(dir_fd, name.c_str(), kDirFlags));
    if (!dir) return Error::FromErrno("opening " + name);
    auto children = ListDir(dir.get());
    if (!children) return children.take_error();
    for (const auto& child : *children) {
      if (auto s = RemoveAt(dir.get(), child); !s) return s;
    }
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0)
      return Error::FromErrno("rmdir " + name);
    return Ok();
  }
  if (::unlinkat(dir_fd, name.c_str(), 0) != 0) return Error::FromErrno("unlink " + name);
  return Ok();
}

void CopyXattrs(int src_fd, int dst_fd) {
  std::vector<char> names(64 * 1024);
  ssize_t n = ::flistxattr(src_fd, names.data(), names.size());
  if (n <= 0) return;
  std::vector<char> value(64 * 1024);
  for (const char* name = names.data(); name < names.data() + n; name += strlen(name) + 1) {
    if (IsOverlayXattr(name)) continue;  // whiteouts and opacity are applied, not copied
    ssize_t v = ::fgetxattr(src_fd, name, value.data(), value.size());
    if (v >= 0) (void)::fsetxattr(dst_fd, name, value.data(), static_cast<std::size_t>(v), 0);
  }
}

// Owner, mode, xattrs and times of `st` on the open `dst_fd`; the chown
// first, since it clears setuid and setgid.
void SetMetadata(int src_fd, int dst_fd, const struct stat& st) {
  (void)::fchown(dst_fd, st.st_uid, st.st_gid);
  (void)::fchmod(dst_fd, st.st_mode & 07777);
  CopyXattrs(src_fd, dst_fd);
  timespec times[2] = {st.st_atim, st.st_mtim};
  (void)::futimens(dst_fd, times);
}

class Merger {
 public:
  explicit Merger(bool link_files) : link_files_(link_files) {}

  Status Dir(int src, int dst, bool is_root) {
    // overlayfs ignores an opaque layer root; so does the merge.
    if (!is_root && IsOverlayOpaqueDir(src)) {
      auto children = ListDir(dst);
      if (!children) return children.take_error();
      for (const auto& child : *children) {
        if (auto s = RemoveAt(dst, child); !s) return s;
      }
    }
    auto names = ListDir(src);
    if (!names) return names.take_error();
    for (const auto& name : *names) {
      if (auto s = Entry(src, dst, name); !s) return s.take_error().Wrap(name);
    }
    return Ok();
  }

 private:
  Status Entry(int src, int dst, const std::string& name) {
    struct stat st {};
    if (::fstatat(src, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return Error::FromErrno("stat");
    if (IsOverlayWhiteout(st)) return RemoveAt(dst, name);
    struct stat there {};
    bool exists = ::fstatat(dst, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0;
    if (S_ISDIR(st.st_mode)) {
      // A directory over a directory merges; over anything else replaces.
      if (exists && !S_ISDIR(there.st_mode)) {
        if (auto s = RemoveAt(dst, name); !s) return s;
        exists = false;
      }
      if (!exists && ::mkdirat(dst, name.c_str(), 0700) != 0) return Error::FromErrno("mkdir");
      Fd from(::openat(src, name.c_str(), kDirFlags));
      Fd to(::openat(dst, name.c_str(), kDirFlags));
      if (!from || !to) return Error::FromErrno("opening the directory");
      if (auto s = Dir(from.get(), to.get(), false); !s) return s;
      SetMetadata(from.get(), to.get(), st);
      return Ok();
    }
    if (exists) {
      if (auto s = RemoveAt(dst, name); !s) return s;
    }
    // A read-only stack shares the layers' inodes; a writable root must
    // not, or a container's write would change the layer.
    if (link_files_ && ::linkat(src, name.c_str(), dst, name.c_str(), 0) == 0) return Ok();
    if (S_ISREG(st.st_mode)) return CopyFile(src, dst, name, st);
    if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
      ssize_t n = ::readlinkat(src, name.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size())
        return Error::FromErrno("readlink");
      target[static_cast<std::size_t>(n)] = '\0';
      if (::symlinkat(target.data(), dst, name.c_str()) != 0) return Error::FromErrno("symlink");
    } else if (::mknodat(dst, name.c_str(), st.st_mode, st.st_rdev) != 0) {
      if (errno == EPERM) return Ok();  // a device without CAP_MKNOD: left out, as the unpack does
      return Error::FromErrno("mknod");
    }
    (void)::fchownat(dst, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
    if (!S_ISLNK(st.st_mode)) (void)::fchmodat(dst, name.c_str(), st.st_mode & 07777, 0);
    timespec times[2] = {st.st_atim, st.st_mtim};
    (void)::utimensat(dst, name.c_str(), times, AT_SYMLINK_NOFOLLOW);
    return Ok();
  }

  static Status CopyFile(int src, int dst, const std::string& name, const struct stat& st) {
    Fd in(::openat(src, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!in) return Error::FromErrno("open");
    Fd out(::openat(dst, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out) return Error::FromErrno("create");
    std::vector<char> buf(1 << 16);
    for (;;) {
      ssize_t n = ::read(in.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::FromErrno("read");
      if (n == 0) break;
      for (ssize_t done = 0; done < n;) {
        ssize_t w = ::write(out.get(), buf.data() + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return Error::FromErrno("write");
        done += w;
      }
    }
    SetMetadata(in.get(), out.get(), st);
    return Ok();
  }

  bool link_files_;
};

struct StackOfStore {
  fs::path root;  // the store
  std::vector<Digest> bottom_first;
};

Result<StackOfStore> ParseStack(const std::vector<fs::path>& lower_dirs) {
  StackOfStore stack;
  for (auto it = lower_dirs.rbegin(); it != lower_dirs.rend(); ++it) {
    const fs::path dir = it->lexically_normal();
    const fs::path layers = dir.parent_path().parent_path();
    auto digest =
        ParseDigest(dir.parent_path().filename().string() + ":" + dir.filename().string());
    if (!digest || layers.filename() != store::kLayers ||
        (!stack.root.empty() && stack.root != layers.parent_path())) {
      return Error(it->string() + " is not a layer of an image store", EINVAL);
    }
    stack.root = layers.parent_path();
    stack.bottom_first.push_back(std::move(*digest));
  }
  if (stack.bottom_first.empty()) return Error("no layers to merge", EINVAL);
  return stack;
}

std::string_view KindDir(MergedTree kind) {
  return kind == MergedTree::kLowerStack ? store::kFlat : store::kTrees;
}

}  // namespace

Digest ChainId(const std::vector<Digest>& diff_ids) {
  if (diff_ids.empty()) return {};
  Digest chain = diff_ids.front();
  for (std::size_t i = 1; i < diff_ids.size(); ++i) {
    chain = {"sha256", HashHex("sha256", chain.ToString() + " " + diff_ids[i].ToString())};
  }
  return chain;
}

Result<fs::path> MergedTreePath(const std::vector<fs::path>& lower_dirs, MergedTree kind) {
  auto stack = ParseStack(lower_dirs);
  if (!stack) return stack.take_error();
  return store::EntryPath(stack->root, KindDir(kind), ChainId(stack->bottom_first));
}

Status MergeLowerDirs(const std::vector<fs::path>& lower_dirs, const fs::path& target,
                      bool link_files) {
  Fd to(::open(target.c_str(), kDirFlags));
  if (!to) return Error::FromErrno("opening " + target.string());
  Merger merger(link_files);
  for (auto it = lower_dirs.rbegin(); it != lower_dirs.rend(); ++it) {
    Fd from(::open(it->c_str(), kDirFlags));
    if (!from) return Error::FromErrno("opening " + it->string());
    if (auto s = merger.Dir(from.get(), to.get(), /*is_root=*/true); !s) {
      return s.take_error().Wrap("merging " + it->string());
    }
    struct stat st {};
    if (::fstat(from.get(), &st) == 0) SetMetadata(from.get(), to.get(), st);
  }
  return Ok();
}

Result<fs::path> EnsureMergedTree(const std::vector<fs::path>& lower_dirs, MergedTree kind) {
  auto stack = ParseStack(lower_dirs);
  if (!stack) return stack.take_error();
  const Digest chain = ChainId(stack->bottom_first);
  const fs::path path = store::EntryPath(stack->root, KindDir(kind), chain);
  const std::string what = "merging the layers of chain " + chain.ToString();
  auto layer_store = LayerStore::Open(stack->root);
  if (!layer_store) return layer_store.take_error().Wrap(what);
  auto hold = layer_store->HoldForAdding();
  if (!hold) return hold.take_error().Wrap(what);
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(path, ec))) return path;
  if (auto s = MakeDirs(path.parent_path(), 0700); !s) return s.take_error().Wrap(what);
  auto lock = LockNamedFile(store::EntryPath(stack->root, KindDir(kind), chain, ".lock"), LOCK_EX,
                            /*create=*/true);
  if (!lock) return lock.take_error().Wrap(what);
  if (fs::is_directory(fs::symlink_status(path, ec))) return path;
  const fs::path scratch = store::ScratchPath(stack->root, KindDir(kind), chain);
  fs::remove_all(scratch, ec);  // a crashed merge's; we hold the lock
  if (::mkdir(scratch.c_str(), 0755) != 0) return Error::FromErrno(what + ": " + scratch.string());
  Status s = MergeLowerDirs(lower_dirs, scratch, kind == MergedTree::kLowerStack);
  if (s) {
    if (Fd dir(::open(scratch.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dir) {
      ::syncfs(dir.get());
    }
    if (::rename(scratch.c_str(), path.c_str()) != 0) {
      s = Error::FromErrno("publishing " + path.string());
    }
  }
  if (!s) {
    fs::remove_all(scratch, ec);
    return s.take_error().Wrap(what);
  }
  return path;
}

}  // namespace podvisor::image
