// supervisor::Executor: the shell around the pure Lifecycle for one pod
// (docs/ARCHITECTURE.md "The shell"). It owns the pod's resources and the
// parts below, pumps events into the Lifecycle and hands its actions to
// the part that carries them out; it handles signals and the pod's end.
//   Instances        containers and every runtime call (instances.h)
//   HooksAndProbes   hooks and probes (hooks_probes.h)
//   PodNetworking    CNI, the pod's addresses, /etc files (pod_networking.h)
//   PodRecord        the v1 Pod, the summary, status.json (pod_record.h)
//   LifecycleTimers  ArmTimer/CancelTimer on the loop (lifecycle_timers.h)
//   HeapTrim         memory back to the kernel when quiet (heap_trim.h)
//   ImagePulls       the images pulled from registries (image_pulls.h)
//   PodDependencies  the pods podvisor.io/after waits for (pod_dependencies.h)
//   control.cc       the control API's PodControl (control/pod_control.h)
// Events raised while actions are carried out are queued and fed after the
// current batch, never re-entrantly.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroups/pod_cgroup.h"
#include "cgroups/resize.h"
#include "common/fd.h"
#include "common/host_claim.h"
#include "common/pod_id_blocks.h"
#include "common/pod_lock.h"
#include "hostfs/earlier_runs.h"
#include "hostfs/layout.h"
#include "image/image.h"
#include "pod/model.h"
#include "pod/resize.h"
#include "process/reaper.h"
#include "process/signalfd.h"
#include "supervisor/control/control_api.h"
#include "supervisor/control/control_server.h"
#include "supervisor/control/pod_control.h"
#include "supervisor/control/sd_notify.h"
#include "supervisor/executor/executor_options.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/heap_trim.h"
#include "supervisor/executor/hooks_probes.h"
#include "supervisor/executor/image_pulls.h"
#include "supervisor/executor/instances.h"
#include "supervisor/executor/lifecycle_timers.h"
#include "supervisor/executor/node_allocations.h"
#include "supervisor/executor/pod_dependencies.h"
#include "supervisor/executor/pod_networking.h"
#include "supervisor/executor/pod_record.h"
#include "supervisor/lifecycle/lifecycle.h"
#include "supervisor/logs/event_recorder.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor::executor {

class Executor : private InstanceHost {
 public:
  // Everything that can fail before a container exists: layout, images,
  // sandbox, control socket, signal handling. Nothing is left behind when
  // it fails. `images` (by container name) are those `run` already loaded
  // from options.bundle; the others are loaded here.
  static Result<std::unique_ptr<Executor>> Create(
      pod::Pod pod, const ExecutorOptions& options,
      const std::map<std::string, image::Image>& images = {});
  ~Executor() override;

  // Runs the pod until it ended and everything is cleaned up; returns the
  // final phase.
  Result<pod::PodPhase> Run();
  // The pod's status now; after Run, the final one (`run`'s last lines).
  pod::PodStatus FinalStatus() const { return lifecycle_.Status(); }
  // Whether the pod's termination was asked for (a stop request, SIGTERM,
  // SIGINT) before the pod began to end on its own: `run`'s exit status
  // tells the two apart (S14.40). The cause is written once, so a stop
  // during a termination the pod began itself does not count.
  bool StopRequested() const {
    return lifecycle_.termination_cause() == lifecycle::TerminationCause::kStopRequested;
  }

 private:
  using Instance = ContainerInstance;  // internal.h
  Executor(pod::Pod pod, ExecutorOptions options, loop::EventLoop loop);

  // Setup, in its steps' order (executor.cc; the pod cgroup in cgroups.cc).
  Status Setup();
  Result<std::optional<sandbox::PendingSandbox>> StartSandbox();
  sandbox::SandboxOptions SandboxOptionsOf() const;
  void RecordHolder();
  Status ResumeIdBlock(pid_t holder_pid);
  void AnnounceUserNamespace();
  Status LoadImages();
  void ImageReady(const std::string& container, image::Image image, Fd hold);
  std::optional<std::filesystem::path> LayoutToUnpack(const std::string& reference) const;
  Status ClaimPodState();   // recovery, then the pod's directories and cgroup
  Status SetupPodCgroup();  // S10.4
  Status WatchSignals();
  Status OpenEventsAndControl();
  void WarnAboutOomScoreFloor();  // S10.3
  Status PreparePodFiles();       // volumes, /etc files, /dev/shm
  Status WatchAwaitedPods();      // S19.3: podvisor.io/after

