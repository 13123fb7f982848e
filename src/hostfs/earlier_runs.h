// Each run of a pod is its own record (docs/SEMANTICS.md S14.33).
//
// A pod's kept record (status.json), its events and its container logs
// outlive it until `rm`. The next `run` of the pod is a new pod instance
// with a new uid, as the kubelet keeps each pod uid's logs apart
// (/var/log/pods/<ns>_<name>_<uid>/): before it writes anything, the
// previous run's files are moved aside, not appended to:
//
//   DIR/<pod>/.runs/<uid>/status.json, events.jsonl, log-dir
//   <log-dir>/<pod>/.runs/<uid>/<container>/<n>.log
//
// (".runs" is no DNS label, so no container is named like it.) The run's
// log-dir file names where its logs went, so `rm` and `prune` remove
// them wherever that was. The newest kEarlierRunsKept runs are kept; an
// older one goes when a new run moves its predecessor aside.
//
// The pod's log directory of the current run is remembered the same way,
// in DIR/<pod>/log-dir, so client commands need no --log-dir.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace podvisor::hostfs {

inline constexpr const char* kEarlierRunsDir = ".runs";
inline constexpr const char* kLogDirFile = "log-dir";
inline constexpr int kEarlierRunsKept = 5;

// DIR/<pod>/log-dir: the pod's own log directory (<log-dir>/<pod>) of the
// run that wrote it; nullopt when absent or not an absolute path.
std::optional<std::filesystem::path> RememberedLogDir(const std::filesystem::path& pod_dir);
Status RememberLogDir(const std::filesystem::path& pod_dir, const std::filesystem::path& log_dir);

struct EarlierRun {
  std::string id;                   // the run's pod uid (made unique)
  std::filesystem::path state;      // DIR/<pod>/.runs/<id>
  std::filesystem::path logs;       // its logs, or empty
  std::filesystem::path logs_from;  // where the logs were before the move
};

// Moves the previous run's record, events and logs (found by its log-dir
// file, else under `log_dir`) aside; nullopt when there was no previous
// run. Then trims the earlier runs to kEarlierRunsKept.
Result<std::optional<EarlierRun>> SetEarlierRunAside(const std::filesystem::path& pod_dir,
                                                     const std::filesystem::path& log_dir);

// Undoes SetEarlierRunAside for a run that never started (set-up failed).
void PutEarlierRunBack(const EarlierRun& run, const std::filesystem::path& pod_dir);

// The earlier runs of a pod, oldest first.
std::vector<EarlierRun> EarlierRuns(const std::filesystem::path& pod_dir);

// Every log directory of the pod's runs, current and earlier, that the
// pod's files name: what `rm` removes besides the pod's state directory.
std::vector<std::filesystem::path> AllLogDirs(const std::filesystem::path& pod_dir);

}  // namespace podvisor::hostfs
