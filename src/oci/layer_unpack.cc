#include "oci/layer_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "common/fd.h"

namespace podvisor::oci {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

// The blob as libarchive's read callback sees it, hashed on the way.
struct BlobSource {
  Fd fd;
  DigestHasher hasher;
  uint64_t bytes = 0;
  int read_errno = 0;
  char buf[1 << 16];

  static la_ssize_t Read(struct archive* a, void* self, const void** out) {
    auto* src = static_cast<BlobSource*>(self);
    ssize_t n;
    do {
      n = ::read(src->fd.get(), src->buf, sizeof src->buf);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      src->read_errno = errno;
      if (a) archive_set_error(a, errno, "reading the blob");
      return -1;
    }
    src->hasher.Update(src->buf, static_cast<std::size_t>(n));
    src->bytes += static_cast<uint64_t>(n);
    *out = src->buf;
    return n;
  }

  // The tar end-of-archive blocks and compressor trailers are part of the
  // blob too: hash whatever libarchive did not need.
  void Drain() {
    const void* ignored;
    while (Read(nullptr, this, &ignored) > 0) {
    }
  }
};

struct ArchiveDeleter {
  void operator()(struct archive* a) const {
    if (a) archive_free(a);  // archive_free dispatches on read/write
  }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

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
  LayerApplier(const fs::path& root, const LayerDescriptor& layer)
      : root_(root), name_("layer " + layer.blob.digest.ToString()) {}

  Status Apply(struct archive* reader, struct archive* writer);

 private:
  Status ApplyEntry(struct archive* reader, struct archive* writer, struct archive_entry* e);
  // Every directory from the root down to (and including) `rel` is a real
  // directory, not a symlink. Missing: false, `missing` set.
  bool RealDirChain(const std::string& rel, bool& missing) const;
  Status Whiteout(const std::string& rel);
  Status Opaque(const std::string& dir_rel);
  void HideLowerChildren(const std::string& dir_rel);
  bool WrittenBelow(const std::string& rel) const {
    std::string prefix = rel + "/";
    auto it = written_.lower_bound(prefix);
    return it != written_.end() && it->compare(0, prefix.size(), prefix) == 0;
  }
  fs::path Full(const std::string& rel) const { return rel.empty() ? root_ : root_ / rel; }

  fs::path root_;
  std::string name_;
  // Paths this layer wrote: whiteouts apply to lower layers only (the
  // spec), whatever order the tar lists entries and whiteouts in.
  std::set<std::string> written_;
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
  bool missing = false;
  if (!RealDirChain(dir_rel, missing)) return Ok();
  HideLowerChildren(dir_rel);
  return Ok();
}

Status LayerApplier::ApplyEntry(struct archive* reader, struct archive* writer,
                                struct archive_entry* e) {
  const char* raw_name = archive_entry_pathname(e);
  std::string raw = raw_name ? raw_name : "";
  auto rel = CleanEntryPath(raw);
  if (!rel) return Error(name_ + ": entry \"" + raw + "\" escapes the image root");
  if (rel->empty()) return Ok();  // the root itself: ours, 0755
  fs::path as_path(*rel);
  std::string base = as_path.filename().string();
  std::string parent = as_path.parent_path().string();

  if (base.compare(0, kWhiteoutPrefix.size(), kWhiteoutPrefix) == 0) {
    if (base == kOpaqueMarker) return Opaque(parent);
    // Other ".wh..wh." names are aufs bookkeeping (hard link stores), not
    // whiteouts.
    if (base.compare(0, 8, ".wh..wh.") == 0) return Ok();
    std::string target = base.substr(kWhiteoutPrefix.size());
    return Whiteout(parent.empty() ? target : parent + "/" + target);
  }

  bool missing = false;
  if (!parent.empty() && !RealDirChain(parent, missing) && !missing) {
    return Error(name_ + ": entry \"" + raw + "\" would be written through a symlink");
  }
  // A lower layer's entry of another type is replaced: a directory by a
  // file takes its whole subtree, a file by a directory is unlinked
  // (libarchive itself only replaces non-directories by non-directories).
  bool entry_is_dir = archive_entry_filetype(e) == AE_IFDIR && !archive_entry_hardlink(e);
  fs::path full = Full(*rel);
  struct stat st {};
  if (::lstat(full.c_str(), &st) == 0) {
    std::error_code ec;
    if (S_ISDIR(st.st_mode) && !entry_is_dir) {
      fs::remove_all(full, ec);
    } else if (!S_ISDIR(st.st_mode) && entry_is_dir) {
      fs::remove(full, ec);
    }
    if (ec) return Error(name_ + ": replacing " + *rel + ": " + ec.message(), ec.value());
  }