  // The event pump, signals and the pod's end (executor.cc).
  void Feed(lifecycle::Event event) override;
  void Drain();
  void Execute(const lifecycle::Action& action);
  void OnSignal();
  void OnPublish(const lifecycle::Publish& p) override;
  void OnPodEnded(const lifecycle::PodEnded& e);
  void MaybeFinish() override;
  void Cleanup();

  // What the parts read of the pod: InstanceHost, hooks and probes, the
  // record; control.cc holds the control API's PodControl, made on first use.
  lifecycle::Now CurrentTime() const;
  bool PodFinished() const override { return finished_; }
  int CurrentInstance(const std::string& container) const override;
  void AddPodFacts(hostfs::InstanceFacts& facts) const override;
  void KeepForNext(const std::string& key, const std::vector<int>& fds) override;
  void ForgetKept(const std::string& key) override;
  const pod::Container* ContainerSpec(std::string_view name) const;
  std::string NetnsPath() const;
  pod::PodStatus CurrentStatus() const;      // the Lifecycle's, with the pod's addresses
  void WriteRecord();                        // once the pod's state is ours
  nlohmann::json SupervisorSummary() const;  // control.cc: the summary's `supervisor`
  class PodControlPort;
  control::ControlApi& Control();

  // resize.cc (S17): `podvisor patch --subresource resize`.
  control::ControlReply Resize(const std::vector<pod::ContainerResizePatch>& patch);
  pod::PodSpec AskedSpec() const;
  pod::ResizeAdmission AdmitResize(const pod::PodSpec& asked) const;
  void KeepResizePending(const pod::PodSpec& asked, const pod::ResizeAdmission& admission);
  void ApplyAdmittedResize(const pod::PodSpec& asked,
                           const std::vector<std::filesystem::path>& mounts);
  void WatchDeferredResize();  // S17.12
  void RetryDeferredResize();
  void ActuateResize(const pod::PodSpec& before, const std::vector<std::string>& restart,
                     const std::vector<std::filesystem::path>& mounts);
  std::optional<cgroups::CgroupLocation> InstanceCgroup(
      const std::string& container, const std::vector<std::filesystem::path>& mounts);
  void AddResizeConditions(pod::PodStatus& status) const;
  void ResizeChanged();
  void ResizeInstanceMade();
  nlohmann::json ResizeStateJson() const;
  void RestoreResizeState(const nlohmann::json& state);  // resize_state.cc
  struct ResizeState {
    // PodResizePending's request: the spec's resources that are not the
    // allocated ones (pod_), by container.
    std::map<std::string, pod::ResourceRequirements> desired;
    // What a running instance's cgroup holds where it is not the
    // allocated values (a refused write); dropped at the next create.
    std::map<std::string, pod::ResourceRequirements> actual;
    std::optional<pod::PodCondition> pending;      // PodResizePending
    std::optional<pod::PodCondition> in_progress;  // PodResizeInProgress
    // A resize changed the allocated resources: the pod's are no longer
    // the manifest's (S17.10).
    bool resized = false;
  };
  ResizeState resize_;
  std::unique_ptr<AllocationWatch> allocation_watch_;  // while a resize is Deferred

  // upgrade.cc (S15.2): `podvisor upgrade`, a re-exec in place.
  struct PendingUpgrade {
    std::string binary;
    control::ControlServer::Responder respond;
    MonoTime requested{};
    Fd check_output;  // the new binary's `handover-check` answer
    bool checked = false;
    std::string to_version;
    std::string busy;  // what the upgrade waits for
    loop::EventLoop::TimerId deadline = 0;
  };
  void RequestUpgrade(const std::optional<std::string>& binary, Duration timeout,
                      control::ControlServer::Responder respond);
  void OnUpgradeCheckExited(const process::ExitInfo& exit);
  void RefuseUpgrade(PendingUpgrade& pending, const std::string& why);
  void CancelUpgrade();
  void MaybeUpgrade();
  void ExecInPlace();
  nlohmann::json HandoverState();
  // resume.cc (S15.1): Setup for a supervisor that was handed its pod.
  Status ResumeSetup();
  std::vector<lifecycle::Action> ResumeLifecycle();
  Status DeleteUnknownContainers(const nlohmann::json& state);
  void ReconcileAdopted();
  // adoption.cc (S15.4-S15.6): the state kept for a supervisor that
  // adopts the pod after a crash; what such a one finds and decides.
  void SaveStateForNext();
  std::optional<nlohmann::json> AdoptableState();
  std::optional<std::string> ReasonToStopAdopted(const nlohmann::json& state) const;
  static Result<std::unique_ptr<Executor>> StopAdoptedFirst(nlohmann::json state,
                                                            const pod::Pod& loaded,
                                                            const ExecutorOptions& options,
                                                            std::optional<std::string> reason);

