#include "hostfs/projected_volumes.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <map>
#include <random>

#include "common/fd.h"
#include "common/mounts.h"
#include "pod/config_objects.h"

namespace podvisor::hostfs {
namespace {

using Files = std::map<std::string, ProjectedFile>;

uint32_t ModeOf(const std::optional<int32_t>& item_mode,
                const std::optional<int32_t>& default_mode) {
  return static_cast<uint32_t>(item_mode.value_or(default_mode.value_or(kDefaultVolumeFileMode)));
}

// Keys of DATA, or ITEMS of them, as files. A missing key is skipped when
// the source is optional, as the kubelet does.
Status AddKeys(const std::map<std::string, std::string>& data,
               const std::vector<pod::KeyToPath>& items, std::optional<int32_t> default_mode,
               bool optional, const std::string& object, Files& files) {
  if (items.empty()) {
    for (const auto& [key, value] : data) {
      files[key] = {key, value, ModeOf(std::nullopt, default_mode)};
    }
    return Ok();
  }
  for (const pod::KeyToPath& item : items) {
    auto it = data.find(item.key);
    if (it == data.end()) {
      if (optional) continue;
      return Error(object + " has no key \"" + item.key + "\"");
    }
    files[item.path] = {item.path, it->second, ModeOf(item.mode, default_mode)};
  }
  return Ok();
}

Status AddConfigMap(const pod::Pod& pod, const pod::ConfigMapVolumeSource& src,
                    std::optional<int32_t> default_mode, Files& files) {
  const pod::ConfigMap* cm = pod::FindConfigMap(pod.config, src.name);
  bool optional = src.optional.value_or(false);
  if (!cm) {
    if (optional) return Ok();
    return Error("configmap \"" + src.name + "\" not found");
  }
  return AddKeys(pod::ConfigMapEntries(*cm), src.items, default_mode, optional,
                 "configmap \"" + src.name + "\"", files);
}

Status AddSecret(const pod::Pod& pod, const pod::SecretVolumeSource& src,
                 std::optional<int32_t> default_mode, Files& files) {
  const pod::Secret* secret = pod::FindSecret(pod.config, src.secret_name);
  bool optional = src.optional.value_or(false);
  if (!secret) {
    if (optional) return Ok();
    return Error("secret \"" + src.secret_name + "\" not found");
  }
  return AddKeys(secret->data, src.items, default_mode, optional,
                 "secret \"" + src.secret_name + "\"", files);
}

Status AddDownwardApi(const pod::Pod& pod, const pod::DownwardAPIVolumeSource& src,
                      std::optional<int32_t> default_mode, const pod::DownwardApiNode& node,
                      Files& files) {
  for (const pod::DownwardAPIVolumeFile& item : src.items) {
    Result<std::string> value = Error("neither fieldRef nor resourceFieldRef");
    if (item.field_ref) {
      value = pod::ResolveFieldRef(pod, *item.field_ref, node);
    } else if (item.resource_field_ref) {
      value = pod::ResolveResourceFieldRef(pod, nullptr, *item.resource_field_ref, node);
    }
    if (!value) return value.error().Wrap("downwardAPI item \"" + item.path + "\"");
    files[item.path] = {item.path, std::move(*value), ModeOf(item.mode, default_mode)};
  }
  return Ok();
}

Status WriteFile(int dir_fd, const std::string& name, const std::string& content, uint32_t mode) {
  Fd fd(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::FromErrno("creating " + name);
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("writing " + name);
    }
    done += static_cast<std::size_t>(n);
  }
  // fchmod, not the open mode: the umask must not take bits away.
  if (::fchmod(fd.get(), mode) != 0) return Error::FromErrno("setting the mode of " + name);
  return Ok();
}

// The kubelet's name for a payload directory: "..2006_01_02_15_04_05."
// plus a random suffix (os.MkdirTemp).
std::string TimestampDirName() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "..%Y_%m_%d_%H_%M_%S.", &tm);
  std::random_device rd;
  return std::string(buf) + std::to_string(rd() % 1000000000u);
}

