#include "common/host_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <sstream>

#include "common/file_io.h"
#include "common/mounts.h"

namespace podvisor {
namespace {

namespace fs = std::filesystem;

// "state_root\npod\n": what the file holds.
std::string Serialize(const ClaimOwner& owner) {
  return owner.state_root.string() + "\n" + owner.pod + "\n";
}

std::optional<ClaimOwner> ReadOwner(int fd) {
  std::string text;
  char buf[4096];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    off += n;
  }
  std::istringstream in(text);
  ClaimOwner owner;
  std::string root;
  if (!std::getline(in, root) || !std::getline(in, owner.pod) || root.empty()) return std::nullopt;
  owner.state_root = root;
  return owner;
}

std::string Describe(const ClaimOwner& owner, bool running) {
  return "pod " + owner.pod + " of state directory " + owner.state_root.string() +
         (running ? " (running)"
                  : " (its supervisor is gone: `podvisor run` of it cleans up what it left)");
}

}  // namespace

Result<HostClaim> HostClaim::Take(const fs::path& root, std::string_view kind, std::string_view key,
                                  const ClaimOwner& owner, StaleClaim stale) {
  const fs::path dir = root / std::string(kind);
  if (auto s = MakeDirs(dir, 0755); !s) return s.take_error();
  const fs::path path = dir / std::string(key);
  auto fd = LockNamedFile(path, LOCK_EX | LOCK_NB, /*create=*/true, 0644);
  if (!fd) {
    if (fd.error().code() != EWOULDBLOCK) return fd.take_error();
    Fd peek(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    std::optional<ClaimOwner> holder = peek ? ReadOwner(peek.get()) : std::nullopt;
    if (holder && *holder == owner) {
      return Error(std::string(key) + " is held by another supervisor of this pod", EBUSY);
    }
    return Error(std::string(key) + " is held by " +
                     (holder ? Describe(*holder, true) : std::string("a starting pod")),
                 EBUSY);
  }
  std::optional<ClaimOwner> left = ReadOwner(fd->get());
  std::error_code ec;
  if (left && !(*left == owner) && stale == StaleClaim::kKeptWhileOwnerDirExists &&
      fs::is_directory(left->state_root / left->pod, ec)) {
    return Error(std::string(key) + " is held by " + Describe(*left, false), EBUSY);
  }
  const std::string text = Serialize(owner);
  if (::ftruncate(fd->get(), 0) != 0 ||
      ::pwrite(fd->get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return Error::FromErrno("writing " + path.string());
  }
  return HostClaim(std::move(*fd), path);
}

int HostClaim::ReleaseAllOf(const fs::path& root, std::string_view kind, const ClaimOwner& owner) {
  int released = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root / std::string(kind), ec)) {
    Fd fd(::open(entry.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // held: a live owner's
    std::optional<ClaimOwner> left = ReadOwner(fd.get());
    if (left && *left == owner && ::unlink(entry.path().c_str()) == 0) ++released;
  }
  return released;
}

void HostClaim::Release() {
  if (!fd_) return;
  ::unlink(path_.c_str());
  fd_.Reset();
}

}  // namespace podvisor
