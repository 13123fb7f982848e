// Applies image layers (image-spec "layer.md") to a root filesystem being
// built: tar entries in order, with whiteouts (`.wh.NAME` deletes NAME of a
// lower layer) and opaque directories (`.wh..wh..opq` hides everything a
// lower layer put in that directory).
//
// A layer is untrusted input. No entry, hard link target or whiteout may
// reach outside the root: ".." components are refused, absolute names are
// taken relative to the root, and nothing is written, linked or removed
// through a symlink already on disk (an lstat walk of the parents, O_NOFOLLOW
// and O_EXCL for the entry itself, which replaces what was there). Symlinks themselves
// are created as they are: their targets only mean something inside the
// container. Ownership (numeric uid/gid, never looked up on the host),
// modes, times and xattrs are restored when we are root.
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

#include <cstdint>
#include <filesystem>

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

// Unpacks layout_dir's blob for `layer` onto `root`, which must be an
// absolute path without symlinks (the caller's private scratch directory),
// charging `budget`. When layer.diff_id is set, the uncompressed stream
// must hash to it. On error the root is left half-applied: the caller
// throws it away.
Status ApplyLayer(const std::filesystem::path& layout_dir, const LayerDescriptor& layer,
                  const std::filesystem::path& root, LayerBudget& budget);

}  // namespace podvisor::image
