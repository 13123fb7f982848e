// Reading a bundle image: recognising it, and unpacking its layer into a
// private directory with layer_unpack.h, the code every image goes
// through (digests checked, no entry outside the root).
#include "image/bundle_image.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "image/bundle_fs.h"
#include "image/layer_unpack.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

Result<Fd> LockDir(const fs::path& dir, bool wait) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening " + dir.string());
  if (::flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    return Error::FromErrno("locking " + dir.string());
  }
  return fd;
}

}  // namespace

bool LooksLikeBundleImage(const fs::path& dir) {
  std::error_code ec;
  return IsOciLayout(dir) && !fs::exists(dir / "pod.yaml", ec) && !fs::exists(dir / "pod.json", ec);
}

Result<ResolvedLayout> ResolveBundleImage(const fs::path& dir) {
  auto layout = ResolveLayout(dir, "", HostPlatform());
  if (!layout) return layout.take_error();
  nlohmann::json config = nlohmann::json::parse(layout->config_json, nullptr, false);
  std::string value;
  if (config.is_object()) {
    auto labels =
        config.value("config", nlohmann::json::object()).value("Labels", nlohmann::json());
    if (labels.is_object() && labels.contains(kBundleLabel) && labels[kBundleLabel].is_string()) {
      value = labels[kBundleLabel].get<std::string>();
    }
  }
  if (value != kBundleLabelValue) {
    return Error(
        "OCI layout " + dir.string() + " is an image, not a podvisor bundle: its config (" +
            layout->config.digest.ToString() + ") has no label " + std::string(kBundleLabel) + "=" +
            std::string(kBundleLabelValue) + " (`podvisor pack` makes bundle images)",
        EINVAL);
  }
  return layout;
}

UnpackedBundle::UnpackedBundle(UnpackedBundle&& other) noexcept
    : dir_(std::exchange(other.dir_, {})), lock_(std::move(other.lock_)) {}

UnpackedBundle::~UnpackedBundle() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(dir_, ec);
  // The parent (STATE/.bundles) goes with its last bundle.
  ::rmdir(dir_.parent_path().c_str());
}

Result<UnpackedBundle> UnpackBundleImage(const fs::path& layout_dir, const fs::path& parent) {
  auto layout = ResolveBundleImage(layout_dir);
  if (!layout) return layout.take_error();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Error("creating " + parent.string() + ": " + ec.message(), ec.value());
  // ApplyLayer wants a root without symlinks on the way.
  fs::path real_parent = fs::canonical(parent, ec);
  if (ec) return Error("resolving " + parent.string() + ": " + ec.message(), ec.value());
  fs::path dir =
      real_parent / (layout->manifest.digest.hex.substr(0, 12) + "-" + std::to_string(::getpid()));
  // A leftover of an earlier run with the same pid (after a reboot of a
  // persistent state directory) is ours to replace.
  fs::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) return Error::FromErrno("creating " + dir.string());
  auto lock = LockDir(dir, /*wait=*/true);
  if (!lock) {
    fs::remove_all(dir, ec);
    return lock.take_error();
  }
  UnpackedBundle bundle(dir, std::move(*lock));
  const std::string what = "bundle image " + layout_dir.string();
  auto budget = LayerBudget::FromEnvironment();
  if (!budget) return budget.take_error();
  for (const auto& layer : layout->layers) {
    if (auto s = ApplyLayer(layout_dir, layer, dir, *budget); !s) {
      return s.take_error().Wrap("unpacking " + what);
    }
  }
  // S14.5: the tree is registry content that run, validate and the
  // executor then read as plain paths (pod.yaml, config/, images/<ref>/
  // and its blobs, seccomp/), and runc follows a rootfs symlink. Rather
  // than confine every one of those readers, the tree is allowed to hold
  // nothing a plain open could follow out of it: directories and regular
  // files only. It is private (0700) and nobody writes it after this.
  if (auto s = CheckConfinedTree(dir, what, budget->max_entries); !s) return s.take_error();
  return bundle;
}

int SweepUnpackedBundles(const fs::path& parent) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    // The name ends in its supervisor's pid. A live process of that pid
    // may be the supervisor between its mkdir and its flock, so only a
    // dead pid's directory is a candidate; a live supervisor holds its
    // directory's lock, which covers a pid reused since.
    std::string name = entry.path().filename();
    std::size_t dash = name.rfind('-');
    pid_t pid =
        dash == std::string::npos ? 0 : static_cast<pid_t>(std::atol(name.c_str() + dash + 1));
    if (pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM)) continue;
    if (auto lock = LockDir(entry.path(), /*wait=*/false); lock) {
      fs::remove_all(entry.path(), ec);
      if (!ec) ++removed;
    }
  }
  // The parent goes with its last bundle, as after a clean run.
  ::rmdir(parent.c_str());
  return removed;
}

}  // namespace podvisor::image