// SetVolumeOwnership for a read-only volume: group FS_GROUP, g+r on
// files, g+rx and setgid on directories.
Status ApplyFsGroup(const std::filesystem::path& path, gid_t gid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Error::FromErrno("inspecting " + path.string());
  if (::lchown(path.c_str(), static_cast<uid_t>(-1), gid) != 0) {
    return Error::FromErrno("giving " + path.string() + " to the fsGroup");
  }
  if (S_ISLNK(st.st_mode)) return Ok();
  mode_t mode = st.st_mode & 07777;
  mode |= S_IRUSR | S_IRGRP;
  if (S_ISDIR(st.st_mode)) mode |= S_ISGID | S_IXUSR | S_IXGRP;
  if (::chmod(path.c_str(), mode) != 0) return Error::FromErrno("chmod " + path.string());
  return Ok();
}

// Removes what DIR holds (a payload of an earlier start), not DIR itself.
Status ClearDirectory(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::vector<std::filesystem::path> old;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    old.push_back(entry.path());
  if (ec) return Error(what + ": listing: " + ec.message(), ec.value());
  for (const auto& path : old) {
    std::filesystem::remove_all(path, ec);
    if (ec) return Error(what + ": removing " + path.string() + ": " + ec.message(), ec.value());
  }
  return Ok();
}

// S14.15: makes DIR a place where secret bytes are only in memory.
Status PrepareSecretTmpfs(const std::filesystem::path& dir, const std::vector<ProjectedFile>& files,
                          const std::string& what) {
  if (IsMountPoint(dir)) {
    if (FilesystemType(dir) == TMPFS_MAGIC) return Ok();  // ours, from an earlier start
    return Error(what +
                     ": is a mount point but not a tmpfs, and secret data is only written to a "
                     "tmpfs",
                 EBUSY);
  }
  // Emptied first: a tmpfs mounted over an old payload would hide it, not
  // remove it (a volume an older podvisor wrote to the disk).
  if (Status s = ClearDirectory(dir, what); !s) return s;
  // The size bounds what a container could write if the mount were
  // writable; it is mounted read-only, so the payload plus slack is plenty.
  std::size_t bytes = 0;
  for (const auto& f : files) bytes += f.content.size() + 4096;
  std::string options = "mode=0755,size=" + std::to_string(bytes + 1024 * 1024);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options.c_str()) ==
      0) {
    return Ok();
  }
  int err = errno;
  // Without the privilege to mount (a run as an ordinary user), a state
  // directory the caller put on a tmpfs keeps the bytes in memory too.
  if (FilesystemType(dir) == TMPFS_MAGIC) return Ok();
  return Error::FromErrno(what +
                              ": secret data is only written to a tmpfs: the directory is not on "
                              "one, and mounting one failed (run as root, or give a --state-dir "
                              "on a tmpfs such as $XDG_RUNTIME_DIR)",
                          err);
}

}  // namespace

bool IsProjectedKind(const pod::Volume& v) {
  return v.config_map || v.secret || v.downward_api || v.projected;
}

bool HoldsSecretData(const pod::Volume& v) {
  if (v.secret) return true;
  if (!v.projected) return false;
  return std::any_of(v.projected->sources.begin(), v.projected->sources.end(),
                     [](const pod::VolumeProjection& p) { return p.secret.has_value(); });
}

Result<std::vector<ProjectedFile>> ProjectedVolumeFiles(const pod::Pod& pod,
                                                        const pod::Volume& volume,
                                                        const pod::DownwardApiNode& node) {
  Files files;
  Status s;
  if (volume.config_map) {
    s = AddConfigMap(pod, *volume.config_map, volume.config_map->default_mode, files);
  } else if (volume.secret) {
    s = AddSecret(pod, *volume.secret, volume.secret->default_mode, files);
  } else if (volume.downward_api) {
    s = AddDownwardApi(pod, *volume.downward_api, volume.downward_api->default_mode, node, files);
  } else if (volume.projected) {
    std::optional<int32_t> mode = volume.projected->default_mode;
    for (const pod::VolumeProjection& p : volume.projected->sources) {
      // serviceAccountToken sources are skipped (model.h).
      if (p.config_map) {
        pod::ConfigMapVolumeSource source = *p.config_map;
        if (pod::IsClusterCaOfTokenVolume(*volume.projected, source)) source.optional = true;
        s = AddConfigMap(pod, source, mode, files);
      }
      if (s && p.secret) s = AddSecret(pod, *p.secret, mode, files);
      if (s && p.downward_api) s = AddDownwardApi(pod, *p.downward_api, mode, node, files);
      if (!s) break;
    }
  } else {
    return Error("volume \"" + volume.name +
                 "\" is not a configMap, secret, downwardAPI or "
                 "projected volume");
  }
  if (!s) return s.error().Wrap("volume \"" + volume.name + "\"");
  std::vector<ProjectedFile> out;
  for (auto& [path, f] : files) out.push_back(std::move(f));
  return out;
}

