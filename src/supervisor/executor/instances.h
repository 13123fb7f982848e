// supervisor::Instances: the container instances of one pod, owned by the
// Executor. It carries out the Lifecycle's CreateContainer, StartContainer,
// DeleteContainer and SignalContainer: each instance moves through its
// named steps (instance_steps.h), its runtime calls go through the
// launcher (launcher.h), and what happens is fed back as Lifecycle events
// (RuntimeCreated, RuntimeStarted, RuntimeFailed, ContainerExited) through
// the InstanceHost. It also owns every runtime call the pod makes (exec for
// hooks, probes and `podvisor exec` included) and the gzip of rotated logs:
// the pod's end waits for all of them.
//
// Files: instances.cc (the runtime calls, lookups), runtime.cc (create,
// start, exit, delete), init_adoption.cc, limits.cc (S14.10-S14.14),
// container_logs.cc (log pipes, rotation).
#pragma once

#include <sys/types.h>

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"
#include "hostfs/instance_plan.h"
#include "hostfs/layout.h"
#include "image/image.h"
#include "oci/runtime_cli.h"
#include "pod/model.h"
#include "process/child_process.h"
#include "process/exit_info.h"
#include "process/reaper.h"
#include "supervisor/executor/executor_options.h"
#include "supervisor/executor/handler_runner.h"
#include "supervisor/executor/instance_steps.h"
#include "supervisor/executor/instance_table.h"
#include "supervisor/executor/launcher.h"
#include "supervisor/lifecycle/lifecycle.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

// What the instances need from the rest of the pod; the Executor is it.
class InstanceHost {
 public:
  virtual ~InstanceHost() = default;
  // Queues a Lifecycle event, fed after the current batch (never
  // re-entrantly).
  virtual void Feed(lifecycle::Event event) = 0;
  // Records a pod event (events.jsonl) and logs it.
  virtual void OnPublish(const lifecycle::Publish& p) = 0;
  // A runtime call ended, or a delete was tried again: the pod may end now.
  virtual void MaybeFinish() = 0;
  // The pod has finished: no more children are started (log compression).
  virtual bool PodFinished() const = 0;
  // The instance number the Lifecycle runs now of `container` (S14.12
  // keeps its record).
  virtual int CurrentInstance(const std::string& container) const = 0;
  // The sandbox's namespaces, the pod cgroup and the pod's addresses, as
  // a new instance's config needs them (oci::InstanceFacts).
  virtual void AddPodFacts(hostfs::InstanceFacts& facts) const = 0;
  // S15.4: hands descriptors of an instance to the sandbox's holder, which
  // keeps them for a supervisor that adopts the pod after a crash; and
  // forgets an instance's (`key` and `key`/pidfd). No-ops without one.
  virtual void KeepForNext(const std::string& /*key*/, const std::vector<int>& /*fds*/) {}
  virtual void ForgetKept(const std::string& /*key*/) {}
};

// A process the pod waits for: a runtime call, or the compressor of a
// rotated log.
struct RuntimeCall {
  process::ChildProcess process;
  std::string what;  // the runtime step ("create", "exec", ...) or "compress-log"
  loop::EventLoop::TimerId deadline = 0;  // runtime_timeout.h; 0 when unbounded
  MonoTime started{};
  MonoTime deadline_at{};          // when `deadline` fires
  std::filesystem::path log_file;  // the call's --log, for the timeout's line
};

class Instances {
 public:
  using Calls = std::map<pid_t, std::unique_ptr<RuntimeCall>>;
  // What the Executor owns that the instances read; all outlive them.
  struct Pod {
    loop::EventLoop& loop;
    process::Reaper& reaper;
    const hostfs::PodLayout& layout;
    const ExecutorOptions& options;
    const pod::Pod& pod;
    const std::map<std::string, image::Image>& images;  // by container name
  };

  // `launcher` makes the create, start and delete calls; null: the
  // runtime's command line (RuntimeCliLauncher), made on first use.
  Instances(Pod pod, InstanceHost& host, std::unique_ptr<RuntimeLauncher> launcher = nullptr);
  ~Instances();
  Instances(const Instances&) = delete;
  Instances& operator=(const Instances&) = delete;

