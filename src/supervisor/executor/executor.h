// supervisor::Executor: the shell around the pure Lifecycle. It owns the
// event loop and everything that touches the kernel or another program for
// one pod, turns what happens into Lifecycle events and carries out the
// actions the Lifecycle returns (docs/ARCHITECTURE.md "The shell"):
//
//   runtime calls   create/start/delete/exec are child processes tracked
//                   by the loop through the reaper; nothing blocks on them
//   containers      each instance's init process is adopted by pidfd (we
//                   are PID 1 or a child subreaper) and signalled directly
//                   through it (S5.9); its exit comes from waitid
//   logs            stdout/stderr are pipes we own, written as CRI logs
//   hooks, probes   exec through the runtime; tcpSocket by a non-blocking
//                   connect, httpGet and gRPC through our HttpClient
//                   (probes/), both from the pod's network namespace
//   timers          the Lifecycle's ArmTimer/CancelTimer on the loop
//   control         the control socket: status, stop, kill
//   signals         SIGTERM/SIGINT stop the pod; SIGCHLD drives the reaper
//
// Events the shell produces while carrying out actions are queued and fed
// to the Lifecycle after the current batch, never re-entrantly.
#pragma once

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cgroups/mode.h"
#include "cgroups/pod_cgroup.h"
#include "common/fd.h"
#include "network/attachment.h"
#include "network/pod_network.h"
#include "oci/image.h"
#include "oci/layout.h"
#include "oci/runtime_cli.h"
#include "oci/spec.h"
#include "pod/model.h"
#include "signals/reaper.h"
#include "signals/signalfd.h"
#include "supervisor/control/control_api.h"
#include "supervisor/control/control_server.h"
#include "supervisor/control/pod_control.h"
#include "supervisor/control/sd_notify.h"
#include "supervisor/executor/executor_options.h"
#include "supervisor/executor/handler_runner.h"
#include "supervisor/executor/hooks_probes.h"
#include "supervisor/executor/instance_steps.h"
#include "supervisor/executor/instance_table.h"
#include "supervisor/executor/launcher.h"
#include "supervisor/executor/runtime_timeout.h"
#include "supervisor/lifecycle/lifecycle.h"
#include "supervisor/logs/event_recorder.h"
#include "supervisor/logs/log_files.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/probes/http_client.h"
#include "supervisor/probes/net_check.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor {

class Executor {
 public:
  // Everything that can fail before a container exists: layout, images,
  // sandbox, control socket, signal handling. Nothing is left behind when
  // it fails. `images` (by container name) are those `run` already loaded
  // from options.bundle; the others are loaded here.
  static Result<std::unique_ptr<Executor>> Create(pod::Pod pod, ExecutorOptions options,
                                                  std::map<std::string, oci::Image> images = {});
  ~Executor();

  // Runs the pod until it ended and everything is cleaned up; returns the
  // final phase.
  Result<pod::PodPhase> Run();
  // The pod's status now; after Run, the final one (`run`'s last lines).
  pod::PodStatus FinalStatus() const { return lifecycle_.Status(); }

 private:
  using Instance = ContainerInstance;  // internal.h
  struct RuntimeCall;

  Executor(pod::Pod pod, ExecutorOptions options, EventLoop loop);

  // executor.cc: the loop, the event queue, actions, signals, the end.
  Status Setup();
  // Setup's steps, in its order.
  Result<std::optional<PendingSandbox>> StartSandbox();
  Status LoadImages();
  Status ClaimPodState();  // recovery, then the pod's directories and cgroup
  Status WatchSignals();
  Status OpenEventsAndControl();
  Status PreparePodFiles();  // volumes, /etc files, /dev/shm
  void Feed(Event event);
  void Drain();
  void Execute(const Action& action);
  void OnSignal();
  void OnTimerAction(const ArmTimer& arm);
  void OnPublish(const Publish& p);
  void NotifySystemd();  // docs/INTERFACE.md "systemd", after each batch
  void OnPodEnded(const PodEnded& e);
  void MaybeFinish();
  void Cleanup();
  Now CurrentTime() const;
  std::string RuntimeId(std::string_view container, int instance) const;

  // network.cc: the CNI attachment (ADD after the sandbox, DEL at the
  // end) and the /etc files that depend on the pod's address and DNS.
  Status SetupNetwork();
  void TeardownNetwork();
  Status WriteEtcFiles();
  std::filesystem::path NetworkStateFile() const;

