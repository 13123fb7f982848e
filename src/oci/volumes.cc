#include "oci/volumes.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

#include "common/fd.h"
#include "oci/mounts.h"
#include "oci/node_info.h"
#include "oci/projected_volumes.h"
#include "pod/resources.h"

namespace podvisor::oci {
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

bool Inside(const std::filesystem::path& p, const std::filesystem::path& root) {
  auto rel = p.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
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

Status PrepareEmptyDir(const pod::Volume& volume, const std::filesystem::path& volumes_dir,
                       std::optional<int64_t> default_memory_bytes) {
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
  std::string options = "mode=0777";
  std::optional<int64_t> size =
      ed.size_limit ? std::optional<int64_t>(ed.size_limit->value()) : default_memory_bytes;
  if (size) options += ",size=" + std::to_string(*size);
  return MountTmpfs(dir, options, what);
}

Status PreparePodVolumes(const pod::Pod& pod, const std::filesystem::path& volumes_dir,
                         const std::vector<std::string>& pod_ips) {
  pod::EffectiveResources eff = pod::ComputeEffectiveResources(pod.spec);
  std::optional<int64_t> pod_memory;
  if (eff.every_container_has_memory_limit && eff.memory_limit)
    pod_memory = eff.memory_limit->value();
  std::optional<pod::DownwardApiNode> node;
  for (const pod::Volume& v : pod.spec.volumes) {
    Status s;
    if (v.host_path) {
      s = PrepareHostPath(v);
    } else if (v.empty_dir) {
      s = PrepareEmptyDir(v, volumes_dir, pod_memory);
      if (s && pod.spec.security_context && pod.spec.security_context->fs_group) {
        s = GiveToFsGroup(v, volumes_dir / v.name, *pod.spec.security_context->fs_group);
      }
    } else if (IsProjectedKind(v)) {
      if (!node) node = LocalNode(pod, volumes_dir, pod_ips);
      s = PrepareProjectedVolume(pod, v, volumes_dir, *node);
    } else {
      s = Error("volume \"" + v.name + "\": of a kind podvisor cannot provide");
    }
    if (!s) return s;
  }
  return Ok();
}

Status PrepareSubPaths(const pod::Pod& pod, const pod::Container& container,
                       const std::filesystem::path& volumes_dir,
                       const std::vector<std::string>& pod_ips) {
  std::optional<pod::EnvPairs> env;
  for (const pod::VolumeMount& vm : container.volume_mounts) {
    std::string sub_path = vm.sub_path;
    if (!vm.sub_path_expr.empty()) {
      if (!env) {
        auto resolved =
            pod::ResolveContainerEnv(pod, container, LocalNode(pod, volumes_dir, pod_ips));
        if (!resolved) return resolved.error().Wrap("container \"" + container.name + "\"");
        env = std::move(*resolved);
      }
      auto expanded = pod::ExpandSubPathExpr(vm.sub_path_expr, *env);
      if (!expanded) return expanded.error().Wrap("volume \"" + vm.name + "\"");
      sub_path = std::move(*expanded);
    }
    if (sub_path.empty()) continue;
    std::string what = "volume \"" + vm.name + "\": subPath \"" + sub_path + "\"";
    std::filesystem::path rel(sub_path);
    if (rel.is_absolute()) return Error(what + ": must be relative");
    for (const auto& part : rel) {
      if (part == "..") return Error(what + ": must not contain '..'");
    }
    const pod::Volume* volume = nullptr;
    for (const auto& v : pod.spec.volumes) {
      if (v.name == vm.name) volume = &v;
    }
    if (!volume) return Error(what + ": no such volume");
    std::filesystem::path base = volume->host_path ? std::filesystem::path(volume->host_path->path)
                                                   : volumes_dir / volume->name;
    std::filesystem::path target = base / rel;
    std::error_code ec;
    if (!std::filesystem::exists(target, ec)) {
      if (Status s = MakeDirs(target, 0755); !s) return s.error().Wrap(what);
    }
    auto real_base = std::filesystem::canonical(base, ec);
    if (ec) return Error(what + ": " + base.string() + ": " + ec.message(), ec.value());
    auto real_target = std::filesystem::canonical(target, ec);
    if (ec) return Error(what + ": " + target.string() + ": " + ec.message(), ec.value());
    if (real_target != real_base && !Inside(real_target, real_base)) {
      return Error(what + ": resolves to " + real_target.string() + ", outside the volume");
    }
  }
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
                          layout.ShmDir(), layout.NamespaceDir()}) {
    std::filesystem::remove_all(dir, ec);
    if (ec) return Error("removing " + dir.string() + ": " + ec.message(), ec.value());
  }
  return Ok();
}

}  // namespace podvisor::oci
