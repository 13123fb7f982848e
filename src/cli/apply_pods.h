// What `podvisor apply` does to a pod (docs/SEMANTICS.md S18.6, S18.10):
// start its supervisor detached (its own session, or an instance of the
// systemd template unit podvisor-applied@.service), stop it with a reason,
// and wait, event-driven, until a started pod is Ready or cannot be.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"

namespace podvisor::cli::apply {

// A member of a JSON object, null when `j` is no object or lacks it: the
// records apply reads are another process's files.
const nlohmann::json& Member(const nlohmann::json& j, const char* key);
// A string member ("" when absent or not a string).
std::string Text(const nlohmann::json& j, const char* key);
// The status.conditions entry of `type` of a v1 Pod (or of a status
// object alone), null when none.
const nlohmann::json& Condition(const nlohmann::json& record, const char* type);

// STATE/.apply: apply's own files, beside the pods ("." is in no DNS label).
//   STATE/.apply/lock                 held by an apply pass (flock)
//   STATE/.apply/<pod>/current/       the bundle of the manifest apply last started
//   STATE/.apply/<pod>/last-good/     the bundle that last became Ready (S18.6)
//   STATE/.apply/<pod>/supervisor.log the detached supervisor's stdout and stderr
//   STATE/.apply/<pod>/run.env        run's options for the systemd unit
//   STATE/.apply/.staging-<pid>/      the desired bundles of one pass, removed after it
struct ApplyDir {
  std::filesystem::path root;
  std::filesystem::path Pod(const std::string& pod) const { return root / pod; }
  std::filesystem::path Current(const std::string& pod) const { return root / pod / "current"; }
  std::filesystem::path LastGood(const std::string& pod) const { return root / pod / "last-good"; }
  std::filesystem::path SupervisorLog(const std::string& pod) const {
    return root / pod / "supervisor.log";
  }
  std::filesystem::path RunEnv(const std::string& pod) const { return root / pod / "run.env"; }
};
inline constexpr const char* kApplyDirName = ".apply";

enum class Detach { kAuto, kProcess, kSystemd };

struct HostOptions {
  std::filesystem::path state_dir;    // absolute
  std::filesystem::path log_dir;      // absolute
  std::vector<std::string> run_args;  // more options for each `podvisor run`
  Detach detach = Detach::kAuto;
};

// The template unit for applied pods, and where it runs them from.
inline constexpr const char* kUnitTemplate = "podvisor-applied@.service";
inline constexpr const char* kUnitStateDir = "/run/podvisor";
inline constexpr const char* kUnitLogDir = "/var/log/podvisor";

// S18.10: whether pods start as instances of the template unit: asked for
// (--detach systemd), or --detach auto on a host booted with systemd
// (/run/systemd/system exists), whose systemctl knows the unit, with the
// unit's state and log directories. `why` says what decided, for the log.
bool UseSystemd(const HostOptions& options, std::string& why);

// Starts the pod's supervisor on its current bundle. Process mode: a
// grandchild in its own session (so it outlives apply and is nobody's
// child but init's), stdin /dev/null, stdout and stderr to
// supervisor.log; `supervisor` gets its pidfd. Systemd mode: `systemctl
// start --no-block podvisor-applied@POD.service`; `supervisor` stays empty.
Status StartPod(const HostOptions& options, bool systemd, const std::string& pod, Fd& supervisor);

// Stops a running pod gracefully with `reason` (`podvisor stop --reason`),
// and returns once its supervisor has removed everything and released
// the pod's lock (S14.30).
Status StopPod(const HostOptions& options, const std::string& pod, const std::string& reason);

// What tells the pod's kept record (status.json) from the next one: its
// inode and the pod's uid ("" when there is none). A wait after a start
// ignores the record of the run before (a manifest may fix the uid, and
// every record is renamed into place, so a new one has a new inode).
std::string RecordMark(const std::filesystem::path& state_dir, const std::string& pod);

struct ReadyOutcome {
  enum Kind { kReady, kNotReady, kInterrupted } kind = kNotReady;
  std::string reason;  // why not Ready
};

// Waits until the pod's record (another than `old_mark`'s) says Ready,
// and still does `min_ready` later with no container restarted since
// (S18.6), or the pod Succeeded; the pod ends otherwise, its supervisor exits
// (`supervisor`, when valid), `budget` runs out, or `interrupt` (a
// signalfd, -1 for none) becomes readable. Woken by inotify on the state
// directory and the pod's directory: no polling.
ReadyOutcome WaitReady(const HostOptions& options, const std::string& pod,
                       const std::string& old_mark, const Fd& supervisor, Duration budget,
                       Duration min_ready, int interrupt);

}  // namespace podvisor::cli::apply
