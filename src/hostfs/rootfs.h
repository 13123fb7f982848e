// Per-container-instance writable roots: an overlay whose lower layer is
// the image rootfs and whose upper/work directories live in the instance
// directory under the pod state dir (layout.h). Two containers of one image,
// or two instances of one container, never see each other's writes.
//
// readOnlyRootFilesystem does not change the mount: the overlay stays
// writable on the host and config.json sets root.readonly, which the
// runtime applies inside the container's own mount namespace. That keeps
// the image untouched and isolated either way, and still lets the runtime
// create mount points (/etc/hosts, the termination-message file) that the
// image lacks, in this instance's upper layer.
//
// overlayfs needs upper/work on a filesystem that supports it as an upper
// layer (ext4, xfs, tmpfs, ...; not overlayfs itself); the error says so.
#pragma once

#include "common/result.h"
#include "hostfs/layout.h"

namespace podvisor::hostfs {

// Creates upper/, work/, rootfs/ and mounts the overlay on rootfs/.
// Idempotent: an overlay already mounted there is left as is.
Status MountWritableRoot(const WritableRootPaths& paths);

// Unmounts the overlay (idempotent; MNT_DETACH when busy) and removes the
// instance's upper/, work/ and rootfs/ directories.
Status RemoveWritableRoot(const WritableRootPaths& paths);

// The overlay mount data for `paths` (exposed for tests): paths escaped so
// that ',' ':' and '\' in them are taken literally by overlayfs.
std::string OverlayMountData(const WritableRootPaths& paths);

}  // namespace podvisor::hostfs
