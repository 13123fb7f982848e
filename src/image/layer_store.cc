// The layer store's layers (layer_store.h): ingesting one from a blob
// stream, finding them, and the locks that keep prune away from what is
// being added or used (S16.1-S16.3).
#include "image/layer_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/file_io.h"
#include "common/mounts.h"
#include "image/store_paths.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

// The budget an image's concurrent ingests share (IngestLayer): each
// takes what is left when it starts and settles under this lock when done.
std::mutex budget_mutex;

Status WriteLayerSize(const fs::path& file, const Digest& blob, const LayerStreamSize& size) {
  nlohmann::json doc = {{"blob", blob.ToString()},
                        {"compressed_size", size.compressed},
                        {"unpacked_size", size.uncompressed}};
  return WriteFileAtomic(file, doc.dump() + "\n", 0600, Durability::kUnsynced);
}

}  // namespace

Result<LayerStore> LayerStore::Open(const fs::path& root) {
  for (const fs::path& dir : {root, root / store::kLayers, root / store::kImages}) {
    if (auto s = MakeDirs(dir, 0700); !s) return s.take_error().Wrap("opening the image store");
  }
  return LayerStore(root);
}

fs::path LayerStore::LayerDir(const Digest& diff_id) const {
  return store::EntryPath(root_, store::kLayers, diff_id);
}

bool LayerStore::HasLayer(const Digest& diff_id) const {
  struct stat st {};
  return ::lstat(LayerDir(diff_id).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<Fd> LayerStore::HoldForAdding() {
  auto lock = LockNamedFile(root_ / store::kStoreLock, LOCK_SH, /*create=*/true);
  if (!lock) return lock.take_error().Wrap("holding the image store");
  return lock;
}

std::optional<LayerStreamSize> LayerStore::LayerSize(const Digest& diff_id) const {
  if (!HasLayer(diff_id)) return std::nullopt;
  auto text = ReadFileBounded(store::EntryPath(root_, store::kLayers, diff_id, ".json"));
  if (!text) return std::nullopt;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  LayerStreamSize size;
  size.compressed = doc.value("compressed_size", uint64_t{0});
  size.uncompressed = doc.value("unpacked_size", uint64_t{0});
  return size;
}

Status LayerStore::IngestLayer(int blob_fd, const LayerDescriptor& layer, LayerBudget& budget,
                               const IngestProgress& progress) {
  const uint64_t drain_limit =
      layer.blob.size >= 0 ? static_cast<uint64_t>(layer.blob.size) + 1 : budget.max_bytes;
  if (!layer.diff_id) {
    return Error("layer " + layer.blob.digest.ToString() + ": no diff id to store it under");
  }
  const Digest& id = *layer.diff_id;
  const std::string what = "storing layer " + id.ToString();
  if (HasLayer(id)) {
    store::DrainFd(blob_fd, drain_limit);
    return Ok();
  }
  auto hold = HoldForAdding();
  if (!hold) return hold.take_error().Wrap(what);
  if (auto s = MakeDirs(root_ / store::kLayers / id.algorithm, 0700); !s) {
    return s.take_error().Wrap(what);
  }
  // Blocks only while another thread or process ingests this very layer.
  auto lock = LockNamedFile(store::EntryPath(root_, store::kLayers, id, ".lock"), LOCK_EX,
                            /*create=*/true);
  if (!lock) return lock.take_error().Wrap(what);
  if (HasLayer(id)) {  // the other one finished it
    store::DrainFd(blob_fd, drain_limit);
    return Ok();
  }
  // What a crashed ingest of this layer left: ours, we hold its lock.
  const fs::path scratch = store::ScratchPath(root_, store::kLayers, id);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (ec) return Error(what + ": removing " + scratch.string() + ": " + ec.message(), ec.value());
  if (::mkdir(scratch.c_str(), 0755) != 0) return Error::FromErrno(what + ": " + scratch.string());
  auto fail = [&](Error e) -> Status {
    fs::remove_all(scratch, ec);
    return e;
  };
  // The unpacker wants a root without symlinks on the way.
  const fs::path real = fs::canonical(scratch, ec);
  if (ec) return fail(Error(what + ": resolving " + scratch.string() + ": " + ec.message()));

  LayerBudget mine;
  {
    std::lock_guard<std::mutex> guard(budget_mutex);
    mine = budget;
  }
  const uint64_t entries_before = mine.entries;
  auto size = UnpackLayerStream(blob_fd, layer, real, LayerFormat::kOverlay, mine, progress);
  if (!size) return fail(size.take_error());
  {
    std::lock_guard<std::mutex> guard(budget_mutex);
    if (size->uncompressed > budget.max_bytes - std::min(budget.bytes, budget.max_bytes)) {
      return fail(Error("layer " + id.ToString() + ": the image unpacks to more than " +
                            std::to_string(budget.max_bytes) + " bytes (S14.9: the bound is " +
                            LayerBudget::kMaxBytesVariable + ")",
                        EFBIG));
    }
    budget.bytes += size->uncompressed;
    budget.entries += mine.entries - entries_before;
  }
  if (auto s = WriteLayerSize(store::EntryPath(root_, store::kLayers, id, ".json"),
                              layer.blob.digest, *size);
      !s) {
    return fail(s.take_error().Wrap(what));
  }
  // On a disk-backed state dir the rename must not reach the disk before
  // the files it publishes (tmpfs: a no-op).
  if (Fd dir(::open(scratch.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dir) {
    ::syncfs(dir.get());
  }
  if (::rename(scratch.c_str(), LayerDir(id).c_str()) != 0) {
    return fail(Error::FromErrno(what + ": publishing " + LayerDir(id).string()));
  }
  return Ok();
}

Result<std::vector<fs::path>> LayerStore::LowerDirs(const ImageRecord& record) const {
  std::vector<fs::path> dirs;
  for (auto it = record.diff_ids.rbegin(); it != record.diff_ids.rend(); ++it) {
    if (!HasLayer(*it)) {
      return Error("image " + record.manifest_digest + ": layer " + it->ToString() +
                       " is missing from the store " + root_.string(),
                   ENOENT);
    }
    dirs.push_back(LayerDir(*it));
  }
  return dirs;
}

Result<std::optional<Fd>> LayerStore::HoldImage(std::string_view manifest_digest) const {
  auto digest = ParseDigest(manifest_digest);
  if (!digest) return digest.take_error();
  if (auto s = MakeDirs(root_ / store::kImages / digest->algorithm, 0700); !s) {
    return s.take_error();
  }
  auto lock = LockNamedFile(store::EntryPath(root_, store::kImages, *digest, ".lock"), LOCK_SH,
                            /*create=*/true);
  if (!lock) return lock.take_error().Wrap("holding image " + std::string(manifest_digest));
  struct stat st {};
  if (::lstat(store::EntryPath(root_, store::kImages, *digest, ".json").c_str(), &st) != 0) {
    return std::optional<Fd>();
  }
  return std::optional<Fd>(std::move(*lock));
}

namespace store {

void DrainFd(int fd, uint64_t limit) {
  std::vector<char> buf(1 << 16);
  uint64_t total = 0;
  while (total <= limit) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace store

}  // namespace podvisor::image
