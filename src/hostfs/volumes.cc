#include "hostfs/volumes.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <system_error>

#include "common/beneath.h"
#include "common/fd.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "hostfs/projected_volumes.h"
#include "oci/node_info.h"
#include "pod/resources.h"

namespace podvisor::hostfs {
namespace {

constexpr int64_t kPodShmBytes = 64 * 1024 * 1024;

Error VolumeError(const pod::Volume& v, const std::string& path, const std::string& what,
                  int err = 0) {
  return Error("volume \"" + v.name + "\": hostPath " + path + ": " + what, err);
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a file";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  return "something else";
}

Status MountTmpfs(const std::filesystem::path& dir, const std::string& options,
                  const std::string& what) {
  if (IsMountPoint(dir)) {
    if (FilesystemType(dir) == TMPFS_MAGIC) return Ok();
    return Error(what + ": " + dir.string() + " is already a mount point of another kind", EBUSY);
  }
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return Error::FromErrno(what + ": mounting tmpfs on " + dir.string());
  }
  return Ok();
}

// SetVolumeOwnership for a writable volume: group FS_GROUP, setgid, and
// group rwx (an emptyDir is 0777 already).
Status GiveToFsGroup(const pod::Volume& v, const std::filesystem::path& dir, int64_t fs_group) {
  if (::chown(dir.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(fs_group)) != 0 ||
      ::chmod(dir.c_str(), 02777) != 0) {
    return Error::FromErrno("volume \"" + v.name + "\": giving " + dir.string() + " to fsGroup " +
                            std::to_string(fs_group));
  }
  return Ok();
}

int64_t HostMemoryBytes() {
  struct sysinfo si {};
  if (::sysinfo(&si) != 0) return 0;
  return static_cast<int64_t>(si.totalram) * si.mem_unit;
}

}  // namespace

Status PrepareHostPath(const pod::Volume& volume) {
  const pod::HostPathVolumeSource& hp = *volume.host_path;
  const std::string& path = hp.path;
  if (path.empty() || path[0] != '/')
    return VolumeError(volume, "\"" + path + "\"", "must be an absolute path");
  struct stat st {};
  bool exists = ::stat(path.c_str(), &st) == 0;
  int stat_errno = errno;
  if (!exists && stat_errno != ENOENT)
    return VolumeError(volume, path, "cannot be checked", stat_errno);

  auto expect = [&](bool ok, const char* wanted) -> Status {
    if (!exists)
      return VolumeError(volume, path, std::string("does not exist (type ") + hp.type + ")",
                         ENOENT);
    if (!ok)
      return VolumeError(
          volume, path,
          std::string("is ") + KindOf(st.st_mode) + ", not " + wanted + " (type " + hp.type + ")");
    return Ok();
  };
  if (hp.type.empty()) return Ok();
  if (hp.type == "DirectoryOrCreate") {
    if (exists) return expect(S_ISDIR(st.st_mode), "a directory");
    if (Status s = MakeDirs(path, 0755); !s)
      return VolumeError(volume, path, s.error().message(), s.error().code());
    return Ok();
  }
  if (hp.type == "FileOrCreate") {
    if (exists) return expect(S_ISREG(st.st_mode), "a file");
    // O_EXCL: a file created by someone else in between is theirs, and
    // is checked like any existing one.
    Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) {
      if (errno == EEXIST) return PrepareHostPath(volume);
      return VolumeError(volume, path, std::string("cannot be created: ") + std::strerror(errno),
                         errno);
    }
    if (::fchmod(fd.get(), 0644) != 0) return VolumeError(volume, path, "chmod failed", errno);
    return Ok();
  }
  if (hp.type == "Directory") return expect(S_ISDIR(st.st_mode), "a directory");
  if (hp.type == "File") return expect(S_ISREG(st.st_mode), "a file");
  if (hp.type == "Socket") return expect(S_ISSOCK(st.st_mode), "a socket");
  if (hp.type == "CharDevice") return expect(S_ISCHR(st.st_mode), "a character device");
  if (hp.type == "BlockDevice") return expect(S_ISBLK(st.st_mode), "a block device");
  return VolumeError(volume, path, "unsupported type \"" + hp.type + "\"");
}

int64_t MemoryEmptyDirBytes(const pod::EmptyDirVolumeSource& empty_dir,
                            std::optional<int64_t> pod_memory_limit, int64_t node_memory_bytes) {
  // S14.4, as the kubelet sizes it: the smallest of the node's memory, the
  // pod's limit and the volume's sizeLimit. The kernel's default would
  // give every such volume half the RAM, each, outside any limit.
  int64_t size = node_memory_bytes > 0 ? node_memory_bytes : HostMemoryBytes();
  if (pod_memory_limit && *pod_memory_limit > 0) size = std::min(size, *pod_memory_limit);
  if (empty_dir.size_limit && empty_dir.size_limit->value() > 0)
    size = std::min(size, empty_dir.size_limit->value());
  return size;
}

