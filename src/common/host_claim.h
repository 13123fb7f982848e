// HostClaim: a name on the host that one pod of one state directory holds
// (docs/SEMANTICS.md S14.31, S14.32): the pod cgroup's name and each
// hostPort. State directories do not know each other, so what they must
// not share is claimed in one host-wide place, /run/lock/podvisor/<kind>/.
//
// A claim is a file naming its owner (state directory and pod), locked by
// the owner's supervisor while it runs. It outlives a SIGKILLed supervisor
// on purpose: the pod's containers, cgroup and port rules may still be
// there, so the name stays taken until the owner's next `run` recovers
// them (and takes the claim again) or the owner's directory is gone. A
// clean end releases it (unlinks the file).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor {

struct ClaimOwner {
  std::filesystem::path state_root;  // absolute: the `--state-dir`
  std::string pod;
  bool operator==(const ClaimOwner&) const = default;
};

// What an unlocked claim of another owner means (its supervisor is gone).
enum class StaleClaim {
  // Taken while the owner's pod directory exists: its containers, cgroup
  // or rules may still be there until its next run recovers them.
  kKeptWhileOwnerDirExists,
  // Free: the lock is also held by whatever uses the name (S20.5: the
  // sandbox holder of a pod's user namespace inherits it), so an unlocked
  // claim has no user left.
  kFreeWhenUnlocked,
};

class HostClaim {
 public:
  static constexpr const char* kDefaultRoot = "/run/lock/podvisor";

  // Takes `root/kind/key` for `owner`: free, already `owner`'s, or left by
  // an owner whose pod directory is gone. An error with EBUSY names the
  // holder ("pod web of state directory /srv/a, running").
  static Result<HostClaim> Take(const std::filesystem::path& root, std::string_view kind,
                                std::string_view key, const ClaimOwner& owner,
                                StaleClaim stale = StaleClaim::kKeptWhileOwnerDirExists);

  // Unlinks every claim of `kind` that `owner` left (recovery, rm).
  static int ReleaseAllOf(const std::filesystem::path& root, std::string_view kind,
                          const ClaimOwner& owner);

  HostClaim() = default;
  HostClaim(HostClaim&&) = default;
  HostClaim& operator=(HostClaim&&) = default;

  bool held() const { return fd_.valid(); }
  // The locked descriptor (close-on-exec), for a child that must hold the
  // lock as long as it lives (StaleClaim::kFreeWhenUnlocked).
  int fd() const { return fd_.get(); }
  // The pod is done with it: the file goes, then the lock.
  void Release();

 private:
  HostClaim(Fd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}

  Fd fd_;
  std::filesystem::path path_;
};

}  // namespace podvisor
