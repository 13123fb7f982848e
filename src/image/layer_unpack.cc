#include "image/layer_unpack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "common/fd.h"
#include "image/layer_entries.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

// "./a//b/" -> "a/b"; nullopt when a component is "..". Leading '/' and
// "./" are dropped: layer names are relative to the image root whatever
// the tar writer did.
std::optional<std::string> CleanEntryPath(std::string_view raw) {
  std::string out;
  std::size_t start = 0;
  while (start <= raw.size()) {
    std::size_t end = raw.find('/', start);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view part = raw.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return std::nullopt;
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

class LayerApplier {
 public:
  LayerApplier(const fs::path& root, const LayerDescriptor& layer, LayerFormat format,
               MeteredStream& stream, LayerBudget& budget)
      : root_(root),
        name_("layer " + layer.blob.digest.ToString()),
        format_(format),
        stream_(stream),
        budget_(budget) {}

  Status Apply(TarReader& reader);

 private:
  // A directory's mode, owner and times, set after everything in it was
  // written: a read-only directory can still be filled, and writing into
  // a directory does not undo its mtime.
  struct DirFixup {
    std::string rel;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    timespec mtime;
  };

  Status ApplyEntry(TarReader& reader, const TarHeader& h);
  // Writes the entry at `rel`, whose parent chain is real directories or
  // missing, and where nothing of another type is left.
  Status Write(TarReader& reader, const TarHeader& h, const std::string& rel);
  Status WriteFile(TarReader& reader, const TarHeader& h, const std::string& rel);
  Status MakeParents(const std::string& rel);
  void SetOwnerTimesXattrs(const TarHeader& h, const std::string& rel);
  Status FixDirectories();
  // Every directory from the root down to (and including) `rel` is a real
  // directory, not a symlink. Missing: false, `missing` set.
  bool RealDirChain(const std::string& rel, bool& missing) const;
  Status Whiteout(const std::string& rel);
  Status Opaque(const std::string& dir_rel);
  Status OverlayWhiteout(const std::string& rel);
  Status OverlayOpaque(const std::string& dir_rel);
  void HideLowerChildren(const std::string& dir_rel);
  bool WrittenBelow(const std::string& rel) const {
    std::string prefix = rel + "/";
    auto it = written_.lower_bound(prefix);
    return it != written_.end() && it->compare(0, prefix.size(), prefix) == 0;
  }
  fs::path Full(const std::string& rel) const { return rel.empty() ? root_ : root_ / rel; }

  fs::path root_;
  std::string name_;
  LayerFormat format_;
  MeteredStream& stream_;
  LayerBudget& budget_;
  // Paths this layer wrote: whiteouts apply to lower layers only (the
  // spec), whatever order the tar lists entries and whiteouts in.
  std::set<std::string> written_;
  std::vector<DirFixup> dirs_;
  bool root_user_ = ::geteuid() == 0;
};

bool LayerApplier::RealDirChain(const std::string& rel, bool& missing) const {
  missing = false;
  fs::path at = root_;
  for (const auto& part : fs::path(rel)) {
    at /= part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) {
      missing = true;
      return false;
    }
    if (!S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

Status LayerApplier::Whiteout(const std::string& rel) {
  if (written_.count(rel)) return Ok();  // this layer's own entry stays
  if (format_ == LayerFormat::kOverlay) return OverlayWhiteout(rel);
  std::string parent = fs::path(rel).parent_path().string();
  bool missing = false;
  // A whiteout below a symlink or a missing directory has nothing of a
  // lower layer to hide; never remove through a link.
  if (!RealDirChain(parent, missing)) return Ok();
  std::error_code ec;
  fs::path target = Full(rel);
  if (!fs::exists(fs::symlink_status(target, ec))) return Ok();
  fs::remove_all(target, ec);
  if (ec) return Error(name_ + ": whiteout of " + rel + ": " + ec.message(), ec.value());
  return Ok();
}

void LayerApplier::HideLowerChildren(const std::string& dir_rel) {
  std::vector<std::string> children;
  std::error_code ec;
  for (const auto& c : fs::directory_iterator(Full(dir_rel), ec)) {
    std::string name = c.path().filename().string();
    if (dir_rel.empty()) {
      children.push_back(std::move(name));
    } else {
      children.push_back(dir_rel);
      children.back().append("/").append(name);
    }
  }
  for (const auto& child : children) {
    bool mine = written_.count(child) > 0;
    if (!mine && !WrittenBelow(child)) {
      fs::remove_all(Full(child), ec);
      continue;
    }
    struct stat st {};
    if (::lstat(Full(child).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) HideLowerChildren(child);
  }
}

Status LayerApplier::Opaque(const std::string& dir_rel) {
  if (format_ == LayerFormat::kOverlay) return OverlayOpaque(dir_rel);
  bool missing = false;
  if (!RealDirChain(dir_rel, missing)) return Ok();
  HideLowerChildren(dir_rel);
  return Ok();
}

// S16.1: the whiteout overlayfs reads, a character device 0/0 in place of
// the name. There is nothing of this layer to remove: a name it wrote
// stays (Whiteout), a directory made for a deeper entry stays, and one
// whiteout of the name is enough.
Status LayerApplier::OverlayWhiteout(const std::string& rel) {
  std::string parent = fs::path(rel).parent_path().string();
  bool missing = false;
  if (!parent.empty() && !RealDirChain(parent, missing)) {
    // Below a symlink of this layer nothing lower is visible to hide.
    if (!missing) return Ok();
    if (auto s = MakeParents(parent); !s) return s;
  }
  struct stat st {};
  fs::path full = Full(rel);
  if (::lstat(full.c_str(), &st) == 0) return Ok();
  // Unprivileged too since Linux 5.8: the 0/0 device is the whiteout.
  if (::mknod(full.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0) {
    return Error::FromErrno(name_ + ": whiteout of " + rel);
  }
  return Ok();
}

// S16.1: the directory (made here when this layer has no entry for it)
// tells overlayfs to stop looking into lower layers. trusted.* xattrs need
// CAP_SYS_ADMIN; without it, the user.* form a userxattr overlay reads.
Status LayerApplier::OverlayOpaque(const std::string& dir_rel) {
  bool missing = false;
  if (!dir_rel.empty() && !RealDirChain(dir_rel, missing)) {
    if (!missing) return Ok();
    if (auto s = MakeParents(dir_rel); !s) return s;
  }
  fs::path full = Full(dir_rel);
  if (::lsetxattr(full.c_str(), kOverlayOpaqueXattr, "y", 1, 0) == 0) return Ok();
  if (errno == EPERM && ::lsetxattr(full.c_str(), kOverlayUserOpaqueXattr, "y", 1, 0) == 0) {
    return Ok();
  }
  return Error::FromErrno(name_ + ": marking " + (dir_rel.empty() ? "/" : dir_rel) + " opaque");
}

Status LayerApplier::ApplyEntry(TarReader& reader, const TarHeader& h) {
  const std::string& raw = h.path;
  auto rel = CleanEntryPath(raw);
  if (!rel) return Error(name_ + ": entry \"" + raw + "\" escapes the image root");
  if (rel->empty()) return Ok();  // the root itself: ours, 0755
  fs::path as_path(*rel);
  std::string base = as_path.filename().string();
  std::string parent = as_path.parent_path().string();

  if (++budget_.entries > budget_.max_entries) {
    return Error(name_ + ": the image has more than " + std::to_string(budget_.max_entries) +
                     " entries (S14.9: the bound is " + LayerBudget::kMaxEntriesVariable + ")",
                 EFBIG);
  }
  if (base.compare(0, kWhiteoutPrefix.size(), kWhiteoutPrefix) == 0) {
    if (base == kOpaqueMarker) return Opaque(parent);
    // Other ".wh..wh." names are aufs bookkeeping (hard link stores), not
    // whiteouts.
    if (base.compare(0, 8, ".wh..wh.") == 0) return Ok();
    std::string target = base.substr(kWhiteoutPrefix.size());
    // S14.7: the name after ".wh." is a file name like any other. "" and
    // "." would white out the directory itself, ".." the one above it,
    // and with parent "" that is the directory holding the root: refused
    // here rather than cleaned, as CleanEntryPath refuses "..".
    if (target.empty() || target == "." || target == "..") {
      return Error(name_ + ": whiteout \"" + raw + "\" names no file of its directory");
    }
    return Whiteout(parent.empty() ? target : parent + "/" + target);
  }
  if (h.type == TarHeader::Type::kFile) {
    if (auto s = stream_.Reserve(h.size); !s) {
      return Error(name_ + ": \"" + raw + "\": " + s.error().message(), s.error().code());
    }
  }

  bool missing = false;
  if (!parent.empty() && !RealDirChain(parent, missing) && !missing) {
    return Error(name_ + ": entry \"" + raw + "\" would be written through a symlink");
  }
  // A lower layer's entry is replaced: a directory by anything else takes
  // its whole subtree, anything else is unlinked (a symlink included, so
  // nothing is written through it); a directory by a directory stays.
  bool entry_is_dir = h.type == TarHeader::Type::kDirectory;
  fs::path full = Full(*rel);
  struct stat st {};
  if (::lstat(full.c_str(), &st) == 0 && !(S_ISDIR(st.st_mode) && entry_is_dir)) {
    std::error_code ec;
    if (S_ISDIR(st.st_mode)) {
      fs::remove_all(full, ec);
    } else {
      fs::remove(full, ec);
    }
    if (ec) return Error(name_ + ": replacing " + *rel + ": " + ec.message(), ec.value());
  }

  // Device nodes need CAP_MKNOD; without it they are left out, as rootless
  // podman does.
  if (!root_user_ &&
      (h.type == TarHeader::Type::kCharDevice || h.type == TarHeader::Type::kBlockDevice)) {
    return Ok();
  }
  if (auto s = MakeParents(parent); !s) return s;
  if (auto s = Write(reader, h, *rel); !s) {
    return Error(name_ + ": writing \"" + raw + "\": " + s.error().message(), s.error().code());
  }
  written_.insert(*rel);
  return Ok();
}

Status LayerApplier::MakeParents(const std::string& rel) {
  fs::path at = root_;
  for (const auto& part : fs::path(rel)) {
    at /= part;
    if (::mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error::FromErrno(name_ + ": making " + at.string());
    }
  }
  return Ok();
}

Status LayerApplier::Write(TarReader& reader, const TarHeader& h, const std::string& rel) {
  fs::path full = Full(rel);
  mode_t mode = root_user_ ? h.mode : (h.mode & 01777);  // setuid/setgid need root
  switch (h.type) {
    case TarHeader::Type::kFile:
      return WriteFile(reader, h, rel);
    case TarHeader::Type::kDirectory:
      if (::mkdir(full.c_str(), 0700) != 0 && errno != EEXIST) return Error::FromErrno("mkdir");
      dirs_.push_back({rel,
                       mode,
                       static_cast<uid_t>(h.uid),
                       static_cast<gid_t>(h.gid),
                       {h.mtime_sec, h.mtime_nsec}});
      return Ok();
    case TarHeader::Type::kSymlink:
      // Created as it is: its target only means something in the container.
      if (::symlink(h.link.c_str(), full.c_str()) != 0) return Error::FromErrno("symlink");
      SetOwnerTimesXattrs(h, rel);
      return Ok();
    case TarHeader::Type::kHardLink: {
      auto target = CleanEntryPath(h.link);
      bool missing = false;
      std::string target_parent = target ? fs::path(*target).parent_path().string() : std::string();
      if (!target || target->empty()) return Error("the link target escapes the image root");
      if (!target_parent.empty() && !RealDirChain(target_parent, missing)) {
        return Error("the link target \"" + h.link + "\" is missing or behind a symlink");
      }
      // linkat without AT_SYMLINK_FOLLOW links a symlink itself, never
      // what it points to.
      if (::linkat(AT_FDCWD, Full(*target).c_str(), AT_FDCWD, full.c_str(), 0) != 0) {
        return Error::FromErrno("link to \"" + h.link + "\"");
      }
      return Ok();
    }
    case TarHeader::Type::kCharDevice:
    case TarHeader::Type::kBlockDevice:
    case TarHeader::Type::kFifo: {
      mode_t kind = h.type == TarHeader::Type::kFifo         ? S_IFIFO
                    : h.type == TarHeader::Type::kCharDevice ? S_IFCHR
                                                             : S_IFBLK;
      if (::mknod(full.c_str(), kind | (mode & 0777), makedev(h.dev_major, h.dev_minor)) != 0) {
        return Error::FromErrno("mknod");
      }
      SetOwnerTimesXattrs(h, rel);
      if (::chmod(full.c_str(), mode) != 0) return Error::FromErrno("chmod");
      return Ok();
    }
  }
  return Ok();
}

Status LayerApplier::WriteFile(TarReader& reader, const TarHeader& h, const std::string& rel) {
  fs::path full = Full(rel);
  // O_EXCL|O_NOFOLLOW: whatever was there is gone (ApplyEntry), and a
  // symlink appearing in between is refused, not followed.
  Fd fd(::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Error::FromErrno("open");
  std::vector<char> buf(1 << 16);
  for (;;) {
    auto n = reader.ReadData(buf.data(), buf.size());
    if (!n) return n.take_error();
    if (*n == 0) break;
    const char* at = buf.data();
    std::size_t left = *n;
    while (left > 0) {
      ssize_t w = ::write(fd.get(), at, left);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Error::FromErrno("write");
      at += w;
      left -= static_cast<std::size_t>(w);
    }
  }
  SetOwnerTimesXattrs(h, rel);
  // After the chown, which clears setuid and setgid.
  mode_t mode = root_user_ ? h.mode : (h.mode & 01777);
  if (::fchmod(fd.get(), mode) != 0) return Error::FromErrno("fchmod");
  return Ok();
}

// Best effort, as libarchive's were: a file system without xattrs or a
// uid outside our user namespace leaves the file as it is.
void LayerApplier::SetOwnerTimesXattrs(const TarHeader& h, const std::string& rel) {
  fs::path full = Full(rel);
  if (root_user_) {
    // Numeric ids, never looked up on the host.
    (void)::lchown(full.c_str(), static_cast<uid_t>(h.uid), static_cast<gid_t>(h.gid));
    for (const auto& [name, value] : h.xattrs) {
      if (IsOverlayXattr(name)) continue;  // S14.7: overlayfs's markers are ours to write
      (void)::lsetxattr(full.c_str(), name.c_str(), value.data(), value.size(), 0);
    }
  }
  timespec times[2] = {{h.mtime_sec, h.mtime_nsec}, {h.mtime_sec, h.mtime_nsec}};
  (void)::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

Status LayerApplier::FixDirectories() {
  // Deepest first, so a parent's mtime is set after its children's.
  std::sort(dirs_.begin(), dirs_.end(),
            [](const DirFixup& a, const DirFixup& b) { return a.rel > b.rel; });
  for (const DirFixup& d : dirs_) {
    fs::path full = Full(d.rel);
    struct stat st {};
    // A later entry of this layer may have replaced it.
    if (::lstat(full.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (root_user_) (void)::lchown(full.c_str(), d.uid, d.gid);
    if (::chmod(full.c_str(), d.mode) != 0) return Error::FromErrno(name_ + ": chmod " + d.rel);
    timespec times[2] = {d.mtime, d.mtime};
    (void)::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
  return Ok();
}

Status LayerApplier::Apply(TarReader& reader) {
  for (;;) {
    auto header = reader.Next();
    if (!header) return Error(name_ + ": " + header.error().message(), header.error().code());
    if (!*header) break;
    if (auto s = ApplyEntry(reader, **header); !s) return s;
  }
  return FixDirectories();
}

}  // namespace

Status ApplyEntries(TarReader& reader, MeteredStream& stream, const fs::path& root,
                    const LayerDescriptor& layer, LayerFormat format, LayerBudget& budget) {
  return LayerApplier(root, layer, format, stream, budget).Apply(reader);
}

bool IsOverlayWhiteout(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

bool IsOverlayOpaqueDir(int dir_fd) {
  for (const char* name : {kOverlayOpaqueXattr, kOverlayUserOpaqueXattr}) {
    char value[2] = {};
    if (::fgetxattr(dir_fd, name, value, sizeof value) == 1 && value[0] == 'y') return true;
  }
  return false;
}

bool IsOverlayXattr(std::string_view name) {
  return name.starts_with("trusted.overlay.") || name.starts_with("user.overlay.");
}

}  // namespace podvisor::image
