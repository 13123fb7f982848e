#include "image/image_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/fd.h"
#include "common/pod_dir.h"
#include "image/layer_unpack.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

Error OverBudget(const LayerBudget& budget) {
  return Error("the image unpacks to more than " + std::to_string(budget.max_bytes) +
                   " bytes (S14.9: the bound is " + LayerBudget::kMaxBytesVariable + ")",
               EFBIG);
}

}  // namespace

fs::path ImageCacheDir(const fs::path& state_dir) {
  return state_dir / StateDirEntry::kImageCache;
}

Result<std::optional<Fd>> HoldEntry(const fs::path& cache_dir, std::string_view manifest_digest) {
  auto store = LayerStore::Open(cache_dir);
  if (!store) return store.take_error();
  return store->HoldImage(manifest_digest);
}

Result<ImageRecord> StoreLayout(LayerStore& store, const ResolvedLayout& layout) {
  // S16.2: the layers added are not pruned before the record names them.
  auto hold = store.HoldForAdding();
  if (!hold) return hold.take_error();
  auto budget = LayerBudget::FromEnvironment();
  if (!budget) return budget.take_error();
  ImageRecord record;
  record.manifest_digest = layout.manifest.digest.ToString();
  record.config_json = layout.config_json;
  for (const LayerDescriptor& layer : layout.layers) {
    const Digest& id = *layer.diff_id;  // ResolveLayout always sets it (S14.8)
    record.diff_ids.push_back(id);
    record.compressed_size += static_cast<uint64_t>(std::max<int64_t>(layer.blob.size, 0));
    if (!store.HasLayer(id)) {
      fs::path path = BlobPath(layout.dir, layer.blob.digest);
      Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) {
        return Error::FromErrno("blob " + layer.blob.digest.ToString() +
                                " is missing: " + path.string());
      }
      if (auto s = store.IngestLayer(fd.get(), layer, *budget); !s) return s.take_error();
    } else if (auto size = store.LayerSize(id)) {
      // S14.9 bounds the image, whichever of its layers were stored before.
      if (size->uncompressed > budget->max_bytes - std::min(budget->bytes, budget->max_bytes)) {
        return OverBudget(*budget);
      }
      budget->bytes += size->uncompressed;
    }
  }
  record.unpacked_size = budget->bytes;
  if (auto s = store.PutImage(record); !s) return s.take_error();
  auto stored = store.FindByManifest(record.manifest_digest);
  if (!stored) return Error("image " + record.manifest_digest + " vanished from the store");
  return std::move(*stored);
}

Result<Image> ImageFromStore(const LayerStore& store, const ImageRecord& record,
                             std::string_view reference) {
  const std::string what = "image \"" + std::string(reference) + "\"";
  auto config = ParseImageConfig(record.config_json, "config of " + record.manifest_digest);
  if (!config) return config.take_error().Wrap(what);
  auto layers = store.LowerDirs(record);
  if (!layers) return layers.take_error().Wrap(what);
  Image image;
  image.reference = std::string(reference);
  image.layers = std::move(*layers);
  image.config = std::move(*config);
  image.manifest_digest = record.manifest_digest;
  if (!record.repo_digests.empty()) image.image_id = record.repo_digests.front();
  return image;
}

Result<Image> LoadOciLayoutImage(const fs::path& dir, std::string_view reference,
                                 const fs::path& cache_dir) {
  std::string what = "image \"" + std::string(reference) + "\"";
  if (cache_dir.empty()) {
    return Error(what + ": " + dir.string() +
                 " is an OCI image layout, and no image store to unpack it into was given");
  }
  auto layout = ResolveLayout(dir, TagOf(reference), HostPlatform());
  if (!layout) return layout.take_error().Wrap(what);
  auto store = LayerStore::Open(cache_dir);
  if (!store) return store.take_error().Wrap(what);
  auto record = StoreLayout(*store, *layout);
  if (!record) return record.take_error().Wrap(what);
  auto image = ImageFromStore(*store, *record, reference);
  if (!image) return image.take_error();
  image->dir = dir;
  // A bundle's layout has no repository digest: its id is the manifest's.
  image->image_id.clear();
  return image;
}

}  // namespace podvisor::image
