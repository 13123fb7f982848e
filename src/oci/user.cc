#include "oci/user.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "common/fd.h"
#include "image/layer_view.h"

namespace podvisor::oci {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

std::optional<uint32_t> ParseId(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  for (std::string_view line : Split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    fn(line);
  }
}

void AddUnique(std::vector<uint32_t>& gids, uint32_t gid) {
  if (std::find(gids.begin(), gids.end(), gid) == gids.end()) gids.push_back(gid);
}

Status CheckNonRoot(const UserRequest& request, uint32_t uid) {
  if (request.run_as_non_root.value_or(false) && uid == 0) {
    return Error("securityContext.runAsNonRoot: the container would run as root (uid 0)");
  }
  return Ok();
}

}  // namespace

std::vector<PasswdEntry> ParsePasswd(std::string_view text) {
  std::vector<PasswdEntry> entries;
  ForEachLine(text, [&](std::string_view line) {
    auto f = Split(line, ':');
    if (f.size() < 4 || f[0].empty()) return;
    auto uid = ParseId(f[2]);
    auto gid = ParseId(f[3]);
    if (!uid || !gid) return;
    entries.push_back({std::string(f[0]), *uid, *gid});
  });
  return entries;
}

std::vector<GroupEntry> ParseGroup(std::string_view text) {
  std::vector<GroupEntry> entries;
  ForEachLine(text, [&](std::string_view line) {
    auto f = Split(line, ':');
    if (f.size() < 3 || f[0].empty()) return;
    auto gid = ParseId(f[2]);
    if (!gid) return;
    GroupEntry g{std::string(f[0]), *gid, {}};
    if (f.size() >= 4 && !f[3].empty()) {
      for (std::string_view m : Split(f[3], ',')) {
        if (!m.empty()) g.members.emplace_back(m);
      }
    }
    entries.push_back(std::move(g));
  });
  return entries;
}

namespace {

// The account database read from an opened file: a regular file or
// nothing (a FIFO would block, a device node would read the host's
// device), bounded.
Result<std::string> ReadAccountFile(const Fd& fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno("checking " + name);
  if (!S_ISREG(st.st_mode)) return Error(name + ": not a regular file");
  std::string content;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("reading " + name);
    }
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    // passwd and group files are small; a huge one is not an account database.
    if (content.size() > 16 * 1024 * 1024) return Error(name + ": too large");
  }
  return content;
}

// O_NONBLOCK: a FIFO planted by a layer must not hang the supervisor in
// open(2); what is opened is then checked to be a regular file, so no
// device node of the image is ever read (S14.7).
constexpr int kAccountFileFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

}  // namespace

Result<std::string> ReadFileInRoot(const std::filesystem::path& rootfs, std::string_view relative) {
  Fd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::FromErrno("opening " + rootfs.string());
  open_how how{};
  how.flags = kAccountFileFlags;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string rel(relative);
  Fd fd(static_cast<int>(::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how)));
  if (!fd) {
    if (errno == ENOENT) return std::string();
    return Error::FromErrno("opening " + (rootfs / rel).string());
  }
  return ReadAccountFile(fd, (rootfs / rel).string());
}

Result<std::string> ReadFileInImage(const image::Image& image, std::string_view relative) {
  if (image.layers.empty()) return ReadFileInRoot(image.rootfs, relative);
  // S16.1: the merged view of the layers, whiteouts and opaque
  // directories honoured, symlinks resolved as RESOLVE_IN_ROOT does.
  const std::string name = "/" + std::string(relative) + " of image " + image.reference;
  auto fd = image::OpenInLayers(image.layers, relative, kAccountFileFlags);
  if (!fd) return fd.take_error().Wrap(name);
  if (!*fd) return std::string();
  return ReadAccountFile(**fd, name);
}