  // cgroups.cc: the pod cgroup (S10.4) and OOM kills (S9.5).
  Status SetupPodCgroup();
  bool OomKilledSinceCreate(const Instance& inst) const;

  // runtime.cc: create, start, exit, delete. What happens to an instance
  // goes through Advance, which moves it to its next step
  // (instance_steps.h) and carries out what that step asks for.
  void CreateInstance(const CreateContainer& a);
  Status PrepareInstance(Instance& inst);
  void StartInstance(const StartContainer& a);
  void DeleteInstance(const DeleteContainer& a);
  void DeleteRecord(Instance& inst);
  void SignalInstance(const SignalContainer& a);
  void OnInitExited(Instance& inst, const signals::ExitInfo& exit);
  void Advance(Instance& inst, InstanceInput input, const std::string& message = {});
  void CarryOut(Instance& inst, InstanceAction action, const std::string& message);
  void SpawnStart(Instance& inst);
  void SpawnDelete(Instance& inst);

  // init_adoption.cc: the exit of a create or run (or of the process it
  // left holding the init); the init becomes our child.
  void OnCreateCallExited(const std::string& id, const signals::ExitInfo& exit);
  void AdoptCreatedInit(Instance& inst);
  void FailCreate(Instance& inst, InstanceInput input, const std::string& message);
  Status AdoptInit(Instance& inst, pid_t pid);

  void ReportExit(Instance& inst);
  void WatchLogPipe(Instance& inst, int index);
  void FinishDelete(Instance& inst);
  void ReleaseDescriptors(Instance& inst);
  std::string TerminationMessage(const Instance& inst, int exit_code) const;

  // limits.cc: the supervisor's own limits (SEMANTICS S14.10-S14.14).
  // S14.10: warns (log and event) when the pod may need more descriptors
  // than RLIMIT_NOFILE allows.
  void WarnAboutDescriptorLimit();
  // S14.11: a runtime delete that could not be spawned is tried again.
  void RetryDeleteLater(Instance& inst);
  // S14.11: descriptors held back for deletes, so that a supervisor out of
  // descriptors can still delete containers (which frees theirs). Release
  // returns whether `spawn_error` was for lack of descriptors and the
  // reserve had some to give; Refill takes them back when it can.
  bool ReleaseDescriptorReserve(const Error& spawn_error);
  void RefillDescriptorReserve();
  // S14.11: what a failed create may have left in the instance's cgroup
  // (a runtime killed half way leaves its init without runtime state).
  void KillCgroupRemnants(const Instance& inst);
  // S14.12: the records and directories of a container's instances older
  // than the current one and the last ended one.
  void RetireOldInstances(const std::string& container);
  // S14.13: removes an exec process file once the runtime has read it.
  void ExpireExecFile(const std::filesystem::path& file);
  // S14.11: at the end, `delete --force` for every container the runtime
  // still knows under the pod's --root, before that root is removed.
  void DeleteRuntimeLeftovers();

  // container_logs.cc: reading log pipes; rotation's retention and gzip.
  // Reads what the pipe holds now; true at EOF.
  bool ReadLogPipe(Instance& inst, int index);
  void OnLogRotated(const std::filesystem::path& dir, int instance);
  void StartCompression();
  // Spawns one runtime call, tracked by the reaper; returns its pid.
  Result<pid_t> SpawnRuntime(const oci::RuntimeCommand& cmd, const std::filesystem::path& log_file,
                             int stdout_fd, int stderr_fd,
                             std::function<void(const signals::ExitInfo&)> done);
  // Tracks a runtime process as a call: its exit runs `done`, the pod's end
  // waits for it, and --runtime-timeout bounds it if `step` is bounded.
  Status TrackRuntimeCall(signals::ChildProcess process, const std::string& step,
                          const std::filesystem::path& log_file,
                          std::function<void(const signals::ExitInfo&)> done);
  // The current record of (container, instance), or one by runtime id:
  // callbacks of runtime calls hold the id, because a failed create is
  // retried under the same instance number with a new id.
  Instance* FindInstance(std::string_view container, int instance);
  Instance* FindById(const std::string& id);
  // The runtime's command line for this pod (its own --root).
  oci::RuntimeCli Runtime() const;
  // An instance's create, start and delete calls (launcher.h), made on
  // first use.
  RuntimeLauncher& Launcher();

