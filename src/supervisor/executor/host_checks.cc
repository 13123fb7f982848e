#include "supervisor/executor/host_checks.h"

#include <linux/capability.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <system_error>

#include "oci/capabilities.h"

namespace podvisor::supervisor::executor {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The fields of a mountinfo line that matter here.
struct MountLine {
  std::string mount_point;
  std::string mount_options;
  std::string fstype;
};

std::vector<MountLine> ParseMountinfo(std::string_view mountinfo) {
  std::vector<MountLine> out;
  std::istringstream in{std::string(mountinfo)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, field;
    MountLine m;
    fields >> id >> parent >> dev >> root >> m.mount_point >> m.mount_options;
    while (fields >> field && field != "-") {
    }
    fields >> m.fstype;
    if (!m.fstype.empty()) out.push_back(std::move(m));
  }
  return out;
}

bool HasOption(const std::string& options, std::string_view option) {
  std::istringstream in(options);
  for (std::string o; std::getline(in, o, ',');) {
    if (o == option) return true;
  }
  return false;
}

std::string KernelRelease() {
  struct utsname u {};
  return ::uname(&u) == 0 ? u.release : "?";
}

// A trial overlay mount: the kernel loads the overlay module on demand
// where it can (tier 4's initramfs relies on that), so absence from
// /proc/filesystems alone is not proof.
Status TrialOverlayMount(const std::filesystem::path& scratch_dir) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir, ec);
  if (ec) return Error("making " + scratch_dir.string() + ": " + ec.message(), ec.value());
  std::string tmpl = (scratch_dir / ".overlay-check.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Error::FromErrno("making " + tmpl);
  std::filesystem::path dir = tmpl;
  for (const char* sub : {"lower", "upper", "work", "merged"}) {
    std::filesystem::create_directory(dir / sub, ec);
  }
  std::string data = "lowerdir=" + (dir / "lower").string() +
                     ",upperdir=" + (dir / "upper").string() +
                     ",workdir=" + (dir / "work").string();
  int err = 0;
  if (::mount("overlay", (dir / "merged").c_str(), "overlay", MS_NODEV, data.c_str()) != 0) {
    err = errno;
  } else {
    ::umount2((dir / "merged").c_str(), MNT_DETACH);
  }
  std::filesystem::remove_all(dir, ec);
  if (err != 0) return Error::FromErrno("a trial overlay mount in " + scratch_dir.string(), err);
  return Ok();
}

Status CheckOverlay(const std::filesystem::path& scratch_dir) {
  // The instances' upper directories live in the state directory, and an
  // overlay cannot be the upper layer of another: every create would fail.
  std::filesystem::path existing = scratch_dir;
  while (!existing.empty() && !std::filesystem::exists(existing)) existing = existing.parent_path();
  struct statfs fs {};
  if (!existing.empty() && ::statfs(existing.c_str(), &fs) == 0 &&
      static_cast<int64_t>(fs.f_type) == OVERLAYFS_SUPER_MAGIC) {
    return Error("the state directory " + scratch_dir.string() +
                 " is on overlayfs, which cannot hold the containers' writable layers; use "
                 "--state-dir on tmpfs or a disk filesystem");
  }
  if (FilesystemListed(ReadFile("/proc/filesystems"), "overlay")) return Ok();
  if (auto s = TrialOverlayMount(scratch_dir); !s) {
    return Error("overlayfs is not available (kernel " + KernelRelease() +
                 ": not in /proc/filesystems, and " + s.error().message() +
                 "); every container's writable root is an overlay: load it with `modprobe "
                 "overlay`, or use a kernel built with CONFIG_OVERLAY_FS");
  }
  return Ok();
}

}  // namespace

