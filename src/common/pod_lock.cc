#include "common/pod_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "common/file_io.h"

namespace podvisor {

std::filesystem::path PodLock::PathFor(const std::filesystem::path& state_root,
                                       std::string_view pod) {
  return state_root / (std::string(pod) + ".lock");
}

Result<PodLock> PodLock::TryTake(const std::filesystem::path& state_root, std::string_view pod) {
  const std::filesystem::path path = PathFor(state_root, pod);
  auto fd = LockNamedFile(path, LOCK_EX | LOCK_NB, /*create=*/true);
  if (!fd) {
    if (fd.error().code() != EWOULDBLOCK) return fd.take_error();
    const pid_t holder = RecordedHolder(state_root, pod);
    return Error("another supervisor is serving pod " + std::string(pod) + " (" +
                     (holder > 0 ? "pid " + std::to_string(holder) + ", " : std::string()) +
                     "holding " + path.string() + "; stop it first: podvisor stop --state-dir " +
                     state_root.string() + " " + std::string(pod) + ")",
                 EBUSY);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // The pid is only for the message above: a failure to write it is not
  // a failure to hold the pod.
  if (::ftruncate(fd->get(), 0) == 0) (void)!::pwrite(fd->get(), pid.data(), pid.size(), 0);
  return PodLock(std::move(*fd), path);
}

Result<PodLock> PodLock::Inherit(int fd, const std::filesystem::path& state_root,
                                 std::string_view pod) {
  const std::filesystem::path path = PathFor(state_root, pod);
  struct stat held {};
  struct stat named {};
  if (::fstat(fd, &held) != 0) return Error::FromErrno("the inherited pod lock " + path.string());
  if (::stat(path.c_str(), &named) != 0) return Error::FromErrno(path.string());
  if (held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
    return Error("descriptor " + std::to_string(fd) + " is not " + path.string());
  }
  // Close-on-exec again, as every descriptor of the supervisor.
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return Error::FromErrno("fcntl " + path.string());
  return PodLock(Fd(fd), path);
}

Status PodLock::WaitReleased(const std::filesystem::path& state_root, std::string_view pod) {
  auto fd = LockNamedFile(PathFor(state_root, pod), LOCK_SH, /*create=*/false);
  if (!fd) return fd.take_error();
  return Ok();  // released on return: a `run` may take it now
}

pid_t PodLock::RecordedHolder(const std::filesystem::path& state_root, std::string_view pod) {
  Fd fd(::open(PathFor(state_root, pod).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return 0;
  char buf[32] = {};
  const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  return static_cast<pid_t>(std::strtol(buf, nullptr, 10));
}

void PodLock::Unlink() {
  if (fd_) ::unlink(path_.c_str());
}

}  // namespace podvisor