Status PrepareEmptyDir(const pod::Volume& volume, const std::filesystem::path& volumes_dir,
                       std::optional<int64_t> pod_memory_limit, int64_t node_memory_bytes) {
  const pod::EmptyDirVolumeSource& ed = *volume.empty_dir;
  std::filesystem::path dir = volumes_dir / volume.name;
  std::string what = "volume \"" + volume.name + "\": emptyDir " + dir.string();
  if (Status s = MakeDirs(volumes_dir, 0755); !s) return s.error().Wrap(what);
  if (Status s = MakeDirs(dir, 0777); !s) return s.error().Wrap(what);
  if (ed.medium.empty()) {
    // sizeLimit on disk is enforced by kubelet eviction, which podvisor
    // does not do; refuse it rather than pretend.
    if (ed.size_limit) return Error(what + ": sizeLimit is only enforced for medium Memory");
    return Ok();
  }
  if (ed.medium != "Memory") return Error(what + ": unsupported medium \"" + ed.medium + "\"");
  int64_t size = MemoryEmptyDirBytes(ed, pod_memory_limit, node_memory_bytes);
  // size=0 would be tmpfs's "unlimited".
  if (size <= 0) return Error(what + ": the node's memory is unknown; nothing bounds the tmpfs");
  return MountTmpfs(dir, "mode=0777,size=" + std::to_string(size), what);
}

Status PreparePodVolumes(const pod::Pod& pod, const std::filesystem::path& volumes_dir,
                         const std::vector<std::string>& pod_ips, int64_t node_memory_bytes) {
  pod::EffectiveResources eff = pod::ComputeEffectiveResources(pod.spec);
  std::optional<int64_t> pod_memory;
  // S10.8: the pod's memory limit, a pod-level one included.
  if (eff.memory_limit_declared && eff.memory_limit) pod_memory = eff.memory_limit->value();
  std::optional<pod::DownwardApiNode> node;
  for (const pod::Volume& v : pod.spec.volumes) {
    Status s;
    if (v.host_path) {
      s = PrepareHostPath(v);
    } else if (v.empty_dir) {
      s = PrepareEmptyDir(v, volumes_dir, pod_memory, node_memory_bytes);
      if (s && pod.spec.security_context && pod.spec.security_context->fs_group) {
        s = GiveToFsGroup(v, volumes_dir / v.name, *pod.spec.security_context->fs_group);
      }
    } else if (IsProjectedKind(v)) {
      if (!node) node = oci::LocalNode(pod, volumes_dir, pod_ips);
      s = PrepareProjectedVolume(pod, v, volumes_dir, *node);
    } else {
      s = Error("volume \"" + v.name + "\": of a kind podvisor cannot provide");
    }
    if (!s) return s;
  }
  return Ok();
}

