#include "image/rootfs_digest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "common/fd.h"
#include "image/digest.h"

namespace podvisor::image {
namespace {

// Entries of the directory `dir_fd`, sorted by name.
Result<std::vector<std::string>> SortedNames(int dir_fd, const std::string& where) {
  int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return Error::FromErrno("reading " + where);
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    return Error::FromErrno("reading " + where);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status HashTree(int dir_fd, const std::string& rel, DigestHasher& h) {
  auto names = SortedNames(dir_fd, rel.empty() ? "/" : rel);
  if (!names) return names.take_error();
  for (const std::string& name : *names) {
    std::string path = rel;
    path.append("/").append(name);
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Error::FromErrno("stat " + path);
    }
    // One header per entry; NUL-separated, so no two trees share a stream.
    std::string header = path + '\0' + std::to_string(st.st_mode) + ' ' +
                         std::to_string(st.st_uid) + ' ' + std::to_string(st.st_gid) + ' ' +
                         std::to_string(S_ISREG(st.st_mode) ? st.st_size : 0) + '\0';
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t n = ::readlinkat(dir_fd, name.c_str(), target, sizeof target);
      if (n < 0) return Error::FromErrno("readlink " + path);
      header.append(target, static_cast<std::size_t>(n));
      header += '\0';
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      header += std::to_string(st.st_rdev) + '\0';
    }
    h.Update(header.data(), header.size());
    if (S_ISREG(st.st_mode)) {
      Fd f(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (!f) return Error::FromErrno("opening " + path);
      char buf[65536];
      ssize_t n;
      while ((n = ::read(f.get(), buf, sizeof buf)) > 0) h.Update(buf, static_cast<std::size_t>(n));
      if (n < 0) return Error::FromErrno("reading " + path);
    } else if (S_ISDIR(st.st_mode)) {
      Fd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
      if (!sub) return Error::FromErrno("opening " + path);
      if (auto s = HashTree(sub.get(), path, h); !s) return s;
    }
  }
  return Ok();
}

}  // namespace

Result<std::string> RootfsDigest(const std::filesystem::path& rootfs) {
  Fd root(::open(rootfs.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return Error::FromErrno("opening " + rootfs.string());
  auto hasher = DigestHasher::Create("sha256");
  if (!hasher) return hasher.take_error();
  if (auto s = HashTree(root.get(), "", *hasher); !s) {
    return s.take_error().Wrap("digest of " + rootfs.string());
  }
  return "sha256:" + hasher->FinishHex();
}

}  // namespace podvisor::image
