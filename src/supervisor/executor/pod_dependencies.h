// PodDependencies: the shell's watcher of the pods a pod waits for
// (podvisor.io/after, SEMANTICS S19). It tells the Lifecycle, through
// AwaitedPods events, which of the named pods of the same state directory
// are not Ready yet, and nothing else: holding the start plan is the
// Lifecycle's.
//
// Event-driven: one inotify descriptor on the loop watches the state
// directory (a pod's directory appearing) and each named pod's directory
// (its kept record `status.json` replaced by rename, its control socket
// made or removed), so a pod becoming Ready is seen when its supervisor
// writes the record, with no polling. A record counts only while the
// supervisor that wrote it answers on its control socket: a record left
// Ready by a supervisor that died (a crash, the host's power) is stale.
//
// It reports only changes of the not-Ready list (the first check always),
// and stops watching once every pod was Ready at one check.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "supervisor/lifecycle/types.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

// What one awaited pod looks like from outside (S19.3).
enum class AwaitedPodState {
  kMissing,     // no kept record (not started yet, or between two runs)
  kStale,       // a record whose supervisor no longer answers
  kNotReady,    // running, not Ready
  kWaitsForUs,  // not Ready, itself waiting for the pod that waits for it (S19.8)
  kReady,       // Ready=True, and its supervisor answers
  kEnded,       // Succeeded or Failed: its supervisor is done (S19.5)
};
std::string_view AwaitedPodStateName(AwaitedPodState state);

// The state of pod `name` under `state_root`, as the pod `self` judges it.
AwaitedPodState LookAtPod(const std::filesystem::path& state_root, const std::string& name,
                          const std::string& self);

class PodDependencies {
 public:
  struct Seams {
    std::function<void(lifecycle::Event)> feed;              // AwaitedPods reports
    std::function<void(const lifecycle::Publish&)> publish;  // the warnings of S19.5, S19.8
  };

  // Watches the pods `names` under `state_root` for the pod `self`; the
  // first report comes from Check().
  static Result<std::unique_ptr<PodDependencies>> Watch(loop::EventLoop& loop,
                                                        std::filesystem::path state_root,
                                                        std::string self,
                                                        std::vector<std::string> names,
                                                        Seams seams);
  ~PodDependencies();
  PodDependencies(const PodDependencies&) = delete;
  PodDependencies& operator=(const PodDependencies&) = delete;

  // Looks at every named pod and reports when the not-Ready list changed.
  void Check();
  // Stops watching (the wait is over or the pod terminates); idempotent.
  void Stop();
  bool watching() const { return static_cast<bool>(inotify_); }

 private:
  PodDependencies(loop::EventLoop& loop, std::filesystem::path state_root, std::string self,
                  std::vector<std::string> names, Seams seams, Fd inotify);
  void WatchPodDir(const std::string& name);
  void OnReadable();

  loop::EventLoop& loop_;
  std::filesystem::path state_root_;
  std::string self_;
  std::vector<std::string> names_;
  Seams seams_;
  Fd inotify_;
  std::map<int, std::string> pod_watches_;  // watch descriptor -> pod name
  std::optional<std::vector<std::string>> last_report_;
  std::map<std::string, AwaitedPodState> last_state_;  // for the warnings, once per change
};

}  // namespace podvisor::supervisor::executor