namespace {

// The subPath a volumeMount names, subPathExpr expanded; "" for none.
Result<std::string> SubPathOf(const pod::Pod& pod, const pod::Container& container,
                              const pod::VolumeMount& vm, const std::filesystem::path& volumes_dir,
                              const std::vector<std::string>& pod_ips,
                              std::optional<pod::EnvPairs>& env) {
  if (vm.sub_path_expr.empty()) return vm.sub_path;
  if (!env) {
    auto resolved =
        pod::ResolveContainerEnv(pod, container, oci::LocalNode(pod, volumes_dir, pod_ips));
    if (!resolved) return resolved.error().Wrap("container \"" + container.name + "\"");
    env = std::move(*resolved);
  }
  auto expanded = pod::ExpandSubPathExpr(vm.sub_path_expr, *env);
  if (!expanded) return expanded.error().Wrap("volume \"" + vm.name + "\"");
  return std::move(*expanded);
}

// S14.1, S14.2: the subPath's target opened beneath the volume's root,
// its missing directories made beneath it first (as the kubelet does, so
// an init container's file is bound as it is and a missing path becomes a
// directory). The root of a hostPath is the operator's and is trusted;
// everything below any root is the pod's and is not.
// S20.24: `view`, when not empty, is the volume's idmapped mount: the
// target is opened beneath it (so its bind is idmapped), its missing
// directories made beneath the volume itself, as host root.
Result<Fd> OpenSubPath(const pod::Volume& volume, const std::string& sub_path,
                       const std::filesystem::path& volumes_dir, const std::string& what,
                       const std::filesystem::path& view) {
  std::filesystem::path rel(sub_path);
  if (rel.is_absolute()) return Error(what + ": must be relative");
  for (const auto& part : rel) {
    if (part == "..") return Error(what + ": must not contain '..'");
  }
  std::filesystem::path base =
      volume.host_path ? std::filesystem::path(volume.host_path->path) : volumes_dir / volume.name;
  Fd root(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::FromErrno(what + ": opening the volume at " + base.string());
  Fd view_root;
  if (!view.empty()) {
    view_root.Reset(::open(view.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!view_root) return Error::FromErrno(what + ": opening the volume at " + view.string());
  }
  const Fd& open_root = view.empty() ? root : view_root;
  auto target = OpenBeneath(open_root.get(), sub_path, O_PATH);
  if (!target && target.error().code() == ENOENT) {
    target = MakeDirsBeneath(root.get(), sub_path, 0755);
    if (target && !view.empty()) target = OpenBeneath(open_root.get(), sub_path, O_PATH);
  }
  if (!target) {
    if (IsOutsideRoot(target.error())) return Error(what + ": resolves outside the volume", EXDEV);
    return target.error().Wrap(what);
  }
  return target;
}

// S14.2: the very object that was resolved, bound at a path of our own;
// the runtime mounts that path, so a component swapped for a symlink after
// the check changes nothing.
Status BindAt(const Fd& target, const std::filesystem::path& mount_point) {
  struct stat st {};
  if (::fstat(target.get(), &st) != 0) return Error::FromErrno("fstat");
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(mount_point.c_str(), 0700) != 0)
      return Error::FromErrno("creating " + mount_point.string());
  } else {
    Fd file(
        ::open(mount_point.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file) return Error::FromErrno("creating " + mount_point.string());
  }
  std::string source = "/proc/self/fd/" + std::to_string(target.get());
  if (::mount(source.c_str(), mount_point.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return Error::FromErrno("binding it at " + mount_point.string());
  return Ok();
}

}  // namespace

Result<SubPathSources> BindSubPaths(const pod::Pod& pod, const pod::Container& container,
                                    const std::filesystem::path& volumes_dir,
                                    const std::filesystem::path& mount_dir,
                                    const std::vector<std::string>& pod_ips,
                                    const std::map<std::string, std::filesystem::path>& idmapped) {
  SubPathSources sources;
  std::optional<pod::EnvPairs> env;
  auto bind = [&](std::size_t index, const pod::VolumeMount& vm) -> Status {
    auto sub_path = SubPathOf(pod, container, vm, volumes_dir, pod_ips, env);
    if (!sub_path) return sub_path.take_error();
    if (sub_path->empty()) return Ok();
    std::string what = "volume \"" + vm.name + "\": subPath \"" + *sub_path + "\"";
    const pod::Volume* volume = nullptr;
    for (const auto& v : pod.spec.volumes) {
      if (v.name == vm.name) volume = &v;
    }
    if (!volume) return Error(what + ": no such volume");
    auto view = idmapped.find(volume->name);
    auto target = OpenSubPath(*volume, *sub_path, volumes_dir, what,
                              view == idmapped.end() ? std::filesystem::path() : view->second);
    if (!target) return target.take_error();
    if (sources.empty()) {
      if (Status s = MakeDirs(mount_dir, 0700); !s) return s.error().Wrap(what);
    }
    std::filesystem::path mount_point = mount_dir / std::to_string(index);
    if (Status s = BindAt(*target, mount_point); !s) return s.error().Wrap(what);
    sources[index] = mount_point;
    return Ok();
  };
  for (std::size_t i = 0; i < container.volume_mounts.size(); ++i) {
    if (Status s = bind(i, container.volume_mounts[i]); !s) {
      // Nothing half-made stays behind: a failed create leaves no mount.
      (void)UnbindSubPaths(mount_dir);
      return s.take_error();
    }
  }
  return sources;
}

std::filesystem::path SubPathMountDir(const std::filesystem::path& instance_dir) {
  return instance_dir / InstanceFile::kSubPathsDir;
}

Status UnbindSubPaths(const std::filesystem::path& mount_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(mount_dir, ec)) return Ok();
  if (Status s = UnmountAllUnder(mount_dir); !s) return s.error().Wrap("subPath binds");
  // Only once nothing is mounted: remove_all through a bind would empty
  // the volume itself.
  std::filesystem::remove_all(mount_dir, ec);
  if (ec) return Error("removing " + mount_dir.string() + ": " + ec.message(), ec.value());
  return Ok();
}

Status MountPodShm(const PodLayout& layout) {
  if (Status s = MakeDirs(layout.ShmDir(), 01777); !s) return s.error().Wrap("pod /dev/shm");
  return MountTmpfs(layout.ShmDir(), "mode=1777,size=" + std::to_string(kPodShmBytes),
                    "pod /dev/shm");
}

Status CleanupPod(const PodLayout& layout) {
  std::error_code ec;
  if (!std::filesystem::exists(layout.dir(), ec)) return Ok();
  if (Status s = UnmountAllUnder(layout.dir()); !s)
    return s.error().Wrap("cleaning up " + layout.dir().string());
  for (const auto& dir : {layout.ContainersDir(), layout.VolumesDir(), layout.EtcDir(),
                          layout.ShmDir(), layout.IdmappedDir(), layout.NamespaceDir()}) {
    std::filesystem::remove_all(dir, ec);
    if (ec) return Error("removing " + dir.string() + ": " + ec.message(), ec.value());
  }
  return Ok();
}

}  // namespace podvisor::hostfs
