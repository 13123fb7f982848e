// PodLock: one supervisor per pod, decided atomically (docs/SEMANTICS.md
// S14.30).
//
// `run` takes DIR/<pod>.lock exclusively, without waiting, before it looks
// at anything of the pod, and holds it until everything the pod made is
// gone: a second `run` of the pod, however close behind, is refused before
// it touches the first one's state (probing the control socket, as before,
// left ~100 ms in which the second took the first's live state for a dead
// supervisor's). The kernel releases the lock when its holder dies, so a
// SIGKILLed supervisor never leaves it held.
//
// The file lives beside the pod's directory, not in it, because `rm`
// removes the directory: `rm` takes the lock too, removes the pod, then
// unlinks the lock file while still holding it. A taker that opened the
// old file before the unlink finds, once it holds the lock, that the path
// no longer names its file, and opens it again.
//
// `stop` waits on the same lock (a shared one): it returns once the
// supervisor has exited, which is after its teardown.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor {

class PodLock {
 public:
  // DIR/<pod>.lock ("." is in no DNS label, so no pod is named like it).
  static std::filesystem::path PathFor(const std::filesystem::path& state_root,
                                       std::string_view pod);

  // Takes the lock without waiting and records the caller's pid in it. An
  // error with EBUSY names the holder's pid when another process holds it.
  static Result<PodLock> TryTake(const std::filesystem::path& state_root, std::string_view pod);

  // Blocks until no process holds the lock (none at all when there is no
  // lock file). Returns right away when nothing holds it.
  static Status WaitReleased(const std::filesystem::path& state_root, std::string_view pod);

  // The pid recorded by the holder, 0 when unknown.
  static pid_t RecordedHolder(const std::filesystem::path& state_root, std::string_view pod);

  PodLock(PodLock&&) = default;
  PodLock& operator=(PodLock&&) = default;

  // Removes the lock file while holding the lock (`rm`): the pod is gone.
  void Unlink();

  // S15.2: the lock crosses a re-exec of its supervisor as an open
  // descriptor (the flock belongs to it); Inherit takes it back in the new
  // program. It fails when `fd` is not that lock file, open.
  int fd() const { return fd_.get(); }
  static Result<PodLock> Inherit(int fd, const std::filesystem::path& state_root,
                                 std::string_view pod);

 private:
  PodLock(Fd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::filesystem::path path_;
};

}  // namespace podvisor
