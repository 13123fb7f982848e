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
// The tar stream is read by our own reader (tar_reader.h). The blob is
// hashed while it is read, so each layer is read
// once; a digest mismatch wins over whatever archive error the corruption
// caused, so the user is told which blob is bad.
#pragma once

#include <filesystem>

#include "common/result.h"
#include "oci/oci_layout.h"

namespace podvisor::oci {

// Unpacks layout_dir's blob for `layer` onto `root`, which must be an
// absolute path without symlinks (the caller's private scratch directory).
// On error the root is left half-applied: the caller throws it away.
Status ApplyLayer(const std::filesystem::path& layout_dir, const LayerDescriptor& layer,
                  const std::filesystem::path& root);

}  // namespace podvisor::oci
