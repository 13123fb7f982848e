// The image store (S16): each unpacked layer once, keyed by its diff id,
// and the images made of them, as containerd's overlayfs snapshotter and
// containers/storage keep them.
//
//   STORE/layers/sha256/<diff-id hex>/        one layer's tree in overlayfs's lower-directory
//                                             format (a whiteout is a 0/0 character device, an
//                                             opaque directory has trusted.overlay.opaque=y)
//   STORE/layers/sha256/<diff-id hex>.json    its sizes (written before the directory appears)
//   STORE/layers/sha256/<diff-id hex>.lock    held by the one ingesting it
//   STORE/layers/sha256/.<diff-id hex>.partial  the scratch of an ingest in progress (or crashed)
//   STORE/flat/sha256/<chain-id hex>/         the bottom layers of a stack too deep to mount,
//                                             merged (layer_merge.h)
//   STORE/trees/sha256/<chain-id hex>/        an image's layers merged into one writable tree,
//                                             the root of containers without their own overlay
//   STORE/images/sha256/<manifest hex>.json   an ImageRecord
//   STORE/images/sha256/<manifest hex>.lock   held shared by every pod using the image
//   STORE/names.json                          normalised reference -> manifest digest
//   STORE/records.lock                        held while a record or names.json is rewritten
//   STORE/store.lock                          shared while a pull or unpack adds to the store,
//                                             exclusive while `images prune` removes from it
//
// STORE is STATE/.images (".images" cannot collide with a pod: pod names
// are DNS labels). A layer or image appears only by rename(2) of a
// finished scratch entry, so a reader sees all of it or none; a layer is
// published only after both its blob digest and its diff id verified.
// Layers are never modified afterwards. Everything read from a layer is
// hostile (layer_unpack.h). The rules are S16.1-S16.3.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "image/digest.h"
#include "image/layer_unpack.h"
#include "image/oci_layout.h"

namespace podvisor::image {

// One image in the store.
struct ImageRecord {
  std::string manifest_digest;   // "sha256:…" of the platform's image manifest
  std::string config_json;       // the image configuration blob, verified
  std::vector<Digest> diff_ids;  // the layers, bottom first (the config's rootfs.diff_ids)
  // Normalised references that name it ("docker.io/library/nginx:1.25"),
  // and the repository digests a registry gave it
  // ("docker.io/library/nginx@sha256:…": the digest of what the tag named,
  // an index for a multi-platform image), as `crictl images` shows them.
  std::vector<std::string> names;
  std::vector<std::string> repo_digests;
  uint64_t compressed_size = 0;  // the layer blobs' sizes added up
  uint64_t unpacked_size = 0;    // the layers' uncompressed tar streams added up
};

// Called while a layer is read, with the compressed bytes read so far.
using IngestProgress = std::function<void(uint64_t bytes)>;

class LayerStore {
 public:
  // Opens (creating) the store at `root`.
  static Result<LayerStore> Open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }

  bool HasLayer(const Digest& diff_id) const;
  std::filesystem::path LayerDir(const Digest& diff_id) const;

  // A shared hold on the store for one pull or unpack: layers it adds are
  // not pruned before its image record names them. Released with the Fd.
  Result<Fd> HoldForAdding();

  // Reads a layer blob from `blob_fd` until EOF (a pipe from the registry
  // client or a file), decompressing per layer.compression, verifying the
  // blob against layer.blob (digest, size when known) and the
  // uncompressed stream against layer.diff_id, and publishes it as
  // LayerDir(*layer.diff_id). A layer already present is not written again
  // (the stream is still drained: the caller's pipe must reach EOF).
  // Concurrent ingests of one diff id (threads or processes) serialise;
  // different ones run in parallel. On error nothing is published, and
  // the error names the blob's digest or the diff id that did not match.
  // `budget` may be shared by the concurrent ingests of one image: each
  // layer is charged to it under a lock when it is done (refused, and not
  // published, when that goes over), and bounded while it unpacks by what
  // was left when it started. It takes a HoldForAdding of its own.
  Status IngestLayer(int blob_fd, const LayerDescriptor& layer, LayerBudget& budget,
                     const IngestProgress& progress = {});

  // The sizes of a present layer (nullopt when absent or unrecorded).
  std::optional<LayerStreamSize> LayerSize(const Digest& diff_id) const;

  // Adds or replaces an image record (all its layers must be present), and
  // points each of its names at it (a name moves from the image that had
  // it, as a tag does). The names and repo digests the image had already
  // stay: a second tag of one manifest adds a name. The record's names as
  // read back (Find*, List) are those names.json points at it.
  Status PutImage(const ImageRecord& record);

  std::optional<ImageRecord> FindByName(std::string_view name) const;
  std::optional<ImageRecord> FindByManifest(std::string_view manifest_digest) const;
  std::vector<ImageRecord> List() const;

  // A shared lock on the image, held by a pod for as long as its
  // containers may use its layers. nullopt when the image is gone (pruned
  // between finding and holding it): find it again.
  Result<std::optional<Fd>> HoldImage(std::string_view manifest_digest) const;

  // The overlayfs lower directories of an image, top layer first, as
  // lowerdir= takes them; an error naming the image when a layer is missing.
  Result<std::vector<std::filesystem::path>> LowerDirs(const ImageRecord& record) const;

  struct PruneReport {
    std::vector<std::string> images_removed;  // manifest digests
    std::vector<std::string> layers_removed;  // diff ids
    std::vector<std::string> merged_removed;  // chain ids of flat/ and trees/ entries
    int scratch_removed = 0;                  // what crashed ingests and merges left
    uint64_t bytes_freed = 0;                 // on disk (blocks), hard links counted once
  };
  // Removes images no pod holds, then every layer no remaining image
  // uses, the merged trees no remaining image stacks, and scratch entries
  // a crashed unpack left; also the whole-image entries of the cache this
  // store replaced (STORE/<alg>/<hex>/rootfs) no pod holds. Waits for
  // pulls in progress (store.lock).
  Result<PruneReport> Prune();

  // Bytes on disk under `dir` (st_blocks), each inode once; 0 when absent.
  static uint64_t DiskUsage(const std::filesystem::path& dir);

 private:
  explicit LayerStore(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

}  // namespace podvisor::image
