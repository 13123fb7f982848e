#include "shim/rootfs.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>

#include "image/bundle_fs.h"
#include "image/layer_unpack.h"

namespace podvisor::shim {

MountCall ParseMountOptions(const std::vector<std::string>& options) {
  struct Flag {
    bool clear;
    unsigned long flag;
  };
  static const std::map<std::string, Flag> kFlags = {
      {"ro", {false, MS_RDONLY}},
      {"rw", {true, MS_RDONLY}},
      {"nosuid", {false, MS_NOSUID}},
      {"suid", {true, MS_NOSUID}},
      {"nodev", {false, MS_NODEV}},
      {"dev", {true, MS_NODEV}},
      {"noexec", {false, MS_NOEXEC}},
      {"exec", {true, MS_NOEXEC}},
      {"noatime", {false, MS_NOATIME}},
      {"atime", {true, MS_NOATIME}},
      {"nodiratime", {false, MS_NODIRATIME}},
      {"relatime", {false, MS_RELATIME}},
      {"strictatime", {false, MS_STRICTATIME}},
      {"sync", {false, MS_SYNCHRONOUS}},
      {"async", {true, MS_SYNCHRONOUS}},
      {"bind", {false, MS_BIND}},
      {"rbind", {false, MS_BIND | MS_REC}},
      {"defaults", {false, 0}},
  };
  MountCall call;
  for (const auto& option : options) {
    auto it = kFlags.find(option);
    if (it == kFlags.end()) {
      if (!call.data.empty()) call.data += ",";
      call.data += option;
      continue;
    }
    if (it->second.clear) {
      call.flags &= ~it->second.flag;
    } else {
      call.flags |= it->second.flag;
    }
  }
  call.bind = (call.flags & MS_BIND) != 0;
  call.read_only = (call.flags & MS_RDONLY) != 0;
  return call;
}

Status MountRootfs(const std::vector<RootfsMount>& mounts, const std::filesystem::path& target) {
  std::error_code ec;
  std::filesystem::create_directories(target, ec);
  if (ec) return Error("creating " + target.string() + ": " + ec.message());
  int mounted = 0;
  for (const auto& m : mounts) {
    MountCall call = ParseMountOptions(m.options);
    const bool bind = call.bind || m.type == "bind";
    unsigned long flags = call.flags;
    if (bind) flags |= MS_BIND;
    // A read-only bind takes two calls: MS_BIND ignores MS_RDONLY.
    int rc = ::mount(m.source.c_str(), target.c_str(), bind ? nullptr : m.type.c_str(),
                     bind ? (flags & (MS_BIND | MS_REC)) : flags,
                     call.data.empty() || bind ? nullptr : call.data.c_str());
    if (rc == 0 && bind && call.read_only) {
      rc = ::mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
      if (rc != 0) {
        int saved = errno;
        ::umount2(target.c_str(), MNT_DETACH);
        errno = saved;
      }
    }
    if (rc != 0) {
      Error err =
          Error::FromErrno("mounting " + m.type + " " + m.source + " at " + target.string());
      for (int i = 0; i < mounted; ++i) ::umount2(target.c_str(), MNT_DETACH);
      return err;
    }
    ++mounted;
  }
  // S14.5: the snapshot is a bundle image's layer as containerd unpacked
  // it, and `run` reads it as a plain bundle directory: it may hold
  // nothing a plain open would follow out of it, as run's own unpack of a
  // bundle image may not. An image with no pod.yaml or pod.json at all
  // (not even a link) is left to Create's clearer "not a podvisor bundle".
  struct stat st {};
  bool bundle = ::lstat((target / "pod.yaml").c_str(), &st) == 0 ||
                ::lstat((target / "pod.json").c_str(), &st) == 0;
  if (bundle) {
    if (auto s = image::CheckConfinedTree(target, "bundle image",
                                          image::LayerBudget::kDefaultMaxEntries);
        !s) {
      for (int i = 0; i < mounted; ++i) ::umount2(target.c_str(), MNT_DETACH);
      return s;
    }
  }
  return Ok();
}

Status UnmountRootfs(const std::filesystem::path& target) {
  // Stacked mounts come off one umount at a time; EINVAL means nothing
  // (more) is mounted there, ENOENT that the directory is gone.
  for (int i = 0; i < 64; ++i) {
    if (::umount2(target.c_str(), MNT_DETACH) != 0) {
      if (errno == EINVAL || errno == ENOENT) return Ok();
      return Error::FromErrno("unmounting " + target.string());
    }
  }
  return Error("unmounting " + target.string() + ": still mounted after 64 unmounts");
}

}  // namespace podvisor::shim
