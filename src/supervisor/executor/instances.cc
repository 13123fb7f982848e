// Instances' runtime calls (each a child tracked by the reaper, bounded by
// --runtime-timeout, waited for by the pod's end), its lookups and its part
// of the pod's end.
#include "supervisor/executor/instances.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "cgroups/oom.h"
#include "hostfs/rootfs.h"
#include "process/spawn.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/runtime_timeout.h"

namespace podvisor::supervisor::executor {

constexpr std::string_view kRootDir = "/";

Instances::Instances(Pod pod, InstanceHost& host, std::unique_ptr<RuntimeLauncher> launcher)
    : pod_(pod), host_(host), launcher_(std::move(launcher)) {
  // A container init handed to us by a create (or run) still in flight is
  // not an orphan yet: that call's handler adopts it (signals/reaper.h).
  pod_.reaper.SetOrphanHold([this] {
    return std::any_of(calls_.begin(), calls_.end(),
                       [](const auto& call) { return call.second->what == "create"; });
  });
}

Instances::~Instances() {
  pod_.reaper.SetOrphanHold(nullptr);
}

ContainerInstance* Instances::Find(std::string_view container, int instance) {
  return table_.Find(container, instance);
}

ContainerInstance* Instances::FindById(const std::string& id) {
  return table_.FindById(id);
}

const pod::Container* Instances::ContainerSpec(std::string_view name) const {
  for (const auto* list : {&pod_.pod.spec.init_containers, &pod_.pod.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

std::string Instances::RuntimeId(std::string_view container, int instance) const {
  // Unique per attempt: a failed create is retried under the same instance
  // number while the runtime may still be cleaning up the failed one.
  static uint64_t attempt = 0;
  return hostfs::InstanceRuntimeId(pod_.pod.metadata.name, container, instance, ++attempt);
}

bool Instances::OomKilledSinceCreate(const Instance& inst) const {
  if (inst.cgroups_path.empty()) return false;
  return cgroups::ContainerOomKills(inst.cgroups_path, cgroups::CgroupMounts()) >
         inst.oom_kills_at_create;
}

oci::RuntimeCli Instances::Runtime() const {
  return oci::RuntimeCli(pod_.options.runtime,
                         {pod_.layout.RuntimeRoot(), pod_.options.no_pivot, {}});
}

RuntimeLauncher& Instances::Launcher() {
  if (!launcher_) {
    launcher_ = std::make_unique<RuntimeCliLauncher>(
        Runtime(), [this](const oci::RuntimeCommand& cmd, const std::filesystem::path& log_file,
                          int stdout_fd, int stderr_fd, RuntimeLauncher::Done done) {
          return SpawnRuntime(cmd, log_file, stdout_fd, stderr_fd, std::move(done));
        });
  }
  return *launcher_;
}

Result<pid_t> Instances::SpawnRuntime(const oci::RuntimeCommand& cmd,
                                      const std::filesystem::path& log_file, int stdout_fd,
                                      int stderr_fd,
                                      std::function<void(const process::ExitInfo&)> done) {
  process::SpawnOptions spawn;
  spawn.argv = cmd.argv;
  if (!log_file.empty()) {
    // The per-instance --log file: the runtime's own diagnostics, read back
    // for RunContainerError messages.
    spawn.argv.insert(spawn.argv.begin() + 1, {"--log", log_file.string(), "--log-format", "json"});
  }
  spawn.stdout_fd = stdout_fd;
  spawn.stderr_fd = stderr_fd;
  // Copy-assigned from a std::string: assigning the literal trips GCC 12's
  // false -Wrestrict positive (libstdc++ PR 105329) at -O2.
  spawn.cwd = std::string(kRootDir);
  if (cmd.step == "create") {
    // A create that outlives a SIGKILLed supervisor would go on making the
    // container after recovery has looked (the next run's, or the shim's
    // delete): it dies with us, and recovery finds at most a half-made
    // container, which it handles.
    spawn.pre_exec = [parent = ::getpid()] {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
      return ::getppid() == parent ? 0 : ESRCH;  // we died before the prctl
    };
  }
  auto child = process::Spawn(spawn);
  if (!child) return child.take_error().Wrap("runtime " + cmd.step);
  pid_t pid = child->pid();
  if (auto s = TrackRuntimeCall(std::move(*child), cmd.step, log_file, std::move(done)); !s) {
    return s.take_error();
  }
  return pid;
}

Status Instances::TrackRuntimeCall(process::ChildProcess process, const std::string& step,
                                   const std::filesystem::path& log_file,
                                   std::function<void(const process::ExitInfo&)> done) {
  pid_t pid = process.pid();
  auto call = std::make_unique<RuntimeCall>();
  call->process = std::move(process);
  call->what = step;
  if (auto s = pod_.reaper.Track(
          call->process,
          [this, pid, done = std::move(done)](const process::ExitInfo& exit) {
            if (auto it = calls_.find(pid); it != calls_.end() && it->second->deadline) {
              pod_.loop.CancelTimer(it->second->deadline);
            }
            calls_.erase(pid);
            done(exit);
            host_.MaybeFinish();
          });
      !s) {
    return s;
  }
  call->started = pod_.loop.Now();
  call->log_file = log_file;
  calls_.emplace(pid, std::move(call));
  if (BoundedByRuntimeTimeout(step)) {
    // A hung runtime is killed at its deadline; its exit then fails the
    // call like any other runtime failure (runtime_timeout.h). While the
    // pod terminates the grace bounds it too (S14.41).
    if (auto at =
            RuntimeCallDeadline(pod_.loop.Now(), pod_.options.runtime_timeout, termination_end_)) {
      ArmCallDeadline(pid, *at);
    }
  }
  return Ok();
}

void Instances::ArmCallDeadline(pid_t pid, MonoTime at) {
  RuntimeCall& call = *calls_.at(pid);
  if (call.deadline) pod_.loop.CancelTimer(call.deadline);
  call.deadline_at = at;
  call.deadline = pod_.loop.AddTimer(at, [this, pid] {
    auto it = calls_.find(pid);
    if (it == calls_.end()) return;
    RuntimeCall& c = *it->second;
    c.deadline = 0;
    // What the call was given: --runtime-timeout, or less when the pod's
    // termination cut it (S14.41).
    const Duration allowed = c.deadline_at - c.started;
    log::Warn("{}", RuntimeTimeoutMessage(c.what, allowed));
    RecordRuntimeTimeout(c.log_file, c.what, allowed);
    (void)c.process.SendSignal(SIGKILL);
  });
}

void Instances::BoundByTermination(MonoTime budget_end) {
  // S14.41: the end of the grace, or the 2 s floor from the moment the
  // termination (or its shortening by a second SIGINT) was seen.
  const MonoTime end = std::max(budget_end, pod_.loop.Now() + kRuntimeCallFloor);
  if (termination_end_ && *termination_end_ <= end) return;
  termination_end_ = end;
  for (auto& [pid, call] : calls_) {
    if (!BoundedByRuntimeTimeout(call->what)) continue;
    if (call->deadline && call->deadline_at <= end) continue;
    ArmCallDeadline(pid, end);
  }
}

void Instances::KillCall(pid_t pid) {
  if (auto it = calls_.find(pid); it != calls_.end()) {
    (void)it->second->process.SendSignal(SIGKILL);
  }
}

bool Instances::SettleForEnd() {
  // Every runtime call (deletes above all) ends before the pod cleans up.
  if (!calls_.empty()) return false;
  for (auto& [id, inst] : table_) {
    if (inst->state.NeedsDelete()) {
      if (!inst->state.Deleting()) Advance(*inst, InstanceInput::kDeleteAsked);
      return false;
    }
  }
  return true;
}

void Instances::EndAll() {
  for (auto& [pid, call] : calls_) (void)call->process.KillAndReap();
  calls_.clear();
  // S14.11: before the mounts and the runtime's root go.
  DeleteRuntimeLeftovers();
  for (auto& [id, inst] : table_) {
    if (inst->log) {
      for (int i = 0; i < 2; ++i) {
        (void)inst->log->Close(i == 0 ? logs::LogStream::kStdout : logs::LogStream::kStderr,
                               pod_.loop.clock().WallNow());
      }
    }
    if (inst->root_mounted) (void)hostfs::RemoveWritableRoot(inst->root);
  }
  table_.Clear();
}

}  // namespace podvisor::supervisor::executor