Status WriteAtomically(const std::filesystem::path& dir, const std::vector<ProjectedFile>& files,
                       std::optional<int64_t> fs_group) {
  std::string payload = TimestampDirName();
  std::filesystem::path payload_dir = dir / payload;
  if (::mkdir(payload_dir.c_str(), 0755) != 0) {
    return Error::FromErrno("creating " + payload_dir.string());
  }
  std::vector<std::string> top_level;
  for (const ProjectedFile& f : files) {
    std::filesystem::path rel(f.path);
    if (rel.empty() || rel.is_absolute() ||
        std::any_of(rel.begin(), rel.end(), [](const auto& p) { return p == ".." || p == "."; }) ||
        f.path.starts_with("..")) {
      return Error("volume file \"" + f.path + "\": must be a relative path below the volume");
    }
    std::filesystem::path parent = payload_dir / rel.parent_path();
    if (Status s = MakeDirs(parent, 0755); !s) return s;
    Fd dir_fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!dir_fd) return Error::FromErrno("opening " + parent.string());
    if (Status s = WriteFile(dir_fd.get(), rel.filename().string(), f.content, f.mode); !s) {
      return s.error().Wrap(payload_dir.string());
    }
    std::string first = rel.begin()->string();
    if (std::find(top_level.begin(), top_level.end(), first) == top_level.end()) {
      top_level.push_back(first);
    }
  }
  if (fs_group) {
    gid_t gid = static_cast<gid_t>(*fs_group);
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(payload_dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (Status s = ApplyFsGroup(it->path(), gid); !s) return s;
    }
    if (ec) return Error("walking " + payload_dir.string() + ": " + ec.message(), ec.value());
    if (Status s = ApplyFsGroup(payload_dir, gid); !s) return s;
    if (Status s = ApplyFsGroup(dir, gid); !s) return s;
  }
  // ..data is switched with a rename, so a reader sees the old payload or
  // the new one, never a mix (the kubelet's reason for this layout). A
  // symlink is swapped, not a file written: not common/file_io.h's job.
  std::filesystem::path tmp_link = dir / "..data_tmp";
  std::filesystem::path data_link = dir / "..data";
  if (::symlink(payload.c_str(), tmp_link.c_str()) != 0) {
    return Error::FromErrno("linking " + tmp_link.string());
  }
  if (::rename(tmp_link.c_str(), data_link.c_str()) != 0) {
    return Error::FromErrno("renaming " + tmp_link.string());
  }
  for (const std::string& name : top_level) {
    std::filesystem::path link = dir / name;
    std::string target = "..data/" + name;
    if (::symlink(target.c_str(), link.c_str()) != 0) {
      return Error::FromErrno("linking " + link.string());
    }
    if (fs_group &&
        ::lchown(link.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(*fs_group)) != 0) {
      return Error::FromErrno("giving " + link.string() + " to the fsGroup");
    }
  }
  return Ok();
}

Status PrepareProjectedVolume(const pod::Pod& pod, const pod::Volume& volume,
                              const std::filesystem::path& volumes_dir,
                              const pod::DownwardApiNode& node) {
  std::filesystem::path dir = volumes_dir / volume.name;
  std::string what = "volume \"" + volume.name + "\": " + dir.string();
  auto files = ProjectedVolumeFiles(pod, volume, node);
  if (!files) return files.take_error();
  if (Status s = MakeDirs(volumes_dir, 0755); !s) return s.error().Wrap(what);
  if (Status s = MakeDirs(dir, 0755); !s) return s.error().Wrap(what);
  if (HoldsSecretData(volume)) {
    if (Status s = PrepareSecretTmpfs(dir, *files, what); !s) return s;
  }
  // A recovered or restarted pod may find an old payload: start empty.
  if (Status s = ClearDirectory(dir, what); !s) return s;
  std::optional<int64_t> fs_group;
  if (pod.spec.security_context) fs_group = pod.spec.security_context->fs_group;
  if (Status s = WriteAtomically(dir, *files, fs_group); !s) return s.error().Wrap(what);
  return Ok();
}

}  // namespace podvisor::hostfs
