// Opening paths under a directory that someone else controls, without ever
// leaving it: a volume's contents, an unpacked image, a bundle image.
//
// Every function takes the root as a descriptor and a path relative to it.
// Symlinks are followed only as long as they stay beneath the root (an
// absolute target, or ".." above the root, is EXDEV), magic links
// (/proc/self/fd/N and the like) never are, and nothing is created through
// a symlink. The kernel's openat2(RESOLVE_BENEATH) does the resolution;
// on a kernel without openat2 (ENOSYS) an equivalent walk, one component
// at a time with O_NOFOLLOW, does it. Checking a path and then using its
// name is exactly the race this file exists to avoid: use the descriptor
// it returns (openat with it, or /proc/self/fd/N as a mount source).
//
// Not responsible for what the caller does with the descriptor, nor for
// paths the operator wrote (a hostPath itself, the bundle directory).
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <string_view>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor {

// How a path beneath a root is resolved. kAuto: openat2, falling back to
// the component walk when the kernel lacks it. The others force one way
// (tests and the fuzzer compare them).
enum class BeneathResolver { kAuto, kKernel, kWalk };

// Opens `relative` beneath the directory `root_fd` with open(2) `flags`
// (O_CLOEXEC is added; O_NOFOLLOW keeps a final symlink unfollowed, as
// open(2) does) and `mode` (for O_CREAT). "" and "." are the root itself.
// Errors carry the errno: EXDEV when the path resolves outside the root,
// ELOOP for a magic link or too many symlinks, ENOENT, ENOTDIR, ...
Result<Fd> OpenBeneath(int root_fd, std::string_view relative, int flags, mode_t mode = 0,
                       BeneathResolver resolver = BeneathResolver::kAuto);

// mkdir -p beneath `root_fd`: each missing directory of `relative` is made
// with mkdirat() in the directory its parent resolved to (beneath the
// root), with `mode` exactly (not umask-filtered); existing ones are left
// as they are. Returns an O_PATH descriptor of the final directory. A
// component that is a symlink is followed only beneath the root; one that
// escapes is EXDEV, and nothing has been created outside the root.
Result<Fd> MakeDirsBeneath(int root_fd, std::string_view relative, mode_t mode,
                           BeneathResolver resolver = BeneathResolver::kAuto);

// True for an error of the functions above that says the path resolves
// outside the root (EXDEV), so a caller can name its root in the message:
// `volume "data": subPath "a/b": resolves outside the volume`.
bool IsOutsideRoot(const Error& error);

}  // namespace podvisor
