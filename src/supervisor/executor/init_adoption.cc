// Instances' side of a create (or `run --detach`) that ended: on success
// the container init the runtime wrote to --pid-file becomes our child, to be
// reaped and signalled through its pidfd (S5.9).
//
// The init is reparented to us when the runtime process above it exits.
// runc's create and run are that process; crun's `run --detach` is not: it
// forks, the fork starts the container and reports back, and the command
// exits while the fork (the init's parent) is still on its way out. The
// adoption then waits for that process's exit, which the reaper reports
// like a runtime call's: it is one, still running, bounded by the same
// --runtime-timeout (no polling, no sleep).
#include <fstream>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "cgroups/oom.h"
#include "common/pod_dir.h"
#include "oci/runtime_cli.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

void Instances::OnCreateCallExited(const std::string& id, const process::ExitInfo& exit) {
  Instance* inst = FindById(id);
  if (!inst) return;
  // The process that exited is the call itself, or the fork it left
  // holding the init.
  bool fork = inst->state.waiting_for_fork;
  if (!exit.success()) {
    // Failed, or killed at --runtime-timeout: so did the create.
    std::string message = oci::LastRuntimeError(inst->dir / InstanceFile::kRuntimeLog);
    if (message.empty()) message = "runtime create " + exit.ToString();
    return FailCreate(*inst, fork ? InstanceInput::kForkFailed : InstanceInput::kCreateCallFailed,
                      message);
  }
  Advance(*inst, fork ? InstanceInput::kForkExited : InstanceInput::kCreateCallExited);
}

void Instances::AdoptCreatedInit(Instance& inst) {
  pid_t pid = 0;
  std::ifstream(inst.dir / InstanceFile::kPidFile) >> pid;
  // A `run` init may have run and exited already: it is our zombie child
  // by now, adopted all the same (the reaper holds an unknown child until
  // the runtime call's exit is handled).
  Status adopted = AdoptInit(inst, pid);
  pid_t between = 0;
  if (!adopted && adopted.error().code() == ECHILD) {
    between = process::ChildProcess::ChildAncestorOf(pid);
    // The fork exited since the first look: the init is ours now.
    if (between == pid) adopted = AdoptInit(inst, pid);
  }
  if (adopted) return Advance(inst, InstanceInput::kInitAdopted);
  // Only a process nobody tracks: a watched one (another container's
  // init, a runtime call) is not a remnant of this call.
  if (between > 0 && between != pid && !pod_.reaper.IsWatched(between)) {
    if (auto remnant = process::ChildProcess::Adopt(between)) {
      log::Debug("{}: the container process {} is still the child of runtime process {}", inst.id,
                 pid, between);
      // Waiting before it is tracked: its exit is the fork's from then on.
      Advance(inst, InstanceInput::kInitHeldByFork);
      std::string id = inst.id;
      auto rest = [this, id](const process::ExitInfo& e) { OnCreateCallExited(id, e); };
      if (TrackRuntimeCall(std::move(*remnant), "create", inst.dir / InstanceFile::kRuntimeLog,
                           rest))
        return;
    }
  }
  FailCreate(inst, InstanceInput::kCreateFailed, adopted.error().message());
}

void Instances::FailCreate(Instance& inst, InstanceInput input, const std::string& message) {
  log::Warn("creating {}: {}", inst.id, message);
  // A failed run reports a failed create: never started, as far as the
  // pod is concerned, and an init it started is reaped already
  // (instance_steps.cc FailCreate).
  Advance(inst, input, message);
}

Status Instances::AdoptInit(Instance& inst, pid_t pid) {
  auto init = process::ChildProcess::Adopt(pid);
  if (!init) return init.error().Wrap("adopting the container process");
  std::string id = inst.id;
  if (auto s = pod_.reaper.Track(*init,
                                 [this, id](const process::ExitInfo& e) {
                                   if (Instance* i = FindById(id)) OnInitExited(*i, e);
                                 });
      !s) {
    return s;
  }
  inst.init.emplace(std::move(*init));
  inst.init_start_time = StartTimeOf(pid);
  // S15.4: with its pidfd kept, a supervisor adopting the pod after a
  // crash learns how the init ended even if it ended while none ran.
  host_.KeepForNext(inst.id + "/pidfd", {inst.init->pidfd()});
  // The runtime made the cgroup during create: its count now is what the
  // instance starts with (0 for a fresh cgroup).
  inst.oom_kills_at_create = cgroups::ContainerOomKills(inst.cgroups_path, cgroups::CgroupMounts());
  return Ok();
}

}  // namespace podvisor::supervisor::executor