  if (const char* link = archive_entry_hardlink(e)) {
    auto target = CleanEntryPath(link);
    if (!target || target->empty()) {
      return Error(name_ + ": hard link \"" + raw + "\" -> \"" + link +
                   "\" escapes the image root");
    }
    std::string target_parent = fs::path(*target).parent_path().string();
    if (!target_parent.empty() && !RealDirChain(target_parent, missing)) {
      return Error(name_ + ": hard link \"" + raw + "\" -> \"" + link +
                   "\": the target is missing or behind a symlink");
    }
    archive_entry_set_hardlink(e, Full(*target).c_str());
  }

  // Device nodes need CAP_MKNOD; without it they are left out, as rootless
  // podman does.
  auto type = archive_entry_filetype(e);
  if (!root_user_ && (type == AE_IFCHR || type == AE_IFBLK)) return Ok();

  archive_entry_set_pathname(e, full.c_str());
  int r = archive_write_header(writer, e);
  if (r < ARCHIVE_WARN) {
    return Error(name_ + ": writing \"" + raw + "\": " + archive_error_string(writer),
                 archive_errno(writer));
  }
  if (archive_entry_size(e) > 0 && r >= ARCHIVE_OK) {
    const void* block;
    size_t size;
    la_int64_t offset;
    for (;;) {
      int rr = archive_read_data_block(reader, &block, &size, &offset);
      if (rr == ARCHIVE_EOF) break;
      if (rr < ARCHIVE_WARN) {
        return Error(name_ + ": reading \"" + raw + "\": " + archive_error_string(reader),
                     archive_errno(reader));
      }
      if (archive_write_data_block(writer, block, size, offset) < ARCHIVE_WARN) {
        return Error(name_ + ": writing \"" + raw + "\": " + archive_error_string(writer),
                     archive_errno(writer));
      }
    }
  }
  if (archive_write_finish_entry(writer) < ARCHIVE_WARN) {
    return Error(name_ + ": finishing \"" + raw + "\": " + archive_error_string(writer),
                 archive_errno(writer));
  }
  written_.insert(*rel);
  return Ok();
}

Status LayerApplier::Apply(struct archive* reader, struct archive* writer) {
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(reader, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      return Error(name_ + ": " + archive_error_string(reader), archive_errno(reader));
    }
    if (auto s = ApplyEntry(reader, writer, e); !s) return s;
  }
  // Directory modes and times are set last (libarchive defers them so a
  // read-only directory can still be filled).
  if (archive_write_close(writer) < ARCHIVE_WARN) {
    return Error(name_ + ": " + archive_error_string(writer), archive_errno(writer));
  }
  return Ok();
}

}  // namespace

Status ApplyLayer(const fs::path& layout_dir, const LayerDescriptor& layer, const fs::path& root) {
  const Descriptor& blob = layer.blob;
  fs::path path = BlobPath(layout_dir, blob.digest);
  auto hasher = DigestHasher::Create(blob.digest.algorithm);
  if (!hasher) return hasher.take_error();
  auto src = std::make_unique<BlobSource>(BlobSource{Fd(), std::move(*hasher), 0, 0, {}});
  src->fd.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!src->fd)
    return Error::FromErrno("blob " + blob.digest.ToString() + " is missing: " + path.string());

  ArchivePtr reader(archive_read_new());
  ArchivePtr writer(archive_write_disk_new());
  if (!reader || !writer) return Error("libarchive: out of memory");
  archive_read_support_format_tar(reader.get());
  // Only the compression the media type declares: a gzip blob labelled
  // plain tar is as wrong as a corrupt one.
  switch (layer.compression) {
    case LayerCompression::kNone:
      archive_read_support_filter_none(reader.get());
      break;
    case LayerCompression::kGzip:
      archive_read_support_filter_gzip(reader.get());
      break;
    case LayerCompression::kZstd:
      archive_read_support_filter_zstd(reader.get());
      break;
  }
  int flags = ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
              ARCHIVE_EXTRACT_SECURE_NODOTDOT;
  if (::geteuid() == 0) flags |= ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_XATTR;
  archive_write_disk_set_options(writer.get(), flags);

  Status applied;
  if (archive_read_open(reader.get(), src.get(), nullptr, &BlobSource::Read, nullptr) !=
      ARCHIVE_OK) {
    applied = Error("layer " + blob.digest.ToString() + ": " + archive_error_string(reader.get()));
  } else {
    applied = LayerApplier(root, layer).Apply(reader.get(), writer.get());
  }
  if (src->read_errno) {
    return Error::FromErrno("layer " + blob.digest.ToString() + ": reading " + path.string(),
                            src->read_errno);
  }
  src->Drain();
  if (auto s = CheckBlob(blob.digest, blob.size, src->hasher.FinishHex(), src->bytes); !s) return s;
  return applied;
}

}  // namespace podvisor::oci