  // Declared first, so released last: only once everything of the pod is
  // gone may another `run` of it start (S14.30).
  std::optional<PodLock> pod_lock_;
  pod::Pod pod_;
  ExecutorOptions options_;
  loop::EventLoop loop_;
  lifecycle::Lifecycle lifecycle_;
  hostfs::PodLayout layout_;
  std::map<std::string, image::Image> images_;  // by container name
  std::vector<Fd> image_locks_;                 // shared locks on the cache entries in use
  // S20.3: the pod's block of host ids (hostUsers: false), claimed before
  // its holder starts, released after everything of the pod is gone.
  PodIdBlock id_block_;
  std::optional<sandbox::Sandbox> sandbox_;
  PodNetworking network_;                         // CNI, the pod's addresses, its /etc files
  std::optional<cgroups::PodCgroup> pod_cgroup_;  // absent without usable cgroup v2
  // The pod cgroup's name under --cgroup-parent, unique on the host
  // (cgroups/cgroup_name.h), and its claim; empty without a parent.
  std::string pod_cgroup_name_;
  HostClaim cgroup_claim_;
  std::optional<hostfs::EarlierRun> earlier_run_;  // the previous run, set aside (S14.33)
  process::Reaper reaper_;
  std::optional<process::SignalFd> signal_fd_;
  std::unique_ptr<control::ControlServer> control_;
  std::unique_ptr<control::PodControl> pod_control_;  // what control_api_ acts on
  std::unique_ptr<control::ControlApi> control_api_;
  std::optional<logs::EventRecorder> events_;
  control::SystemdLink systemd_;  // READY=1, STOPPING=1, STATUS= to the unit
  PodRecord record_;              // the v1 Pod, the summary, status.json
  Instances instances_;
  // Destroyed before the instances: their runs may kill an exec.
  std::unique_ptr<HooksAndProbes> hooks_probes_;
  std::unique_ptr<ImagePulls> pulls_;  // S16: registry images; their workers, parked creates
  std::unique_ptr<PodDependencies> awaited_pods_;    // S19.3: while the start plan waits
  std::optional<std::string> pending_pull_warning_;  // an unreadable imagePullSecret
  std::optional<Error> fatal_;  // the run ends with it (a bundle image that cannot unpack)
  LifecycleTimers timers_;
  HeapTrim heap_trim_;  // setup's and churn's heap back to the kernel
  std::vector<control::ControlServer::Responder> stop_waiters_;

  // S15: who this supervisor is, across upgrades (the summary's
  // `supervisor` object), and what a re-exec handed it.
  struct SupervisorFacts {
    WallTime started_at{};
    int upgrades = 0;
    std::optional<WallTime> upgraded_at;
  };
  SupervisorFacts supervisor_;
  WallTime record_created_at_{};
  std::string notify_socket_;  // NOTIFY_SOCKET, given back to the next program
  std::optional<InheritedHandover> handover_;
  std::unique_ptr<PendingUpgrade> upgrade_;
  // S15.4: the state file's writes, at most one per interval.
  bool state_saving_ = false;  // set once the pod is set up (or resumed)
  bool state_urgent_ = false;  // a batch asked the runtime, a hook or a probe for something
  loop::EventLoop::TimerId state_write_timer_ = 0;
  std::optional<MonoTime> last_state_write_;
  std::string last_state_text_;
  nlohmann::json pod_json_;  // pod::ToJson(pod_), made once
  // S15.6: an adopted pod to stop (with this reason, none when it was
  // terminating already) before the new one starts.
  std::optional<nlohmann::json> previous_to_stop_;
  std::optional<std::string> previous_stop_reason_;
  bool stop_adopted_ = false;
  bool allow_adoption_ = true;
  std::optional<std::string> stop_after_resume_;

  std::deque<lifecycle::Event> queue_;
  bool draining_ = false;
  int interrupts_ = 0;
  bool pod_ended_ = false;
  bool finished_ = false;
  bool owns_pod_ = false;  // recovery passed: the pod's state dir is ours
};

}  // namespace podvisor::supervisor::executor