const std::vector<RequiredCapability>& RequiredCapabilities() {
  static const std::vector<RequiredCapability> caps = {
      {CAP_SYS_ADMIN, "CAP_SYS_ADMIN",
       "the pod's namespaces and overlay roots, the runtime's mounts"},
      {CAP_NET_ADMIN, "CAP_NET_ADMIN", "the pod network namespace's loopback"},
      {CAP_SETPCAP, "CAP_SETPCAP", "the runtime dropping the containers' capabilities"},
      {CAP_MKNOD, "CAP_MKNOD", "the runtime making the containers' /dev nodes"},
      {CAP_SYS_CHROOT, "CAP_SYS_CHROOT", "the runtime's --no-pivot root"},
      {CAP_SETUID, "CAP_SETUID", "containers' runAsUser"},
      {CAP_SETGID, "CAP_SETGID", "containers' runAsGroup and supplementalGroups"},
      {CAP_KILL, "CAP_KILL", "signals to containers of other users"},
      {CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE", "the runtime's state and the instances' files"},
      {CAP_CHOWN, "CAP_CHOWN", "volume ownership (fsGroup)"},
      {CAP_FOWNER, "CAP_FOWNER", "volume permissions (fsGroup)"},
  };
  return caps;
}

std::vector<std::string> MissingCapabilities(std::string_view proc_status) {
  uint64_t effective = 0;
  std::istringstream in{std::string(proc_status)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      effective = std::strtoull(line.c_str() + 7, nullptr, 16);
      break;
    }
  }
  std::vector<std::string> missing;
  for (const auto& cap : RequiredCapabilities()) {
    if ((effective & (uint64_t{1} << cap.number)) == 0) missing.emplace_back(cap.name);
  }
  return missing;
}

std::vector<std::string> ReadOnlyCgroupMounts(std::string_view mountinfo) {
  std::vector<std::string> out;
  for (const auto& m : ParseMountinfo(mountinfo)) {
    if ((m.fstype == "cgroup" || m.fstype == "cgroup2") && HasOption(m.mount_options, "ro")) {
      out.push_back(m.mount_point);
    }
  }
  return out;
}

bool MountinfoRootIsInitramfs(std::string_view mountinfo) {
  for (const auto& m : ParseMountinfo(mountinfo)) {
    if (m.mount_point == "/" && m.fstype == "rootfs") return true;
  }
  return false;
}

bool RootIsInitramfs() {
  return MountinfoRootIsInitramfs(ReadFile("/proc/self/mountinfo"));
}

bool FilesystemListed(std::string_view proc_filesystems, std::string_view type) {
  std::istringstream in{std::string(proc_filesystems)};
  for (std::string line; std::getline(in, line);) {
    // "nodev\toverlay" or "\text4"
    auto tab = line.rfind('\t');
    if (line.substr(tab == std::string::npos ? 0 : tab + 1) == type) return true;
  }
  return false;
}

Status CheckHostForPod(const HostCheckOptions& options) {
  std::vector<std::string> causes;
  if (options.privileged) {
    if (auto missing = MissingCapabilities(ReadFile("/proc/self/status")); !missing.empty()) {
      std::string why;
      for (const auto& cap : RequiredCapabilities()) {
        for (const auto& name : missing) {
          if (name == cap.name) why += std::string(why.empty() ? "" : "; ") + name + ": " + cap.why;
        }
      }
      causes.push_back("missing capabilities " + Join(missing) + " (" + why +
                       "); as a container's process podvisor needs them all (README "
                       "\"Embedding podvisor\")");
    }
    if (auto ro = ReadOnlyCgroupMounts(ReadFile("/proc/self/mountinfo")); !ro.empty()) {
      causes.push_back("the cgroup filesystem is mounted read-only at " + Join(ro) +
                       ", so the runtime cannot make the containers' cgroups; mount it read-write");
    }
  }
  if (options.overlay) {
    if (auto s = CheckOverlay(options.scratch_dir); !s) causes.push_back(s.error().message());
  }
  if (options.pod != nullptr) {
    if (auto s = oci::CheckCapabilitiesAvailable(*options.pod, oci::CurrentBoundingCapabilities());
        !s) {
      causes.push_back(s.error().message() + " (S14.35)");
    }
  }
  if (causes.empty()) return Ok();
  std::string message = "this host cannot run the pod: ";
  for (std::size_t i = 0; i < causes.size(); ++i) message += (i ? "; and " : "") + causes[i];
  return Error(message);
}

}  // namespace podvisor::supervisor::executor
