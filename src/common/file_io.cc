#include "common/file_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/fd.h"

namespace podvisor {

namespace {

constexpr std::string_view kBlanks = " \t\r";

std::string_view Trim(std::string_view s) {
  std::size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

Status WriteAll(int fd, std::string_view text, const std::filesystem::path& file) {
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("writing " + file.string());
    }
    done += static_cast<std::size_t>(n);
  }
  return Ok();
}

Status SyncDirectory(const std::filesystem::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) return Error::FromErrno("fsync " + dir.string());
  return Ok();
}

// Everything up to and including the rename; the caller removes the
// temporary file when this fails.
Status WriteAndRename(const std::filesystem::path& tmp, const std::filesystem::path& file,
                      std::string_view text, mode_t mode, Durability durability) {
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) return Error::FromErrno("creating " + tmp.string());
  if (auto s = WriteAll(fd.get(), text, tmp); !s) return s;
  if (durability == Durability::kSynced && ::fsync(fd.get()) != 0) {
    return Error::FromErrno("fsync " + tmp.string());
  }
  // close(2) reports what a network filesystem could not write back.
  if (::close(fd.Release()) != 0) return Error::FromErrno("closing " + tmp.string());
  if (::rename(tmp.c_str(), file.c_str()) != 0) return Error::FromErrno("renaming " + tmp.string());
  return Ok();
}

}  // namespace

Result<std::string> ReadFileBounded(const std::filesystem::path& file, std::size_t max_bytes) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening " + file.string());
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("reading " + file.string());
    }
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      return Error(file.string() + ": larger than " + std::to_string(max_bytes) + " bytes", EFBIG);
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

Status WriteFileAtomic(const std::filesystem::path& file, std::string_view text, mode_t mode,
                       Durability durability) {
  std::filesystem::path tmp = file;
  tmp += ".tmp";
  if (auto s = WriteAndRename(tmp, file, text, mode, durability); !s) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is in the directory's blocks; without this a power loss
  // can bring back the old name (or none, for a new file).
  if (durability == Durability::kSynced) {
    std::filesystem::path dir = file.parent_path();
    return SyncDirectory(dir.empty() ? std::filesystem::path(".") : dir);
  }
  return Ok();
}

FlatKeyed FlatKeyed::Parse(std::string_view text) {
  FlatKeyed parsed;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty()) continue;
    std::size_t gap = line.find_first_of(kBlanks);
    std::string_view key = line.substr(0, gap);
    std::string_view value = gap == std::string_view::npos ? "" : Trim(line.substr(gap));
    if (key.size() > 1 && key.back() == ':') key.remove_suffix(1);
    parsed.entries_.emplace_back(std::string(key), std::string(value));
  }
  return parsed;
}

std::optional<std::string_view> FlatKeyed::Find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::optional<uint64_t> FlatKeyed::FindUnsigned(std::string_view key) const {
  auto value = Find(key);
  if (!value || value->empty()) return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
  if (ec != std::errc() || end != value->data() + value->size()) return std::nullopt;
  return n;
}

Result<FlatKeyed> ReadFlatKeyed(const std::filesystem::path& file, std::size_t max_bytes) {
  auto text = ReadFileBounded(file, max_bytes);
  if (!text) return text.take_error();
  return FlatKeyed::Parse(*text);
}

Result<Fd> LockNamedFile(const std::filesystem::path& path, int op, bool create, mode_t mode) {
  for (;;) {
    Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), mode));
    if (!fd) {
      if (!create && errno == ENOENT) return Fd();
      return Error::FromErrno("opening " + path.string());
    }
    while (::flock(fd.get(), op) != 0) {
      if (errno != EINTR) return Error::FromErrno("locking " + path.string());
    }
    struct stat held {};
    struct stat named {};
    if (::fstat(fd.get(), &held) != 0) return Error::FromErrno("stat " + path.string());
    if (::stat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino &&
        named.st_dev == held.st_dev) {
      return fd;
    }
    if (!create) return Fd();  // unlinked while we waited: nobody holds it now
  }
}

}  // namespace podvisor