  // runtime.cc: the Lifecycle's actions.
  void Create(const lifecycle::CreateContainer& a);
  void Start(const lifecycle::StartContainer& a);
  void Delete(const lifecycle::DeleteContainer& a);
  void Signal(const lifecycle::SignalContainer& a);

  // The current record of (container, instance), or one by runtime id:
  // callbacks of runtime calls hold the id, because a failed create is
  // retried under the same instance number with a new id.
  ContainerInstance* Find(std::string_view container, int instance);
  ContainerInstance* FindById(const std::string& id);

  // The runtime's command line for this pod (its own --root).
  oci::RuntimeCli Runtime() const;
  // runtime_exec.cc: the handler runner's seam to exec in the current
  // record of (container, instance), by its runtime id; null when there is
  // none.
  std::unique_ptr<InstanceExec> ExecIn(std::string_view container, int instance);
  // Spawns one runtime call, tracked by the reaper; returns its pid.
  Result<pid_t> SpawnRuntime(const oci::RuntimeCommand& cmd, const std::filesystem::path& log_file,
                             int stdout_fd, int stderr_fd,
                             std::function<void(const process::ExitInfo&)> done);
  // SIGKILLs the runtime call `pid` if it still runs (an exec's timeout or
  // cancel); its exit then comes as usual.
  void KillCall(pid_t pid);
  // S14.41: the pod terminates and its grace budget ends at `budget_end`:
  // every bounded runtime call, running or to come, ends by then (at least
  // kRuntimeCallFloor after this call). Called after every batch while the
  // pod terminates; the bound only ever moves earlier.
  void BoundByTermination(MonoTime budget_end);

  // instance_handover.cc (S15.1): the records for the next supervisor
  // (in creation order), the descriptors that go with them (by
  // CarriedFdKey), whether no runtime call runs and no instance is between
  // two steps (else `busy` says which), and taking the records back with
  // their descriptors (those used are moved out of `fds`).
  nlohmann::json SaveState();
  std::vector<std::pair<std::string, int>> CarriedFds();
  bool Quiet(std::string* busy);
  // `adopting`: from a supervisor that died (S15.5), whose runtime calls
  // died with it: an instance between two steps is moved on as if its
  // call had failed (a create, a start) or is deleted again.
  Status Resume(const nlohmann::json& saved, std::map<std::string, Fd>& fds, bool adopting);
  // The running inits taken over from a supervisor that died.
  void ForEachAdopted(const std::function<void(const std::string& container, pid_t pid)>& f);

  // limits.cc.
  // S14.10: warns (log and event) when the pod may need more descriptors
  // than RLIMIT_NOFILE allows.
  void WarnAboutDescriptorLimit();
  // S14.11: descriptors held back for deletes, so that a supervisor out of
  // descriptors can still delete containers (which frees theirs). Release
  // returns whether `spawn_error` was for lack of descriptors and the
  // reserve had some to give; Refill takes them back when it can.
  bool ReleaseDescriptorReserve(const Error& spawn_error);
  void RefillDescriptorReserve();
  // S14.13: removes an exec process file once the runtime has read it.
  void ExpireExecFile(const std::filesystem::path& file);

  // The pod's end. Whether nothing is left to wait for: no call runs and
  // the runtime holds no instance; while one is held and not being
  // deleted, its delete is asked here.
  bool SettleForEnd();
  // After the loop: kills the calls still running, deletes what the
  // runtime still knows (S14.11), closes the logs, unmounts the roots and
  // forgets every record.
  void EndAll();

 private:
  class RuntimeExec;  // InstanceExec through the runtime's exec
  // Runs `args` inside the instance through the runtime's exec; `done`
  // gets success (exit 0 in time) and the output (at most 10 KiB). Returns
  // the runtime process's pid, to kill it on cancel, or 0 when it could not
  // start (done has then been queued with the reason).
  pid_t ExecInContainer(ContainerInstance& inst, std::string_view name,
                        const std::vector<std::string>& args,
                        const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
                        const std::function<void(bool ok, std::string output)>& done);
  using Instance = ContainerInstance;

