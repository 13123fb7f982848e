// Reading a directory tree that someone else wrote without leaving it: the
// unpacked tree of a bundle image is registry content (docs/SEMANTICS.md
// S14.5), and a symlink, device node or fifo in it would make the host
// read what the image chose (`images/img/rootfs -> /`, `config/x.yaml ->
// /etc/shadow`, `config/x.yaml` as the block device of the host's disk).
//
// Two tools, both relative to a directory descriptor of the root:
// OpenBeneath resolves a relative path with openat2(2) so that nothing on
// the way (a symlink, "..", a magic link of /proc) can take it outside the
// root; CheckConfinedTree walks a whole tree without following anything
// and refuses every entry that is not a directory or a regular file. This
// file knows nothing of bundles beyond its messages' prefix: it is meant
// to merge with the beneath-resolver of subPaths.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor::image {

// Walks the tree under `root` (not following anything) and returns an
// error naming the first entry, by its path relative to `root`, that is
// not a directory or a regular file: "<what>: images/img/rootfs: a symlink
// leaving the bundle" (a symlink that, followed from where it is, ends
// outside `root`), "...: a symlink" (one that stays inside),
// "...: a block device" and so on. Entries are visited in name order, so
// the error is the same on every run. The walk is bounded by `max_entries`
// (a tree is never larger than the layer that made it).
Status CheckConfinedTree(const std::filesystem::path& root, std::string_view what,
                         uint64_t max_entries);

}  // namespace podvisor::image
