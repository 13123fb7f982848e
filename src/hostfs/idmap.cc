#include "hostfs/idmap.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>  // glibc 2.36: open_tree, mount_setattr, move_mount, struct mount_attr
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <optional>
#include <utility>

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

// The nearest existing path at or above `path` (a hostPath `run` creates).
fs::path NearestExisting(const fs::path& path) {
  fs::path p = path;
  std::error_code ec;
  while (!p.empty() && p != p.root_path() && !fs::exists(p, ec)) p = p.parent_path();
  return p.empty() ? fs::path("/") : p;
}

// Writes a whole string to a /proc file the kernel takes in one write.
Status WriteProcFile(const fs::path& file, const std::string& text) {
  Fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening " + file.string());
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Error::FromErrno("writing \"" + text.substr(0, text.size() - 1) + "\" to " +
                            file.string());
  }
  return Ok();
}

}  // namespace

std::string FilesystemName(long magic) {
  struct Known {
    long magic;
    const char* name;
  };
  static constexpr std::array<Known, 20> kKnown = {{
      {EXT4_SUPER_MAGIC, "ext4"},
      {XFS_SUPER_MAGIC, "xfs"},
      {BTRFS_SUPER_MAGIC, "btrfs"},
      {TMPFS_MAGIC, "tmpfs"},
      {OVERLAYFS_SUPER_MAGIC, "overlay"},
      {PROC_SUPER_MAGIC, "proc"},
      {SYSFS_MAGIC, "sysfs"},
      {CGROUP_SUPER_MAGIC, "cgroup"},
      {CGROUP2_SUPER_MAGIC, "cgroup2"},
      {DEVPTS_SUPER_MAGIC, "devpts"},
      {NFS_SUPER_MAGIC, "nfs"},
      {FUSE_SUPER_MAGIC, "fuse"},
      {V9FS_MAGIC, "9p"},
      {SMB2_SUPER_MAGIC, "smb"},
      {CIFS_SUPER_MAGIC, "cifs"},
      {SQUASHFS_MAGIC, "squashfs"},
      {RAMFS_MAGIC, "ramfs"},
      {DEBUGFS_MAGIC, "debugfs"},
      {SECURITYFS_MAGIC, "securityfs"},
      {F2FS_SUPER_MAGIC, "f2fs"},
  }};
  for (const Known& k : kKnown) {
    if (k.magic == magic) return k.name;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(magic));
  return hex;
}

Result<Fd> OpenUserNamespace(const fs::path& path) {
  Fd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return Error::FromErrno("opening the pod's user namespace " + path.string());
  int type = ::ioctl(ns.get(), NS_GET_NSTYPE);
  if (type != CLONE_NEWUSER) {
    return Error(path.string() + " is not a user namespace", EINVAL);
  }
  return ns;
}

Result<Fd> OpenIdmappedTree(const fs::path& path, int userns_fd, bool recursive) {
  const unsigned recursive_flag = recursive ? AT_RECURSIVE : 0;
  Fd tree(
      ::open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | recursive_flag));
  if (!tree) return Error::FromErrno("cloning the mount at " + path.string());
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  // Only the clone's top mount: the kernel refuses a recursive idmap when
  // any mount below cannot be idmapped (a /proc below a hostPath "/").
  if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    int err = errno;
    if (err == EINVAL) {
      struct statfs st {};
      long magic = ::fstatfs(tree.get(), &st) == 0 ? static_cast<long>(st.f_type) : 0;
      return Error(path.string() + ": its file system (" + FilesystemName(magic) +
                       ") cannot be idmapped, which a hostUsers: false pod needs (S20.23)",
                   err);
    }
    return Error::FromErrno("idmapping the mount of " + path.string(), err);
  }
  return tree;
}

Status AttachTree(const Fd& tree, const fs::path& target) {
  if (::move_mount(tree.get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return Error::FromErrno("attaching an idmapped mount at " + target.string());
  }
  return Ok();
}

Result<ScratchUserNamespace> ScratchUserNamespace::Create(const oci::PodUserNamespaceIds& ids) {
  if (ids.size == 0) return Error("a user namespace of 0 ids", EINVAL);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return Error::FromErrno("pipe2");
  Fd ready_r(ready[0]), ready_w(ready[1]);
  pid_t pid = ::fork();
  if (pid < 0) return Error::FromErrno("fork");
  if (pid == 0) {
    // Only async-signal-safe calls: the parent may have threads.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    char c = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    if (::write(ready_w.get(), &c, 1) != 1) ::_exit(1);
    // Holds the namespace until the destructor's SIGKILL (or the
    // parent's death).
    for (;;) ::pause();
  }
  ready_w.Reset();
  ScratchUserNamespace scratch(pid, Fd());
  char c = 0;
  ssize_t n;
  do {
    n = ::read(ready_r.get(), &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || c != 'y') return Error("making a user namespace: unshare(CLONE_NEWUSER) failed");
  const fs::path proc = "/proc/" + std::to_string(pid);
  const std::string size = " " + std::to_string(ids.size) + "\n";
  if (Status s = WriteProcFile(proc / "uid_map", "0 " + std::to_string(ids.host_uid) + size); !s)
    return s.take_error();
  if (Status s = WriteProcFile(proc / "gid_map", "0 " + std::to_string(ids.host_gid) + size); !s)
    return s.take_error();
  auto ns = OpenUserNamespace(proc / "ns" / "user");
  if (!ns) return ns.take_error();
  scratch.ns_ = std::move(*ns);
  return scratch;
}

ScratchUserNamespace::ScratchUserNamespace(ScratchUserNamespace&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), ns_(std::move(other.ns_)) {}

ScratchUserNamespace::~ScratchUserNamespace() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

fs::path ScratchUserNamespace::path() const {
  return "/proc/" + std::to_string(pid_) + "/ns/user";
}

Status CheckIdmappable(const fs::path& path, const std::string& what, int userns_fd) {
  std::optional<ScratchUserNamespace> scratch;
  if (userns_fd < 0) {
    // Any range serves: the probe only asks whether the file system takes
    // an idmap at all.
    auto made =
        ScratchUserNamespace::Create({.host_uid = 0x7fff0000, .host_gid = 0x7fff0000, .size = 1});
    if (!made) return made.take_error().Wrap(what + ": checking that it can be idmapped");
    scratch.emplace(std::move(*made));
    userns_fd = scratch->fd();
  }
  auto tree = OpenIdmappedTree(NearestExisting(path), userns_fd, /*recursive=*/false);
  if (!tree) return tree.take_error().Wrap(what);
  return Ok();
}

}  // namespace podvisor::hostfs
