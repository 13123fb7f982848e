// The handover from one supervisor of a pod to the next (S15.1): the
// versioned state the old one writes and the new one reads, and the
// descriptors that travel with it. `podvisor upgrade` (upgrade.cc) hands
// it over across execve in place: the state in a memfd, the descriptors
// inherited, their numbers in the state, the memfd's in the environment.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "pod/model.h"

namespace podvisor::supervisor::executor {

// The environment variable naming the memfd that holds the state.
inline constexpr char kHandoverFdEnv[] = "PODVISOR_HANDOVER_FD";
// The monotonic time (ns) the old supervisor began the re-exec, for the
// `Upgraded` event's handover time.
inline constexpr char kHandoverStartEnv[] = "PODVISOR_HANDOVER_STARTED_NS";

inline int64_t WallToNs(WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline WallTime NsToWall(int64_t ns) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(ns)));
}

// What a re-executed supervisor was handed.
struct InheritedHandover {
  nlohmann::json state;
  std::map<std::string, Fd> fds;  // by key, each close-on-exec again
  int64_t started_ns = 0;         // kHandoverStartEnv
  // Read from the state file of a supervisor that died (S15.5), not
  // handed over by a re-exec: the descriptors come from the holder.
  bool adopting = false;
};

// Reads the handover this process was given, if any, and takes it out of
// the environment (so that nothing it spawns sees it). The descriptors
// named in the state's "fds" are owned from here on. A state of a format
// this binary does not read is an error.
Result<std::optional<InheritedHandover>> TakeInheritedHandover();

// The pod a handover's state says the supervisor runs: `loaded` (the
// bundle as `run` read it now) when it is still the same, else the state's
// own, with `loaded`'s ConfigMaps and Secrets (a handover carries no
// Secret values).
Result<pod::Pod> HandedPod(const nlohmann::json& state, const pod::Pod& loaded);

// The pod the state describes, whatever the bundle says now, with
// `loaded`'s ConfigMaps and Secrets.
Result<pod::Pod> SavedPod(const nlohmann::json& state, const pod::Pod& loaded);

// Whether a reader of formats [oldest, newest] can read ours.
Status CheckHandoverFormat(int oldest, int newest);

// The state's format and the binary's version, checked: an error names
// what is wrong.
Status CheckHandoverState(const nlohmann::json& state);

// This boot's id (/proc/sys/kernel/random/boot_id): a state from another
// boot describes processes that are gone.
std::string BootId();

// The path of the running binary (/proc/self/exe as a path), for an
// upgrade to re-execute what is installed there now.
std::string SelfExecutablePath();

}  // namespace podvisor::supervisor::executor