Result<ProcessUser> ResolveUser(const UserRequest& request, std::string_view passwd_text,
                                std::string_view group_text) {
  std::vector<PasswdEntry> passwd = ParsePasswd(passwd_text);
  std::vector<GroupEntry> groups = ParseGroup(group_text);
  auto user_by_uid = [&](uint32_t uid) -> const PasswdEntry* {
    for (const auto& e : passwd)
      if (e.uid == uid) return &e;
    return nullptr;
  };
  auto user_by_name = [&](std::string_view name) -> const PasswdEntry* {
    for (const auto& e : passwd)
      if (e.name == name) return &e;
    return nullptr;
  };

  ProcessUser user;
  std::string username;  // for group membership; empty when unknown
  if (request.run_as_user) {
    if (*request.run_as_user < 0 || *request.run_as_user > UINT32_MAX - 1) {
      return Error("securityContext.runAsUser: " + std::to_string(*request.run_as_user) +
                   " is not a valid uid");
    }
    user.uid = static_cast<uint32_t>(*request.run_as_user);
    if (const PasswdEntry* e = user_by_uid(user.uid)) {
      user.gid = e->gid;
      username = e->name;
    }
  } else if (!request.image_user.empty()) {
    std::string_view spec = request.image_user;
    std::string_view user_part = spec.substr(0, spec.find(':'));
    std::optional<std::string_view> group_part;
    if (spec.find(':') != std::string_view::npos) group_part = spec.substr(spec.find(':') + 1);
    if (auto uid = ParseId(user_part)) {
      user.uid = *uid;
      if (const PasswdEntry* e = user_by_uid(*uid)) {
        user.gid = e->gid;
        username = e->name;
      }
    } else {
      const PasswdEntry* e = user_by_name(user_part);
      if (!e) {
        return Error("image User \"" + request.image_user + "\": no user \"" +
                     std::string(user_part) + "\" in the image's /etc/passwd");
      }
      user.uid = e->uid;
      user.gid = e->gid;
      username = e->name;
    }
    if (group_part) {
      if (auto gid = ParseId(*group_part)) {
        user.gid = *gid;
      } else {
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const GroupEntry& g) { return g.name == *group_part; });
        if (it == groups.end()) {
          return Error("image User \"" + request.image_user + "\": no group \"" +
                       std::string(*group_part) + "\" in the image's /etc/group");
        }
        user.gid = it->gid;
      }
    }
  }
  if (request.run_as_group) {
    if (*request.run_as_group < 0 || *request.run_as_group > UINT32_MAX - 1) {
      return Error("securityContext.runAsGroup: " + std::to_string(*request.run_as_group) +
                   " is not a valid gid");
    }
    user.gid = static_cast<uint32_t>(*request.run_as_group);
  }
  if (Status s = CheckNonRoot(request, user.uid); !s) return s.take_error();

  AddUnique(user.additional_gids, user.gid);
  if (!username.empty() && !request.strict_supplemental_groups) {
    for (const GroupEntry& g : groups) {
      if (std::find(g.members.begin(), g.members.end(), username) != g.members.end()) {
        AddUnique(user.additional_gids, g.gid);
      }
    }
  }
  for (int64_t gid : request.supplemental_groups) {
    if (gid < 0 || gid > UINT32_MAX - 1) {
      return Error("securityContext.supplementalGroups: " + std::to_string(gid) +
                   " is not a valid gid");
    }
    AddUnique(user.additional_gids, static_cast<uint32_t>(gid));
  }
  return user;
}

Result<ProcessUser> ResolveUserInRootfs(const UserRequest& request,
                                        const std::filesystem::path& rootfs) {
  auto passwd = ReadFileInRoot(rootfs, "etc/passwd");
  if (!passwd) return passwd.take_error();
  auto group = ReadFileInRoot(rootfs, "etc/group");
  if (!group) return group.take_error();
  return ResolveUser(request, *passwd, *group);
}

Result<ProcessUser> ResolveUserInImage(const UserRequest& request, const image::Image& image) {
  auto passwd = ReadFileInImage(image, "etc/passwd");
  if (!passwd) return passwd.take_error();
  auto group = ReadFileInImage(image, "etc/group");
  if (!group) return group.take_error();
  return ResolveUser(request, *passwd, *group);
}

}  // namespace podvisor::oci