  // runtime_exec.cc: what hooks and probes (hooks_probes_) get of the
  // pod: exec through the runtime, the containers' specs, the netns.
  class RuntimeExec;  // InstanceExec through the runtime's exec
  // Runs `args` inside the instance through the runtime's exec; `done`
  // gets success (exit 0 in time) and the output (at most 10 KiB). Returns
  // the runtime process's pid, to kill it on cancel, or 0 when it could not
  // start (done has then been queued with the reason).
  pid_t ExecInContainer(Instance& inst, std::string_view name, const std::vector<std::string>& args,
                        const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
                        const std::function<void(bool ok, std::string output)>& done);
  // The handler runner's seam to exec in `inst` (ExecInContainer).
  std::unique_ptr<InstanceExec> ExecIn(const Instance& inst);
  const pod::Container* ContainerSpec(std::string_view name) const;
  std::string NetnsPath() const;

  // control.cc: the control socket's requests (ControlApi) on the pod
  // (PodControlPort, a PodControl), made on first use; status_json.cc:
  // the v1 Pod.
  class PodControlPort;
  ControlApi& Control();
  nlohmann::json StatusJson() const;
  // The imageID of a container's image: its layout's manifest digest, or
  // the content digest of its plain rootfs, computed once per image dir.
  std::string ImageId(const std::string& container) const;
  nlohmann::json SummaryJson() const;

  // record.cc: DIR/<pod>/status.json, rewritten when the status changed.
  void WriteRecord();

  pod::Pod pod_;
  ExecutorOptions options_;
  EventLoop loop_;
  Lifecycle lifecycle_;
  oci::PodLayout layout_;
  std::map<std::string, oci::Image> images_;  // by container name
  std::vector<Fd> image_locks_;               // shared locks on the cache entries in use
  // By container: the status' imageID, filled on demand (ImageId).
  mutable std::map<std::string, std::string> image_ids_;
  std::optional<Sandbox> sandbox_;
  std::optional<network::Attachment> network_;    // attached through CNI
  std::vector<std::string> pod_ips_;              // status.podIPs
  std::vector<std::string> host_ips_;             // status.hostIPs
  std::optional<cgroups::PodCgroup> pod_cgroup_;  // absent without usable cgroup v2
  signals::Reaper reaper_;
  std::optional<signals::SignalFd> signal_fd_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<PodControl> pod_control_;  // what control_api_ acts on
  std::unique_ptr<ControlApi> control_api_;
  std::optional<EventRecorder> events_;
  SdNotifier notifier_;
  std::optional<SystemdReporter> systemd_;
  WallTime created_at_{};
  std::string uid_;
  std::unique_ptr<HooksAndProbes> hooks_probes_;  // the Lifecycle's hook and probe actions

  InstanceTable instances_;
  std::unique_ptr<RuntimeLauncher> launcher_;
  std::vector<Fd> fd_reserve_;  // S14.11: /dev/null descriptors held for deletes
  std::map<std::string, EventLoop::TimerId, std::less<>> timers_;  // by ToString(TimerId)
  std::map<pid_t, std::unique_ptr<RuntimeCall>> calls_;
  std::vector<ControlServer::Responder> stop_waiters_;
  // Rotated logs waiting for gzip, one child at a time (container_logs.cc).
  std::deque<std::pair<std::filesystem::path, int>> compress_queue_;  // file, instance
  std::filesystem::path compressing_;
  // The `status` reply for the current state; every event clears it.
  std::optional<ControlReply> status_reply_;
  std::string record_text_;  // what status.json holds now

  std::deque<Event> queue_;
  bool draining_ = false;
  // Creates and deletes (config generation, images, runtime output) leave
  // freed heap behind; after a quiet second it goes back to the kernel
  // (malloc_trim), so the supervisor's RSS is what the running pod needs.
  bool heap_churned_ = false;
  EventLoop::TimerId trim_timer_ = 0;
  int interrupts_ = 0;
  bool pod_ended_ = false;
  bool finished_ = false;
  bool owns_pod_ = false;  // recovery passed: the pod's state dir is ours
};

}  // namespace podvisor::supervisor
