// Stacks of the layer store's layers merged into one directory, as
// overlayfs would show them (whiteouts and opaque directories applied),
// kept in the store keyed by the stack's chain id (image-spec config.md):
//
//   kLowerStack:   STORE/flat/<alg>/<chain hex>/   the bottom of a stack deeper than a
//                  mount can take (S16.3); read only, its files hard links of the layers'
//   kWritableRoot: STORE/trees/<alg>/<chain hex>/  a whole image as one tree, the root
//                  containers write into when they get no overlay of their own
//                  (--sandbox none); its files are copies, never the layers'
//
// Made like a layer (scratch, lock per chain id, rename) while a
// HoldForAdding keeps prune away; prune removes those no remaining
// image's layers start with. The layers are read through descriptors
// opened with O_NOFOLLOW from the store's own directories, so no symlink
// of an image is followed.
//
// Not responsible for deciding when to merge: hostfs/rootfs.cc does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"
#include "image/digest.h"

namespace podvisor::image {

enum class MergedTree { kLowerStack, kWritableRoot };

// The chain id of layers given bottom first: the first diff id, then
// sha256(previous chain id + " " + next diff id) for each next one.
Digest ChainId(const std::vector<Digest>& diff_ids);

// Where `lower_dirs` (top first, as overlayfs takes them; each
// STORE/layers/<alg>/<hex> of one store) merged are kept. No I/O. An error
// when a directory is not a layer of a store.
Result<std::filesystem::path> MergedTreePath(const std::vector<std::filesystem::path>& lower_dirs,
                                             MergedTree kind);

// MergedTreePath, made first when absent.
Result<std::filesystem::path> EnsureMergedTree(const std::vector<std::filesystem::path>& lower_dirs,
                                               MergedTree kind);

// Merges the overlayfs lower directories `lower_dirs` (top first) onto the
// empty directory `target`: regular files hard linked when `link_files`,
// copied otherwise; ownership, modes, times and xattrs (not overlayfs's)
// kept.
Status MergeLowerDirs(const std::vector<std::filesystem::path>& lower_dirs,
                      const std::filesystem::path& target, bool link_files);

}  // namespace podvisor::image
