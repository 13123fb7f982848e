#include "image/image_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "image/layer_unpack.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

// A plain write, not common/file_io.h's WriteFileAtomic: the files go into
// a scratch directory that only its rename below publishes, whole.
Status WriteFile(const fs::path& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("creating " + path.string());
  while (!data.empty()) {
    ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("writing " + path.string());
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Ok();
}

// S14.7: what makes an entry whole. rename(2) publishes only a scratch
// directory whose unpack returned success, and this is checked again on
// every use, so an entry that lost its rootfs (a layer that got to remove
// it, a crash of an older podvisor, a hand edit) is unpacked again instead
// of handed to the runtime.
bool IsCompleteEntry(const fs::path& entry) {
  struct stat st {};
  return ::lstat((entry / "rootfs").c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         ::lstat((entry / "image.json").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status Unpack(const ResolvedLayout& layout, const fs::path& scratch) {
  if (auto s = MakeDirs(scratch / "rootfs", 0755); !s) return s;
  // ApplyLayer wants a root without symlinks on the way.
  std::error_code ec;
  fs::path root = fs::canonical(scratch / "rootfs", ec);
  if (ec)
    return Error("resolving " + (scratch / "rootfs").string() + ": " + ec.message(), ec.value());
  auto budget = LayerBudget::FromEnvironment();
  if (!budget) return budget.take_error();
  for (const auto& layer : layout.layers) {
    if (auto s = ApplyLayer(layout.dir, layer, root, *budget); !s) return s;
  }
  if (auto s = WriteFile(scratch / "image.json", layout.config_json); !s) return s;
  if (!IsCompleteEntry(scratch)) return Error("the unpacked " + root.string() + " is gone");
  // On a disk-backed state dir the rename below must not reach the disk
  // before the files it publishes (tmpfs: a no-op).
  Fd dir(::open(scratch.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::syncfs(dir.get());
  return Ok();
}

}  // namespace

fs::path ImageCacheDir(const fs::path& state_dir) {
  return state_dir / StateDirEntry::kImageCache;
}

Result<fs::path> EnsureUnpacked(const fs::path& cache_dir, const ResolvedLayout& layout) {
  const Digest& digest = layout.manifest.digest;
  std::string what = "unpacking manifest " + digest.ToString();
  fs::path base = cache_dir / digest.algorithm;
  fs::path entry = base / digest.hex;
  std::error_code ec;
  if (IsCompleteEntry(entry)) return entry;
  if (auto s = MakeDirs(base, 0700); !s) return s.take_error().Wrap(what);

  // Blocks only while another podvisor unpacks this very image, before
  // either has started a container.
  fs::path lock_path = base / (digest.hex + ".lock");
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) return Error::FromErrno(what + ": opening " + lock_path.string());
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return Error::FromErrno(what + ": locking " + lock_path.string());
  }
  if (IsCompleteEntry(entry)) return entry;  // the other one finished it
  // Incomplete: nobody can be using it (HoldEntry finds no rootfs to run),
  // and we hold the lock that every unpacker of it takes.
  fs::remove_all(entry, ec);
  if (ec) return Error(what + ": removing " + entry.string() + ": " + ec.message(), ec.value());

  fs::path scratch = base / ("." + digest.hex + ".partial");
  fs::remove_all(scratch, ec);  // a crashed unpack's; we hold the lock
  if (ec) return Error(what + ": removing " + scratch.string() + ": " + ec.message(), ec.value());
  if (auto s = MakeDirs(scratch, 0700); !s) return s.take_error().Wrap(what);
  Status s = Unpack(layout, scratch);
  if (s && ::rename(scratch.c_str(), entry.c_str()) != 0) {
    s = Error::FromErrno("publishing " + entry.string());
  }
  if (!s) {
    fs::remove_all(scratch, ec);
    return s.take_error().Wrap(what);
  }
  return entry;
}

Result<std::optional<Fd>> HoldEntry(const fs::path& cache_dir, std::string_view manifest_digest) {
  const std::size_t colon = manifest_digest.find(':');
  if (colon == std::string_view::npos) return Error("bad digest " + std::string(manifest_digest));
  const fs::path base = cache_dir / std::string(manifest_digest.substr(0, colon));
  const std::string hex(manifest_digest.substr(colon + 1));
  const fs::path lock_path = base / (hex + ".lock");
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) return Error::FromErrno("opening " + lock_path.string());
  while (::flock(lock.get(), LOCK_SH) != 0) {
    if (errno != EINTR) return Error::FromErrno("locking " + lock_path.string());
  }
  std::error_code ec;
  if (!fs::is_directory(base / hex, ec)) return std::optional<Fd>();
  return std::optional<Fd>(std::move(lock));
}

Result<Image> LoadOciLayoutImage(const fs::path& dir, std::string_view reference,
                                 const fs::path& cache_dir) {
  std::string what = "image \"" + std::string(reference) + "\"";
  if (cache_dir.empty()) {
    return Error(what + ": " + dir.string() +
                 " is an OCI image layout, and no cache directory "
                 "to unpack it into was given");
  }
  auto layout = ResolveLayout(dir, TagOf(reference), HostPlatform());
  if (!layout) return layout.take_error().Wrap(what);
  auto entry = EnsureUnpacked(cache_dir, *layout);
  if (!entry) return entry.take_error().Wrap(what);
  auto config = ParseImageConfig(layout->config_json, "config " + layout->config.digest.ToString());
  if (!config) return config.take_error().Wrap(what);
  Image image;
  image.reference = std::string(reference);
  image.dir = dir;
  image.rootfs = *entry / "rootfs";
  image.config = std::move(*config);
  image.manifest_digest = layout->manifest.digest.ToString();
  return image;
}

}  // namespace podvisor::image
