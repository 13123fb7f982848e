#include "hostfs/rootfs.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <utility>

#include "common/fd.h"
#include "common/mounts.h"
#include "hostfs/idmap.h"
#include "image/layer_merge.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

// overlayfs splits its mount data at ',' and lowerdir at ':'; a backslash
// makes the next character literal (image directories like
// "registry.example/app:1.2" contain a colon).
std::string EscapeOverlayPath(const fs::path& p) {
  std::string out;
  for (char c : p.string()) {
    if (c == ',' || c == ':' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string MountData(const std::vector<fs::path>& lowers, const WritableRootPaths& paths) {
  std::string data = "lowerdir=";
  for (std::size_t i = 0; i < lowers.size(); ++i) {
    if (i > 0) data += ':';
    data += EscapeOverlayPath(lowers[i]);
  }
  return data + ",upperdir=" + EscapeOverlayPath(paths.upper) +
         ",workdir=" + EscapeOverlayPath(paths.work);
}

// S20.21: where the idmapped clone of lower layer i is attached while the
// overlay is mounted.
fs::path IdmappedLowersDir(const WritableRootPaths& paths) {
  return paths.work.parent_path() / "idmapped";
}
fs::path IdmappedLowerPath(const WritableRootPaths& paths, std::size_t i) {
  return IdmappedLowersDir(paths) / std::to_string(i);
}

bool Fits(std::vector<fs::path> lowers, const WritableRootPaths& paths, OverlayMountApi api,
          bool idmapped) {
  if (lowers.size() > kOverlayMaxLowerDirs) return false;
  if (idmapped) {
    for (std::size_t i = 0; i < lowers.size(); ++i) lowers[i] = IdmappedLowerPath(paths, i);
  }
  if (api == OverlayMountApi::kMountData) return MountData(lowers, paths).size() <= kMountDataMax;
  for (const fs::path& p : lowers) {
    if (p.string().size() > kFsconfigStringMax) return false;
  }
  return paths.upper.string().size() <= kFsconfigStringMax &&
         paths.work.string().size() <= kFsconfigStringMax;
}

// What the kernel said about a failed fsconfig() or fsmount(): the fs
// context descriptor reads as lines "e overlay: ...".
std::string KernelMessage(int fs_fd) {
  char buf[512];
  ssize_t n = ::read(fs_fd, buf, sizeof buf - 1);
  if (n <= 2) return "";
  std::string text(buf, static_cast<std::size_t>(n));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return " (" + text.substr(2) + ")";
}

std::string Describe(const WritableRootPaths& paths, std::size_t lower_count) {
  return "mounting the overlay root " + paths.merged.string() + " over " +
         paths.LowerDirs().front().string() +
         (lower_count > 1 ? " and " + std::to_string(lower_count - 1) + " more layers" : "");
}

std::string UpperHint(const WritableRootPaths& paths, int err) {
  if (err == EINVAL && FilesystemType(paths.upper) == OVERLAYFS_SUPER_MAGIC) {
    return " (the state directory is itself on overlayfs, which cannot be an upper layer; use "
           "--state-dir on tmpfs or a disk filesystem)";
  }
  return "";
}

// Detaches an idmapped lower's attached clone and removes its directory
// (never what is below a mount: rmdir only).
void DetachIdmappedLower(const fs::path& at) {
  (void)::umount2(at.c_str(), MNT_DETACH);
  (void)::rmdir(at.c_str());
}

// The lower directories as the mount names them: their paths, or (S20.21)
// idmapped clones of them attached under the instance's idmapped/ for the
// mount only. overlayfs before Linux 6.15 takes no detached mount as a
// layer ("failed to clone lowerpath"); once mounted it holds clones of
// its own, so the attached ones go when this does.
class Lowers {
 public:
  Lowers() = default;
  Lowers(const Lowers&) = delete;
  Lowers& operator=(const Lowers&) = delete;
  Lowers(Lowers&& other) noexcept
      : names(std::move(other.names)), dir_(std::exchange(other.dir_, fs::path())) {}
  Lowers& operator=(Lowers&&) = delete;
  ~Lowers() {
    if (dir_.empty()) return;
    for (const fs::path& at : names) DetachIdmappedLower(at);
    (void)::rmdir(dir_.c_str());
  }

  static Result<Lowers> Name(std::vector<fs::path> dirs, const Fd& userns,
                             const WritableRootPaths& paths) {
    Lowers out;
    if (!userns) {
      out.names = std::move(dirs);
      return out;
    }
    out.dir_ = IdmappedLowersDir(paths);
    if (Status s = MakeDirs(out.dir_, 0700); !s) return s.take_error();
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      auto clone = OpenIdmappedTree(dirs[i], userns.get(), /*recursive=*/false);
      if (!clone) return clone.take_error().Wrap("idmapping the image layer");
      const fs::path at = IdmappedLowerPath(paths, i);
      if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
        return Error::FromErrno("making " + at.string());
      }
      out.names.push_back(at);  // detached by the destructor, attached or not
      if (Status s = AttachTree(*clone, at); !s) return s.take_error();
    }
    return out;
  }

  std::vector<fs::path> names;

 private:
  fs::path dir_;  // empty: the plain lower directories
};

// Linux 6.8's "lowerdir+": one lower directory per fsconfig() call, no
// escaping, no page limit. false: the kernel lacks it (or the new mount
// API altogether).
Result<bool> MountWithNewApi(const WritableRootPaths& paths, bool fall_back, const Fd& userns) {
  const std::vector<fs::path> all = paths.LowerDirs();
  {
    Fd probe(::fsopen("overlay", FSOPEN_CLOEXEC));
    if (!probe) {
      if (errno == ENOSYS || errno == ENODEV) return false;
      return Error::FromErrno("fsopen(overlay)");
    }
    // Before Linux 6.5 overlayfs parses no fs_context parameters: the
    // kernel's legacy context takes any key (it only appends "key=value"
    // to the mount data), so "lowerdir+" would seem accepted and fail at
    // create. A key no overlayfs knows tells the two apart.
    if (::fsconfig(probe.get(), FSCONFIG_SET_STRING, "podvisor-probe", "1", 0) == 0) return false;
    if (::fsconfig(probe.get(), FSCONFIG_SET_STRING, "lowerdir+", all.front().c_str(), 0) != 0) {
      if (errno == EINVAL) return false;
      return Error::FromErrno(Describe(paths, all.size()) + ": lowerdir+ " + all.front().string());
    }
  }
  auto fitted = FitLowerDirs(paths, OverlayMountApi::kNewApi, userns.valid());
  if (!fitted) {
    if (fall_back && fitted.error().code() == ENAMETOOLONG) return false;
    return fitted.take_error();
  }
  const std::string what = Describe(paths, fitted->size());
  auto lowers = Lowers::Name(std::move(*fitted), userns, paths);
  if (!lowers) return lowers.take_error().Wrap(what);
  Fd context(::fsopen("overlay", FSOPEN_CLOEXEC));
  if (!context) return Error::FromErrno("fsopen(overlay)");
  auto set = [&](const char* key, const fs::path& value) -> Status {
    if (::fsconfig(context.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0) != 0) {
      int err = errno;
      return Error::FromErrno(
          what + ": " + key + " " + value.string() + KernelMessage(context.get()), err);
    }
    return Ok();
  };
  for (const fs::path& lower : lowers->names) {
    if (auto s = set("lowerdir+", lower); !s) return s.take_error();
  }
  if (auto s = set("upperdir", paths.upper); !s) return s.take_error();
  if (auto s = set("workdir", paths.work); !s) return s.take_error();
  if (::fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    int err = errno;
    // A kernel whose overlayfs took the parameters without knowing them:
    // mount(2)'s data says the same in the form it knows, or why not.
    if (err == EINVAL && fall_back) return false;
    return Error::FromErrno(what + KernelMessage(context.get()) + UpperHint(paths, err), err);
  }
  Fd mnt(::fsmount(context.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV));
  if (!mnt) return Error::FromErrno(what + ": fsmount");
  if (::move_mount(mnt.get(), "", AT_FDCWD, paths.merged.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return Error::FromErrno(what + ": move_mount");
  }
  return true;
}

Status MountWithData(const WritableRootPaths& paths, const Fd& userns) {
  auto fitted = FitLowerDirs(paths, OverlayMountApi::kMountData, userns.valid());
  if (!fitted) return fitted.take_error();
  const std::string what = Describe(paths, fitted->size());
  auto lowers = Lowers::Name(std::move(*fitted), userns, paths);
  if (!lowers) return lowers.take_error().Wrap(what);
  std::string data = MountData(lowers->names, paths);
  if (::mount("overlay", paths.merged.c_str(), "overlay", MS_NODEV, data.c_str()) != 0) {
    int err = errno;
    return Error::FromErrno(what + UpperHint(paths, err), err);
  }
  return Ok();
}

// S20.21: upper/ stays plain; its root becomes the pod's root, which
// makes the overlay's root directory root's inside the pod.
Result<Fd> PrepareIdmap(const WritableRootPaths& paths, const std::optional<RootIdmap>& idmap) {
  if (!idmap) return Fd();
  if (::chown(paths.upper.c_str(), idmap->ids.host_uid, idmap->ids.host_gid) != 0) {
    return Error::FromErrno("giving the upper layer " + paths.upper.string() +
                            " to the pod's host ids " + std::to_string(idmap->ids.host_uid) + ":" +
                            std::to_string(idmap->ids.host_gid));
  }
  return OpenUserNamespace(idmap->user_namespace);
}

}  // namespace

std::string OverlayMountData(const WritableRootPaths& paths) {
  return MountData(paths.LowerDirs(), paths);
}

Result<std::vector<fs::path>> FitLowerDirs(const WritableRootPaths& paths, OverlayMountApi api,
                                           bool idmapped) {
  std::vector<fs::path> lowers = paths.LowerDirs();
  if (Fits(lowers, paths, api, idmapped)) return lowers;
  const std::string what = "the image's " + std::to_string(lowers.size()) + " layers";
  if (lowers.size() < 2) {
    return Error(what + " cannot be mounted: a path is too long for overlayfs", ENAMETOOLONG);
  }
  // S16.3: the fewest bottom layers merged into one that make the stack
  // fit. Every merged directory's path has the same length (a chain id of
  // at least two layers is a sha256), so one stands for all.
  std::vector<fs::path> bottom(lowers.end() - 2, lowers.end());
  auto sample = image::MergedTreePath(bottom, image::MergedTree::kLowerStack);
  if (!sample) return sample.take_error().Wrap(what + " do not fit one overlay mount");
  for (std::size_t k = 2; k <= lowers.size(); ++k) {
    std::vector<fs::path> candidate(lowers.begin(), lowers.end() - static_cast<std::ptrdiff_t>(k));
    candidate.push_back(*sample);
    if (!Fits(candidate, paths, api, idmapped)) continue;
    bottom.assign(lowers.end() - static_cast<std::ptrdiff_t>(k), lowers.end());
    auto merged = image::EnsureMergedTree(bottom, image::MergedTree::kLowerStack);
    if (!merged) return merged.take_error().Wrap(what);
    candidate.back() = *merged;
    return candidate;
  }
  return Error(what + " cannot be mounted: a path is too long for overlayfs", ENAMETOOLONG);
}

Status MountWritableRoot(const WritableRootPaths& paths, OverlayMountApi api,
                         const std::optional<RootIdmap>& idmap) {
  if (IsMountPoint(paths.merged)) {
    if (FilesystemType(paths.merged) == OVERLAYFS_SUPER_MAGIC) return Ok();
    return Error(paths.merged.string() + " is already a mount point of another kind", EBUSY);
  }
  for (const auto* dir : {&paths.upper, &paths.work, &paths.merged}) {
    if (Status s = MakeDirs(*dir, 0755); !s) return s.error().Wrap("preparing the writable root");
  }
  auto userns = PrepareIdmap(paths, idmap);
  if (!userns) return userns.take_error().Wrap("preparing the writable root");
  if (api != OverlayMountApi::kMountData) {
    auto mounted = MountWithNewApi(paths, api == OverlayMountApi::kAuto, *userns);
    if (!mounted) return mounted.take_error();
    if (*mounted) return Ok();
    if (api == OverlayMountApi::kNewApi) {
      return Error(Describe(paths, paths.LowerDirs().size()) +
                       ": this kernel has no overlayfs \"lowerdir+\" (Linux 6.8)",
                   ENOSYS);
    }
  }
  return MountWithData(paths, *userns);
}

Status RemoveWritableRoot(const WritableRootPaths& paths) {
  if (Status s = Unmount(paths.merged); !s) return s;
  std::error_code ec;
  // An idmapped lower still attached: its mounter died mid-mount (S20.21).
  const fs::path idmapped = IdmappedLowersDir(paths);
  for (const auto& entry : fs::directory_iterator(idmapped, ec)) DetachIdmappedLower(entry.path());
  if (::rmdir(idmapped.c_str()) != 0 && errno != ENOENT) {
    return Error::FromErrno("removing " + idmapped.string());
  }
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
