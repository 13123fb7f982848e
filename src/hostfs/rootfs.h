// Per-container-instance writable roots: an overlay whose lower layers are
// the image (its rootfs, or its layers in the layer store, S16.3) and
// whose upper/work directories live in the instance directory under the
// pod state dir (layout.h). Two containers of one image, or two instances
// of one container, never see each other's writes.
//
// readOnlyRootFilesystem does not change the mount: the overlay stays
// writable on the host and config.json sets root.readonly, which the
// runtime applies inside the container's own mount namespace. That keeps
// the image untouched and isolated either way, and still lets the runtime
// create mount points (/etc/hosts, the termination-message file) that the
// image lacks, in this instance's upper layer.
//
// S16.3, the kernel's limits on a stack: overlayfs takes at most 500 lower
// layers, mount(2)'s data is one page, and the new mount API's fsconfig()
// takes one lower directory per call ("lowerdir+", Linux 6.8) of at most
// 255 bytes. The new API is used when the kernel has it, else mount(2)
// when the data fits; beyond what the one used can take, the bottom
// layers are merged into one directory of the store
// (image/layer_merge.h), so any image within the LayerBudget mounts.
//
// hostUsers: false (S20.21): every lower directory is idmapped to the
// pod's user namespace (a clone attached at the instance's idmapped/N for
// the mount only; an overlayfs mount itself cannot be idmapped), so an
// image file owned by 0 is the pod's host_uid in the overlay, root inside
// the pod. upper/ and work/ stay plain (an idmapped upper fails: the
// mounter, host root, is not in the idmap) and the upper root is chowned
// to host_uid:host_gid: what the container writes lands there with the
// host ids of its range, in this instance's own scratch.
//
// overlayfs needs upper/work on a filesystem that supports it as an upper
// layer (ext4, xfs, tmpfs, ...; not overlayfs itself); the error says so.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostfs/layout.h"
#include "oci/spec.h"

namespace podvisor::hostfs {

inline constexpr std::size_t kOverlayMaxLowerDirs = 500;  // overlayfs's OVL_MAX_STACK
inline constexpr std::size_t kMountDataMax = 4095;        // one page with its NUL
inline constexpr std::size_t kFsconfigStringMax = 255;    // fsconfig() copies 256 with the NUL

// How the overlay is mounted. kAuto: the new mount API when the kernel
// has "lowerdir+", else mount(2). The others force one (tests).
enum class OverlayMountApi { kAuto, kNewApi, kMountData };

// S20.21: the user namespace (a /proc/<pid>/ns/user path or a pinned
// bind of one) and the pod's ids a root is idmapped to.
struct RootIdmap {
  std::filesystem::path user_namespace;
  oci::PodUserNamespaceIds ids;
};

// Creates upper/, work/, rootfs/ and mounts the overlay on rootfs/, its
// lower layers idmapped when `idmap` is given. Idempotent: an overlay
// already mounted there is left as is.
Status MountWritableRoot(const WritableRootPaths& paths,
                         OverlayMountApi api = OverlayMountApi::kAuto,
                         const std::optional<RootIdmap>& idmap = std::nullopt);

// Unmounts the overlay (idempotent; MNT_DETACH when busy) and removes the
// instance's upper/, work/ and rootfs/ directories.
Status RemoveWritableRoot(const WritableRootPaths& paths);

// The overlay mount data for `paths` (exposed for tests): paths escaped so
// that ',' ':' and '\' in them are taken literally by overlayfs.
std::string OverlayMountData(const WritableRootPaths& paths);

// The lower directories `paths` is mounted with by `api` (kNewApi or
// kMountData): its own, or with the bottom ones merged into one
// (image::EnsureMergedTree, made when absent) so that the stack fits.
// `idmapped`: each is passed as its clone's attached path (the instance's
// idmapped/N), whose length is what must fit (S20.21).
Result<std::vector<std::filesystem::path>> FitLowerDirs(const WritableRootPaths& paths,
                                                        OverlayMountApi api, bool idmapped = false);

}  // namespace podvisor::hostfs
