// The user a container process runs as, resolved the way containerd and
// runc do it, but only ever from the IMAGE's own /etc/passwd and
// /etc/group: never through NSS on the host, whose users mean nothing
// inside the container. The files are opened with RESOLVE_IN_ROOT (or,
// for an image stored as layers, looked up through them the same way) so
// a symlink in the image cannot make podvisor read a host file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "image/image.h"

namespace podvisor::oci {

struct PasswdEntry {
  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct GroupEntry {
  std::string name;
  uint32_t gid = 0;
  std::vector<std::string> members;
};

// passwd(5) and group(5) text; malformed lines (comments, wrong field count,
// non-numeric ids) are skipped as libc does.
std::vector<PasswdEntry> ParsePasswd(std::string_view text);
std::vector<GroupEntry> ParseGroup(std::string_view text);

// Reads `relative` (e.g. "etc/passwd") inside `rootfs`, resolving symlinks
// as if rootfs were "/". A missing file is an empty string, not an error.
Result<std::string> ReadFileInRoot(const std::filesystem::path& rootfs, std::string_view relative);

// What the pod asks for, merged from container and pod securityContext.
struct UserRequest {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::vector<int64_t> supplemental_groups;
  // supplementalGroupsPolicy: Strict: the image's /etc/group memberships
  // of the user are not added (only the primary gid, supplementalGroups
  // and fsGroup are).
  bool strict_supplemental_groups = false;
  std::string image_user;  // image config User: "name[:group]" or "uid[:gid]"
};

struct ProcessUser {
  uint32_t uid = 0;
  uint32_t gid = 0;
  // The primary gid first (containerd's fix for CVE-2023-25173), then the
  // image groups listing the user as a member (not with Strict), then
  // supplementalGroups.
  std::vector<uint32_t> additional_gids;
  friend bool operator==(const ProcessUser&, const ProcessUser&) = default;
};

// Rules:
//  - runAsUser wins over the image User; its gid is runAsGroup, else the
//    passwd entry's gid for that uid, else 0.
//  - Image User "name" must exist in passwd; "uid" need not (gid 0 then);
//    ":group" may be a name (must exist in group) or a number.
//  - runAsGroup overrides the gid of an image User too (podvisor's choice:
//    containerd refuses runAsGroup without runAsUser; CRI-O honours it).
//  - runAsNonRoot with a resolved uid 0 is an error. Because the image's
//    passwd is read, a named image user is checked too (the kubelet can
//    only refuse non-numeric users).
Result<ProcessUser> ResolveUser(const UserRequest& request, std::string_view passwd_text,
                                std::string_view group_text);

// ResolveUser with the files of `rootfs`.
Result<ProcessUser> ResolveUserInRootfs(const UserRequest& request,
                                        const std::filesystem::path& rootfs);

// ReadFileInRoot of an image: its rootfs, or for an image of the layer
// store the merged view of its layers (image/layer_view.h: whiteouts and
// opaque directories honoured, no symlink of the image followed out).
Result<std::string> ReadFileInImage(const image::Image& image, std::string_view relative);

// ResolveUser with the files of `image` (ReadFileInImage).
Result<ProcessUser> ResolveUserInImage(const UserRequest& request, const image::Image& image);

}  // namespace podvisor::oci