  // runtime.cc: what happens to an instance goes through Advance, which
  // moves it to its next step and carries out what that step asks for.
  Status Prepare(Instance& inst);
  void OnInitExited(Instance& inst, const process::ExitInfo& exit);
  void Advance(Instance& inst, InstanceInput input, const std::string& message = {});
  void CarryOut(Instance& inst, InstanceAction action, const std::string& message);
  void SpawnStart(Instance& inst);
  void SpawnDelete(Instance& inst);
  void ReportExit(Instance& inst);
  void WatchLogPipe(Instance& inst, int index);
  void FinishDelete(Instance& inst);
  void ReleaseDescriptors(Instance& inst);
  std::string TerminationMessage(const Instance& inst, int exit_code) const;
  // S9.5: whether the kernel OOM-killed a process of the instance's cgroup.
  bool OomKilledSinceCreate(const Instance& inst) const;
  std::string RuntimeId(std::string_view container, int instance) const;

  // instance_handover.cc: tracks a resumed instance's init again: our
  // child after a re-exec, watched through its pidfd after a crash.
  Status ResumeInit(Instance& inst, pid_t pid, uint64_t start_time, std::map<std::string, Fd>& fds);
  Status WatchAdoptedInit(Instance& inst, pid_t pid, Fd pidfd);
  void OnAdoptedInitEnded(const std::string& id, int attempt);

  // init_adoption.cc: the exit of a create or run (or of the process it
  // left holding the init); the init becomes our child.
  void OnCreateCallExited(const std::string& id, const process::ExitInfo& exit);
  void AdoptCreatedInit(Instance& inst);
  void FailCreate(Instance& inst, InstanceInput input, const std::string& message);
  Status AdoptInit(Instance& inst, pid_t pid);

  // limits.cc.
  // S14.11: a runtime delete that could not be spawned is tried again.
  void RetryDeleteLater(Instance& inst);
  // S14.11: what a failed create may have left in the instance's cgroup
  // (a runtime killed half way leaves its init without runtime state).
  void KillCgroupRemnants(const Instance& inst);
  // S14.12: the records and directories of a container's instances older
  // than the current one and the last ended one.
  void RetireOldInstances(const std::string& container);
  // S14.11: at the end, `delete --force` for every container the runtime
  // still knows under the pod's --root, before that root is removed.
  void DeleteRuntimeLeftovers();

  // container_logs.cc: reading log pipes; rotation's retention and gzip.
  // Reads what the pipe holds now; true at EOF.
  bool ReadLogPipe(Instance& inst, int index);
  void OnLogRotated(const std::filesystem::path& dir, int instance);
  void StartCompression();

  // instances.cc: tracks a runtime process as a call: its exit runs `done`,
  // the pod's end waits for it, and --runtime-timeout bounds it if `step`
  // is bounded.
  Status TrackRuntimeCall(process::ChildProcess process, const std::string& step,
                          const std::filesystem::path& log_file,
                          std::function<void(const process::ExitInfo&)> done);
  // (Re)arms the call's deadline at `at`: then it is SIGKILLed and fails.
  void ArmCallDeadline(pid_t pid, MonoTime at);
  RuntimeLauncher& Launcher();
  const pod::Container* ContainerSpec(std::string_view name) const;

  Pod pod_;
  InstanceHost& host_;
  InstanceTable table_;
  std::unique_ptr<RuntimeLauncher> launcher_;
  Calls calls_;
  std::vector<Fd> fd_reserve_;               // S14.11: /dev/null descriptors held for deletes
  std::optional<MonoTime> termination_end_;  // S14.41: runtime calls end by then
  // Rotated logs waiting for gzip, one child at a time (container_logs.cc).
  std::deque<std::pair<std::filesystem::path, int>> compress_queue_;  // file, instance
  std::filesystem::path compressing_;
};

}  // namespace podvisor::supervisor::executor
