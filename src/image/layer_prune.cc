// `images prune` over the layer store (S16.2): with store.lock held
// exclusively no ingest or merge is in progress, so every scratch entry
// is a crashed one's; an image goes only when its lock can be taken
// exclusively without waiting (no pod holds it), and a layer or merged
// tree only when no remaining image uses it.
#include <sys/file.h>
#include <sys/stat.h>

#include <set>
#include <unordered_set>

#include "common/file_io.h"
#include "image/layer_merge.h"
#include "image/layer_store.h"
#include "image/store_paths.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

struct InodeKey {
  dev_t dev;
  ino_t ino;
  bool operator==(const InodeKey&) const = default;
};
struct InodeHash {
  std::size_t operator()(const InodeKey& k) const { return std::hash<uint64_t>()(k.ino ^ k.dev); }
};

bool LockExclusiveNow(const fs::path& lock_path, Fd& out) {
  auto lock = LockNamedFile(lock_path, LOCK_EX | LOCK_NB, /*create=*/true);
  if (!lock) return false;
  out = std::move(*lock);
  return true;
}

class Pruner {
 public:
  Pruner(const fs::path& root, LayerStore::PruneReport& report) : root_(root), report_(report) {}

  Status Remove(const fs::path& path) {
    report_.bytes_freed += LayerStore::DiskUsage(path);
    std::error_code ec;
    fs::remove_all(path, ec);
    if (ec) return Error("removing " + path.string() + ": " + ec.message(), ec.value());
    return Ok();
  }

  // Entries of STORE/<kind>/<alg>/: scratch always, `<hex>` unless
  // `keep`, with their .lock and .json files.
  Status Sweep(std::string_view kind, const std::set<std::string>& keep,
               std::vector<std::string>& removed) {
    std::error_code ec;
    for (const auto& alg : fs::directory_iterator(root_ / kind, ec)) {
      std::vector<fs::path> entries;
      for (const auto& e : fs::directory_iterator(alg.path(), ec)) entries.push_back(e.path());
      for (const fs::path& p : entries) {
        const std::string name = p.filename().string();
        if (name.starts_with('.') && name.ends_with(store::kPartialSuffix)) {
          if (auto s = Remove(p); !s) return s;
          ++report_.scratch_removed;
          continue;
        }
        auto digest = ParseDigest(alg.path().filename().string() + ":" + p.stem().string());
        if (!digest || keep.count(digest->ToString())) continue;
        if (p.extension().empty()) {
          if (auto s = Remove(p); !s) return s;
          removed.push_back(digest->ToString());
        } else {
          fs::remove(p, ec);  // the .lock or .json of one gone
        }
      }
    }
    return Ok();
  }

  // The whole-image entries of the cache the store replaced,
  // STORE/<alg>/<hex>/rootfs beside <hex>.lock, held as images are.
  Status SweepOldCache() {
    std::error_code ec;
    for (const char* alg : {"sha256", "sha512"}) {
      std::vector<fs::path> entries;
      for (const auto& e : fs::directory_iterator(root_ / alg, ec)) entries.push_back(e.path());
      for (const fs::path& p : entries) {
        if (p.has_extension() && !p.filename().string().starts_with('.')) continue;
        Fd lock;
        const fs::path lock_path = p.parent_path() / (p.filename().string() + ".lock");
        if (!LockExclusiveNow(lock_path, lock)) continue;
        if (auto s = Remove(p); !s) return s;
        fs::remove(lock_path, ec);
        if (!p.filename().string().starts_with('.')) {
          report_.images_removed.push_back(std::string(alg) + ":" + p.filename().string());
        }
      }
      ::rmdir((root_ / alg).c_str());
    }
    return Ok();
  }

 private:
  fs::path root_;
  LayerStore::PruneReport& report_;
};

}  // namespace

uint64_t LayerStore::DiskUsage(const fs::path& dir) {
  std::unordered_set<InodeKey, InodeHash> seen;
  uint64_t bytes = 0;
  auto add = [&](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return;
    if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) && !seen.insert({st.st_dev, st.st_ino}).second) {
      return;
    }
    bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  };
  std::error_code ec;
  add(dir);
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       it != end; it.increment(ec)) {
    if (ec) break;
    add(it->path());
  }
  return bytes;
}

Result<LayerStore::PruneReport> LayerStore::Prune() {
  PruneReport report;
  // Waits for ingests and merges in progress; none starts until we are done.
  auto store_lock = LockNamedFile(root_ / store::kStoreLock, LOCK_EX, /*create=*/true);
  if (!store_lock) return store_lock.take_error().Wrap("pruning the image store");
  auto records_lock = LockNamedFile(root_ / store::kRecordsLock, LOCK_EX, /*create=*/true);
  if (!records_lock) return records_lock.take_error().Wrap("pruning the image store");
  auto names = store::ReadNames(root_);
  if (!names) return names.take_error().Wrap("pruning the image store");
  Pruner pruner(root_, report);

  std::set<std::string> kept_images, kept_layers, kept_chains;
  for (const ImageRecord& record : List()) {
    auto digest = ParseDigest(record.manifest_digest);
    if (!digest) continue;
    Fd lock;
    if (!LockExclusiveNow(store::EntryPath(root_, store::kImages, *digest, ".lock"), lock)) {
      // S16.2: a pod holds it, and so every layer and merge it stacks.
      kept_images.insert(record.manifest_digest);
      for (const auto& id : record.diff_ids) kept_layers.insert(id.ToString());
      for (std::size_t n = 1; n <= record.diff_ids.size(); ++n) {
        std::vector<Digest> prefix(record.diff_ids.begin(),
                                   record.diff_ids.begin() + static_cast<std::ptrdiff_t>(n));
        kept_chains.insert(ChainId(prefix).ToString());
      }
      continue;
    }
    // Removed while we hold its lock: a pod locking it after us finds no
    // record and loads the image again.
    std::error_code ec;
    fs::remove(store::EntryPath(root_, store::kImages, *digest, ".json"), ec);
    if (ec) return Error("removing image " + record.manifest_digest + ": " + ec.message());
    for (auto it = names->begin(); it != names->end();) {
      it = it->second == record.manifest_digest ? names->erase(it) : std::next(it);
    }
    report.images_removed.push_back(record.manifest_digest);
  }
  if (auto s = store::WriteNames(root_, *names); !s) return s.take_error();
  std::vector<std::string> images_gone;  // lock files of records gone before
  if (auto s = pruner.Sweep(store::kImages, kept_images, images_gone); !s) return s.take_error();
  if (auto s = pruner.Sweep(store::kLayers, kept_layers, report.layers_removed); !s) {
    return s.take_error();
  }
  for (std::string_view kind : {store::kFlat, store::kTrees}) {
    if (auto s = pruner.Sweep(kind, kept_chains, report.merged_removed); !s) return s.take_error();
  }
  if (auto s = pruner.SweepOldCache(); !s) return s.take_error();
  return report;
}

}  // namespace podvisor::image
