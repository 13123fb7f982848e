// Unpacked OCI image layouts, cached per manifest digest under the state
// directory:
//
//   <state-dir>/.images/<alg>/<hex>/rootfs/       the layers applied in order
//   <state-dir>/.images/<alg>/<hex>/image.json    the image config blob
//
// (".images" cannot collide with a pod: pod names are DNS labels.) An entry
// appears only by rename(2) of a finished scratch directory, so a reader
// sees a whole rootfs or none; unpackers of one digest serialise on a lock
// file, and the one holding the lock removes a scratch directory a crashed
// unpack left. Entries are never modified afterwards (the manifest digest
// pins every layer's digest) and live as long as the state directory
// (/run: until reboot).
#pragma once

#include <filesystem>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"
#include "image/image.h"
#include "image/oci_layout.h"

namespace podvisor::image {

// The cache directory for a state directory: STATE/.images.
std::filesystem::path ImageCacheDir(const std::filesystem::path& state_dir);

// The cache entry for the layout's manifest, unpacking it first when
// absent. Returns the entry directory (holding rootfs/ and image.json).
Result<std::filesystem::path> EnsureUnpacked(const std::filesystem::path& cache_dir,
                                             const ResolvedLayout& layout);

// A shared lock on the cache entry of `manifest_digest` ("sha256:<hex>"),
// held by a pod for as long as its containers may use the entry: `podvisor
// images prune` removes only entries it can lock exclusively. nullopt when
// the entry is gone (pruned between unpack and lock): load the image again.
Result<std::optional<Fd>> HoldEntry(const std::filesystem::path& cache_dir,
                                    std::string_view manifest_digest);

// LoadImage's path for a directory that is an OCI layout: resolve the
// manifest for `reference`'s tag and this host, unpack into the cache,
// parse the config.
Result<Image> LoadOciLayoutImage(const std::filesystem::path& dir, std::string_view reference,
                                 const std::filesystem::path& cache_dir);

}  // namespace podvisor::image
