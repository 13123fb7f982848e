// Images of the layer store (layer_store.h, S16) as pods use them: an OCI
// image layout of a bundle is ingested layer by layer from its blob files
// (a layer already in the store, from another image or a pull, is not
// unpacked again) and recorded with no names (a bundle's images are not
// registry names); a record the registry puller made becomes an Image the
// same way. Either Image stacks its layers (Image::layers) and has no
// rootfs.
//
// STORE is STATE/.images (".images" cannot collide with a pod: pod names
// are DNS labels) and lives as long as the state directory (/run: until
// reboot) or until `podvisor images prune`.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"
#include "image/image.h"
#include "image/layer_store.h"
#include "image/oci_layout.h"

namespace podvisor::image {

// The store's directory for a state directory: STATE/.images.
std::filesystem::path ImageCacheDir(const std::filesystem::path& state_dir);

// A shared lock on the image `manifest_digest` ("sha256:<hex>") of the
// store at `cache_dir` (LayerStore::HoldImage), held by a pod for as long
// as its containers may use its layers: `podvisor images prune` removes
// only images it can lock exclusively. nullopt when the image is gone
// (pruned between loading and holding it): load the image again.
Result<std::optional<Fd>> HoldEntry(const std::filesystem::path& cache_dir,
                                    std::string_view manifest_digest);

// Ingests the layers of `layout` missing from `store` from its blob files
// and records the image (no names). Returns the record as stored.
Result<ImageRecord> StoreLayout(LayerStore& store, const ResolvedLayout& layout);

// The Image of a record of `store`: its layers as lower directories, its
// config, its manifest digest, and as image_id its first repository
// digest (empty for a bundle's image: the manifest digest is its id).
Result<Image> ImageFromStore(const LayerStore& store, const ImageRecord& record,
                             std::string_view reference);

// LoadImage's path for a directory that is an OCI layout: resolve the
// manifest for `reference`'s tag and this host, store it (StoreLayout),
// and return its Image (dir set to `dir`).
Result<Image> LoadOciLayoutImage(const std::filesystem::path& dir, std::string_view reference,
                                 const std::filesystem::path& cache_dir);

}  // namespace podvisor::image
