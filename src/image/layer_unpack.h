// Unpacks image layers (image-spec "layer.md"): tar entries in order, with
// whiteouts (`.wh.NAME` deletes NAME of a lower layer) and opaque
// directories (`.wh..wh..opq` hides everything a lower layer put in that
// directory). Either onto a root filesystem being built (kApplied: a
// bundle image, a merged tree), or as one layer alone in overlayfs's
// lower-directory format (kOverlay: the layer store, S16.1), where the
// whiteout is a 0/0 character device and the opaque directory carries
// trusted.overlay.opaque=y, as containerd's overlayfs snapshotter and
// containers/storage write them.
//
// A layer is untrusted input. No entry, hard link target or whiteout may
// reach outside the root: ".." components are refused, absolute names are
// taken relative to the root, and nothing is written, linked or removed
// through a symlink already on disk (an lstat walk of the parents, O_NOFOLLOW
// and O_EXCL for the entry itself, which replaces what was there). Symlinks themselves
// are created as they are: their targets only mean something inside the
// container. Ownership (numeric uid/gid, never looked up on the host),
// modes, times and xattrs are restored when we are root. A layer's own
// trusted.overlay.* and user.overlay.* xattrs are dropped (S14.7): only the
// whiteouts and opaque directories of its tar may tell overlayfs anything.
//
// Whiteout names are checked like every other name (S14.7): ".wh." with
// nothing, "." or ".." after it is refused, never resolved.
//
// The tar stream is read by our own reader (tar_reader.h). The blob is
// hashed while it is read and the uncompressed stream while it is
// unpacked, so each layer is read once: the blob against its descriptor's
// digest, the stream against the config's diff_id (S14.8). A digest
// mismatch wins over whatever archive error the corruption caused, so the
// user is told which blob is bad. What one image may unpack to is bounded
// (S14.9, LayerBudget).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

#include "common/result.h"
#include "image/oci_layout.h"

namespace podvisor::image {

// S14.9: how much one image (all its layers together) may unpack to. The
// bytes are those of the uncompressed tar streams, so file data, headers
// and anything after the archive's end all count; the entries are the
// tar entries. 8 GiB holds the largest images in common use (CUDA and ML
// framework images are 5-7 GiB unpacked) and stops a gzip bomb long
// before a disk-backed state directory fills; a million entries is ten
// times a full distribution image's file count.
struct LayerBudget {
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{8} << 30;
  static constexpr uint64_t kDefaultMaxEntries = 1'000'000;
  static constexpr const char* kMaxBytesVariable = "PODVISOR_IMAGE_MAX_BYTES";
  static constexpr const char* kMaxEntriesVariable = "PODVISOR_IMAGE_MAX_ENTRIES";

  uint64_t max_bytes = kDefaultMaxBytes;
  uint64_t max_entries = kDefaultMaxEntries;
  uint64_t bytes = 0;    // spent by the layers applied so far
  uint64_t entries = 0;  // likewise

  // The defaults, or the environment's PODVISOR_IMAGE_MAX_BYTES (bytes,
  // or with a suffix Ki, Mi, Gi, Ti) and PODVISOR_IMAGE_MAX_ENTRIES. A
  // value that does not parse is an error naming the variable.
  static Result<LayerBudget> FromEnvironment();
};

// How a layer's entries land on disk.
enum class LayerFormat {
  // Onto the tree of the layers below: a whiteout removes, an opaque
  // directory empties what lower layers put there.
  kApplied,
  // One layer alone, as an overlayfs lower directory: a whiteout is a
  // character device 0/0, an opaque directory has the xattr
  // kOverlayOpaqueXattr (kOverlayUserOpaqueXattr when not root, which
  // cannot set trusted.* xattrs; overlayfs reads that one with userxattr).
  kOverlay,
};

inline constexpr const char* kOverlayOpaqueXattr = "trusted.overlay.opaque";
inline constexpr const char* kOverlayUserOpaqueXattr = "user.overlay.opaque";

// What one layer's stream was.
struct LayerStreamSize {
  uint64_t compressed = 0;    // the blob's bytes
  uint64_t uncompressed = 0;  // its tar stream's bytes (what the budget was charged)
};

// Unpacks the blob read from `blob_fd` (a file or a pipe) until EOF onto
// `root`, which must be an absolute path without symlinks (the caller's
// private scratch directory), in `format`, charging `budget`. The blob
// must match layer.blob's digest (and size, when not negative); when
// layer.diff_id is set the uncompressed stream must hash to it. A digest
// mismatch names the digest and wins over whatever archive error the
// corruption caused. `progress` is called with the blob bytes read so far
// after each read. On error the root is left half-written: the caller
// throws it away.
Result<LayerStreamSize> UnpackLayerStream(int blob_fd, const LayerDescriptor& layer,
                                          const std::filesystem::path& root, LayerFormat format,
                                          LayerBudget& budget,
                                          const std::function<void(uint64_t)>& progress = {});

// UnpackLayerStream of layout_dir's blob for `layer`, kApplied.
Status ApplyLayer(const std::filesystem::path& layout_dir, const LayerDescriptor& layer,
                  const std::filesystem::path& root, LayerBudget& budget);

// True for a layer xattr that would speak to overlayfs (S14.7).
bool IsOverlayXattr(std::string_view name);

// Reading kOverlay layers: a whiteout is a character device 0/0 (`st` from
// an lstat); a directory (an open descriptor, not O_PATH) is opaque when
// it carries either opaque xattr with "y".
bool IsOverlayWhiteout(const struct stat& st);
bool IsOverlayOpaqueDir(int dir_fd);

}  // namespace podvisor::image
