// Idmapped mounts for hostUsers: false pods (S20.20-S20.27): the kernel's
// open_tree(OPEN_TREE_CLONE) + mount_setattr(MOUNT_ATTR_IDMAP) +
// move_mount, which Debian's runc 1.1.5 cannot do and crun 1.8.1 only
// does for binds. podvisor makes the mounts itself and hands the runtime
// ordinary bind sources, as runc 1.2 and containerd 2.0 do internally.
//
// An idmapped mount shows a file owned by id K on disk as owned by the
// host id the pod's user namespace maps K to (container root's files,
// on-disk 0, appear as the pod's host_uid, which is root inside the pod),
// and writes through it land on disk with the ids the container sees.
//
// Not every file system can be idmapped (the kernel's FS_ALLOW_IDMAP:
// ext4, xfs, btrfs and tmpfs can; proc, sysfs, overlayfs, NFS cannot);
// mount_setattr then fails with EINVAL and the error names the path and
// its file system. Needs CAP_SYS_ADMIN over the user namespace (root).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/fd.h"
#include "common/result.h"
#include "oci/spec.h"

namespace podvisor::hostfs {

// A readable name for a statfs f_type ("ext4", "proc", ...; else "0x...").
std::string FilesystemName(long magic);

// Opens a user namespace file (/proc/<pid>/ns/user or a pinned bind of
// one) for mount_setattr; the error says when it is no user namespace.
Result<Fd> OpenUserNamespace(const std::filesystem::path& path);

// A detached clone of the mount at `path` (rooted at `path`, as a bind
// mount is), idmapped to `userns_fd`. `recursive`: the mounts below `path`
// come along (rbind), not idmapped themselves (as runc 1.2's "idmap", not
// "ridmap"). Nothing is attached: closing the Fd drops the clone.
Result<Fd> OpenIdmappedTree(const std::filesystem::path& path, int userns_fd, bool recursive);

// Attaches a detached tree (OpenIdmappedTree) at `target`, which exists
// and is a directory or a file as the tree's root is (move_mount).
Status AttachTree(const Fd& tree, const std::filesystem::path& target);

// A user namespace of its own mapping 0 -> ids.host_uid/host_gid for
// ids.size ids, held by a child process that waits until this object goes
// (then it is killed and reaped). For probes (CheckIdmappable) and tests;
// a pod's own namespace is its sandbox holder's.
class ScratchUserNamespace {
 public:
  static Result<ScratchUserNamespace> Create(const oci::PodUserNamespaceIds& ids);
  ScratchUserNamespace(ScratchUserNamespace&& other) noexcept;
  ScratchUserNamespace& operator=(ScratchUserNamespace&&) = delete;
  ScratchUserNamespace(const ScratchUserNamespace&) = delete;
  ScratchUserNamespace& operator=(const ScratchUserNamespace&) = delete;
  ~ScratchUserNamespace();

  pid_t pid() const { return pid_; }
  int fd() const { return ns_.get(); }
  std::filesystem::path path() const;  // /proc/<pid>/ns/user

 private:
  ScratchUserNamespace(pid_t pid, Fd ns) : pid_(pid), ns_(std::move(ns)) {}
  pid_t pid_ = -1;
  Fd ns_;
};

// S20.23: whether the file system of `path` (or of its nearest existing
// parent, for a path `run` will create) can be idmapped, tried on a
// detached clone with a scratch user namespace; nothing is attached.
// `what` starts the error ("volume \"data\": hostPath /proc"). For `run`'s
// host checks, before a hostUsers: false pod starts (CheckPodIdmappable,
// idmapped_pod.h); the same error comes at pod start otherwise
// (IdmapPodMounts).
// `userns_fd` < 0: a scratch namespace of its own for this one probe.
Status CheckIdmappable(const std::filesystem::path& path, const std::string& what,
                       int userns_fd = -1);

}  // namespace podvisor::hostfs
