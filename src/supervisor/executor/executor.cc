#include "supervisor/executor/executor.h"

#include <signal.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/log.h"

#include "cgroups/cgroup_name.h"
#include "cgroups/cleanup.h"
#include "common/file_io.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "common/signal_names.h"
#include "common/uuid.h"
#include "hostfs/earlier_runs.h"
#include "hostfs/etc_files.h"
#include "hostfs/idmapped_pod.h"
#include "hostfs/instance_plan.h"
#include "hostfs/rootfs.h"
#include "hostfs/volumes.h"
#include "image/image_cache.h"
#include "oci/capabilities.h"
#include "pod/pod_order.h"
#include "pod/resources.h"
#include "supervisor/control/control_api.h"
#include "supervisor/control/pod_control.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {

std::string InstanceKey(std::string_view container, int instance) {
  return std::string(container) + "#" + std::to_string(instance);
}

Executor::Executor(pod::Pod pod, ExecutorOptions options, loop::EventLoop loop)
    : pod_(std::move(pod)),
      options_(std::move(options)),
      loop_(std::move(loop)),
      lifecycle_(pod_, options_.lifecycle),
      layout_(options_.state_dir.parent_path(), pod_.metadata.name),
      network_(pod_, options_, layout_, [this](const lifecycle::Publish& p) { OnPublish(p); }),
      record_(pod_, images_,
              PodRecord::Facts{options_.node_hostname, options_.runtime.name,
                               pod_.spec.host_network || !options_.sandbox,
                               PodDir::At(options_.state_dir).RecordFile()}),
      instances_(Instances::Pod{loop_, reaper_, layout_, options_, pod_, images_}, *this),
      timers_(loop_, [this](lifecycle::Event event) { Feed(std::move(event)); }),
      heap_trim_(loop_) {
  HooksAndProbes::Seams seams;
  seams.feed = [this](lifecycle::Event event) { Feed(std::move(event)); };
  seams.publish = [this](const lifecycle::Publish& p) { OnPublish(p); };
  // By runtime id, taken now: a failed create is retried under the same
  // instance number with a new id (runtime_exec.cc).
  seams.exec_in = [this](std::string_view container, int instance) {
    return instances_.ExecIn(container, instance);
  };
  seams.netns_path = [this] { return NetnsPath(); };
  hooks_probes_ = std::make_unique<HooksAndProbes>(loop_, pod_, std::move(seams));

  ImagePulls::Seams pull_seams;
  pull_seams.feed = [this](lifecycle::Event event) { Feed(std::move(event)); };
  pull_seams.publish = [this](const lifecycle::Publish& p) { OnPublish(p); };
  pull_seams.create = [this](const lifecycle::CreateContainer& create) {
    state_urgent_ = true;
    heap_trim_.Churned();
    instances_.Create(create);
    SaveStateForNext();
  };
  pull_seams.image_ready = [this](const std::string& container, image::Image image, Fd hold) {
    ImageReady(container, std::move(image), std::move(hold));
  };
  pull_seams.terminating = [this] { return lifecycle_.Terminating() || pod_ended_; };
  pull_seams.fatal = [this](const std::string& message) {
    if (fatal_) return;
    fatal_ = Error(message);
    log::Error("{}: stopping the pod", message);
    Feed(lifecycle::StopRequested{std::string("ImageUnpackFailed"), Duration::zero()});
  };
  ImagePulls::Options pull_options;
  pull_options.podvisor_exe = options_.podvisor_exe;
  pull_options.store_dir = options_.image_cache_dir;
  pulls_ =
      std::make_unique<ImagePulls>(loop_, reaper_, std::move(pull_seams), std::move(pull_options));
}

Executor::~Executor() {
  Cleanup();
}

// Everything before the first container, in an order that matters: the
// sandbox's holder starts first and finishes starting while the images,
// recovery and directories are done; it is waited for where its
// namespaces are first needed. Should set-up fail, the pending holder is
// killed with it.
Status Executor::Setup() {
  // Before anything is spawned: NOTIFY_SOCKET must not reach the runtime.
  if (const char* notify = std::getenv("NOTIFY_SOCKET")) notify_socket_ = notify;
  systemd_ = control::SystemdLink::FromEnvironment(pod_.metadata.name);
  supervisor_.started_at = loop_.clock().WallNow();
  if (handover_) return ResumeSetup();
  // One supervisor per pod, decided before anything of it is looked at.
  const std::filesystem::path state_root = options_.state_dir.parent_path();
  if (auto s = podvisor::MakeDirs(state_root, 0755); !s) return s;
  auto lock = PodLock::TryTake(state_root, pod_.metadata.name);
  if (!lock) return lock.take_error();
  pod_lock_.emplace(std::move(*lock));
  // S15.5: a pod whose supervisor died is adopted, not killed.
  if (allow_adoption_) {
    if (auto state = AdoptableState()) {
      std::optional<std::string> reason = ReasonToStopAdopted(*state);
      if (!reason && !state->value("terminating", false)) {
        InheritedHandover adopted;
        adopted.state = std::move(*state);
        adopted.adopting = true;
        handover_ = std::move(adopted);
        return ResumeSetup();
      }
      previous_to_stop_ = std::move(*state);
      previous_stop_reason_ = std::move(reason);
      return Error("pod " + pod_.metadata.name + ": the previous pod is stopped first", EAGAIN);
    }
  }
  // The API server gives every pod a uid; scripts reading `status -o json`
  // rely on one being there.
  if (pod_.metadata.uid.empty()) pod_.metadata.uid = RandomUuid();  // the downward API's too
  record_created_at_ = loop_.clock().WallNow();
  record_.SetIdentity(pod_.metadata.uid, record_created_at_);
  if (auto s = LoadImages(); !s) return s;
  if (auto s = ClaimPodState(); !s) return s;
  // After the claim: the holder binds its keeper socket in the pod's
  // directory, which the claim makes, and recovery ends the previous
  // holder and unlinks the previous socket of that name first.
  auto pending_sandbox = StartSandbox();
  if (!pending_sandbox) return pending_sandbox.take_error();
  if (auto s = WatchSignals(); !s) return s;
  if (*pending_sandbox) {
    auto sandbox = (*pending_sandbox)->WaitReady();
    if (!sandbox) return sandbox.take_error();
    sandbox_.emplace(std::move(*sandbox));
    RecordHolder();
  }
  // The pod's address exists before any container does (docs/INTERFACE.md
  // "Networking"); a network that cannot be set up fails the run here.
  // S22.9: a user-mode network's tool lives while the holder keeps its
  // exit descriptor, so it outlives this supervisor but not the pod.
  if (auto s = network_.Attach(
          sandbox_ ? sandbox_->network_ns() : std::nullopt, pod_.metadata.uid,
          [this](const std::string& key, const std::vector<int>& fds) { KeepForNext(key, fds); });
      !s) {
    return s;
  }
  if (auto s = OpenEventsAndControl(); !s) return s;
  AnnounceUserNamespace();
  return PreparePodFiles();
}

// What a SIGKILLed supervisor of this pod left goes before anything new
// is made (recovery.h); a live one's pod is not ours to touch. From here
// on the pod's state is ours (owns_pod_): a failure cleans it up.
Status Executor::ClaimPodState() {
  oci::RuntimeCli runtime = instances_.Runtime();
  RecoveryInput recovery{&layout_, &runtime, "", options_.runtime_timeout,
                         options_.host_claims_dir};
  if (!options_.cgroup_parent.empty()) {
    // S14.31: the name a pod of another state directory does not hold; a
    // previous run's first, so that recovery cleans the cgroup it used.
    auto name = cgroups::ClaimPodCgroupName(
        options_.host_claims_dir, options_.cgroup_parent,
        ClaimOwner{options_.state_dir.parent_path(), pod_.metadata.name},
        cgroups::ReadRecordedCgroupName(options_.state_dir));
    if (!name) return name.take_error();
    pod_cgroup_name_ = std::move(name->name);
    cgroup_claim_ = std::move(name->claim);
    recovery.pod_cgroup = options_.cgroup_parent + "/" + pod_cgroup_name_;
  }
  if (auto r = RecoverLeftovers(recovery); !r) return r.take_error();
  owns_pod_ = true;
  if (auto s = podvisor::MakeDirs(options_.state_dir, 0700); !s) return s;
  if (auto s = podvisor::MakeDirs(options_.log_dir, 0755); !s) return s;
  // S14.33: this run is a new record; the previous one's files move aside.
  auto earlier = hostfs::SetEarlierRunAside(options_.state_dir, options_.log_dir);
  if (!earlier) return earlier.take_error();
  earlier_run_ = std::move(*earlier);
  if (auto s = hostfs::RememberLogDir(options_.state_dir, options_.log_dir); !s) return s;
  if (!pod_cgroup_name_.empty()) {
    if (auto s = cgroups::RecordCgroupName(options_.state_dir, pod_cgroup_name_); !s) return s;
  }
  return SetupPodCgroup();
}

// Signals are blocked before any child exists, then read from a signalfd.
Status Executor::WatchSignals() {
  ::signal(SIGPIPE, SIG_IGN);
  // A log that reaches RLIMIT_FSIZE (ulimit -f, a unit's LimitFSIZE=) is a
  // write that fails with EFBIG and is reported (S14.16), not a signal that
  // kills the supervisor. Children get default dispositions back (spawn.h).
  ::signal(SIGXFSZ, SIG_IGN);
  auto sfd = process::SignalFd::Create(
      {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM});
  if (!sfd) return sfd.take_error();
  signal_fd_ = std::move(*sfd);
  return loop_.Add(signal_fd_->fd(), EPOLLIN, [this](uint32_t) { OnSignal(); });
}

// The pod's event record and its control socket; then the warnings and
// reserves that need the events.
Status Executor::OpenEventsAndControl() {
  auto events = logs::EventRecorder::Open(PodDir::At(options_.state_dir).EventsFile());
  if (!events) return events.take_error();
  events_.emplace(std::move(*events));

  auto control = control::ControlServer::Listen(
      loop_, PodDir::At(options_.state_dir).ControlSocket(),
      [this](const nlohmann::json& req, control::ControlServer::Responder respond) {
        Control().Handle(req, std::move(respond));
      });
  if (!control) return control.take_error();
  control_ = std::move(*control);
  instances_.WarnAboutDescriptorLimit();  // S14.10: once the event can be recorded
  instances_.RefillDescriptorReserve();   // S14.11
  WarnAboutOomScoreFloor();
  return Ok();
}

// S10.3: without CAP_SYS_RESOURCE each config's oomScoreAdj is raised to
// the supervisor's own (hostfs::ReadHostFacts); one event says which.
void Executor::WarnAboutOomScoreFloor() {
  const std::optional<int> floor = oci::OomScoreAdjFloor();
  if (!floor || options_.node_memory_bytes <= 0) return;
  std::string clamped;
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      const int wanted = pod::ComputeOomScoreAdj(pod_.spec, c, options_.node_memory_bytes);
      if (wanted >= *floor) continue;
      clamped += (clamped.empty() ? "" : ", ") + c.name + " (" + std::to_string(wanted) + ")";
    }
  }
  if (clamped.empty()) return;
  OnPublish(lifecycle::Publish{lifecycle::EventType::kWarning, "OomScoreAdjClamped", "pod",
                               "podvisor lacks CAP_SYS_RESOURCE: oom_score_adj raised to its own " +
                                   std::to_string(*floor) + " for " + clamped + " (S10.3)"});
}

// The pod's volumes, its /etc files and its /dev/shm.
Status Executor::PreparePodFiles() {
  // A container's subPaths are made when it is created (PrepareInstance),
  // not here: an init container may write the file a later one mounts.
  if (auto s = hostfs::PreparePodVolumes(pod_, layout_.VolumesDir(), network_.pod_ips(),
                                         options_.node_memory_bytes);
      !s) {
    return s;
  }
  if (auto s = network_.WriteEtcFiles(); !s) return s;
  // The pod's own /dev/shm only makes sense in its own IPC namespace, and
  // mounting it needs privileges.
  if (sandbox_ && sandbox_->ipc_ns()) {
    if (auto s = hostfs::MountPodShm(layout_); !s) return s;
  }
  // S20.22: hostUsers: false: the volumes and /etc files, now that they
  // exist, idmapped to the pod's user namespace before any container;
  // CleanupPod unmounts them.
  if (sandbox_ && sandbox_->user_ns()) {
    if (auto s = hostfs::IdmapPodMounts(pod_, layout_, *sandbox_->user_ns()); !s) return s;
  }
  return Ok();
}

lifecycle::Now Executor::CurrentTime() const {
  return lifecycle::Now{loop_.Now(), loop_.clock().WallNow()};
}

int Executor::CurrentInstance(const std::string& container) const {
  return lifecycle_.InstanceOf(container);
}

void Executor::AddPodFacts(hostfs::InstanceFacts& facts) const {
  if (sandbox_) {
    facts.namespaces.network = sandbox_->network_ns().value_or("").string();
    facts.namespaces.ipc = sandbox_->ipc_ns().value_or("").string();
    facts.namespaces.uts = sandbox_->uts_ns().value_or("").string();
    facts.namespaces.pid = sandbox_->pid_ns().value_or("").string();
    facts.namespaces.user = sandbox_->user_ns().value_or("").string();
  }
  if (id_block_.valid()) {
    facts.user_namespace =
        oci::PodUserNamespaceIds{id_block_.start(), id_block_.start(), id_block_.size()};
  }
  if (pod_cgroup_) facts.pod_cgroup = pod_cgroup_->relative();
  facts.pod_cgroup_name = pod_cgroup_name_;
  facts.pod_ips = network_.pod_ips();
}

pod::PodStatus Executor::CurrentStatus() const {
  pod::PodStatus status = lifecycle_.Status();
  status.host_ips = network_.host_ips();
  status.pod_ips = network_.pod_ips();
  AddResizeConditions(status);  // S17.6
  return status;
}

void Executor::WriteRecord() {
  if (owns_pod_) record_.Write(CurrentStatus());
}

// S19.3: the pods of podvisor.io/after, watched from before the start
// plan's first batch (or a handed-over wait's), so no Ready is missed.
Status Executor::WatchAwaitedPods() {
  const std::vector<std::string> names =
      handover_ ? lifecycle_.awaited_pods() : pod::AfterPods(pod_);
  if (names.empty() || (handover_ && !lifecycle_.AwaitingPods())) return Ok();
  PodDependencies::Seams seams;
  seams.feed = [this](lifecycle::Event event) { Feed(std::move(event)); };
  seams.publish = [this](const lifecycle::Publish& p) { OnPublish(p); };
  auto watcher = PodDependencies::Watch(loop_, options_.state_dir.parent_path(), pod_.metadata.name,
                                        names, std::move(seams));
  if (!watcher) return watcher.take_error();
  awaited_pods_ = std::move(*watcher);
  return Ok();
}

Result<pod::PodPhase> Executor::Run() {
  if (auto s = WatchAwaitedPods(); !s) return s.take_error();
  // The start actions are a batch like any other: events they cause wait.
  draining_ = true;
  std::optional<std::string> stop_reason = stop_after_resume_;
  // S15.4: the holder's pid is on disk before it is handed anything to
  // keep (from then on it outlives us).
  state_saving_ = true;
  SaveStateForNext();
  // S16.4: every registry image of the pod at once, before the start
  // plan asks for the first container.
  if (pending_pull_warning_) {
    OnPublish(lifecycle::Publish{lifecycle::EventType::kWarning, "FailedToRetrieveImagePullSecret",
                                 "pod", *pending_pull_warning_});
    pending_pull_warning_.reset();
  }
  pulls_->StartAll(handover_.has_value());
  for (auto& action : handover_ ? ResumeLifecycle() : lifecycle_.Start(CurrentTime())) {
    Execute(action);
  }
  if (awaited_pods_) awaited_pods_->Check();  // the first report, queued behind the batch
  draining_ = false;
  if (stop_reason) {
    // S15.6: adopted to be stopped, as a changed manifest is by the kubelet.
    Feed(lifecycle::StopRequested{stop_reason, std::nullopt});
  }
  Drain();
  while (!finished_) {
    if (auto s = loop_.RunOnce(); !s) return s.take_error();
  }
  if (fatal_) return *fatal_;
  return lifecycle_.Phase();
}

void Executor::Feed(lifecycle::Event event) {
  queue_.push_back(std::move(event));
  Drain();
}

void Executor::Drain() {
  if (draining_) return;  // the outer Drain picks it up: never re-entrant
  draining_ = true;
  while (!queue_.empty()) {
    lifecycle::Event e = std::move(queue_.front());
    queue_.pop_front();
    record_.Changed();  // the status may change with any event
    // S15.4: an instance's step that ended (created, started, failed,
    // exited) is on disk at once too: an adopter that still saw the step
    // in flight would take it as died with its supervisor and redo it.
    if (std::holds_alternative<lifecycle::RuntimeCreated>(e) ||
        std::holds_alternative<lifecycle::RuntimeStarted>(e) ||
        std::holds_alternative<lifecycle::RuntimeFailed>(e) ||
        std::holds_alternative<lifecycle::ContainerExited>(e)) {
      state_urgent_ = true;
    }
    log::Debug("event {}", lifecycle::ToString(e));
    for (auto& action : lifecycle_.Handle(e, CurrentTime())) Execute(action);
  }
  draining_ = false;
  // S14.41: a terminating pod's runtime calls end with its grace.
  if (lifecycle_.Terminating()) instances_.BoundByTermination(lifecycle_.termination_budget_end());
  heap_trim_.AfterBatch();
  if (lifecycle_.Terminating()) pulls_->StopAll();  // parked creates were abandoned (S5.8)
  if (awaited_pods_ && !lifecycle_.AwaitingPods()) awaited_pods_->Stop();  // S19.3, S19.6
  // The state for the next supervisor before the record and systemd: one
  // who reads the status (a test, a script that then kills us) must not be
  // ahead of what an adopter will find.
  SaveStateForNext();
  WriteRecord();
  // docs/INTERFACE.md "systemd": READY=1, STOPPING=1, the phase.
  systemd_.Update(lifecycle_.Status(), lifecycle_.Terminating());
  MaybeFinish();
  MaybeUpgrade();
}

void Executor::Execute(const lifecycle::Action& action) {
  log::Debug("action {}", lifecycle::ToString(action));
  std::visit(
      [this](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        // S15.4: what the runtime is asked to do is on disk before the
        // next batch, not a throttle interval later.
        if constexpr (!std::is_same_v<T, lifecycle::Publish> &&
                      !std::is_same_v<T, lifecycle::ArmTimer> &&
                      !std::is_same_v<T, lifecycle::CancelTimer>) {
          state_urgent_ = true;
        }
        if constexpr (std::is_same_v<T, lifecycle::CreateContainer>) {
          if (pulls_->Park(a)) {  // S16.5: its image is on its way
            Feed(lifecycle::ImagePulling{a.container, a.instance});
            return;
          }
          heap_trim_.Churned();
          // S17.6: a new instance is made with the allocated resources.
          if (resize_.actual.erase(a.container) > 0 || resize_.in_progress) ResizeInstanceMade();
          instances_.Create(a);
        } else if constexpr (std::is_same_v<T, lifecycle::StartContainer>) {
          instances_.Start(a);
        } else if constexpr (std::is_same_v<T, lifecycle::DeleteContainer>) {
          heap_trim_.Churned();
          instances_.Delete(a);
        } else if constexpr (std::is_same_v<T, lifecycle::SignalContainer>) {
          instances_.Signal(a);
        } else if constexpr (std::is_same_v<T, lifecycle::RunHook>) {
          hooks_probes_->RunHookAction(a);
        } else if constexpr (std::is_same_v<T, lifecycle::CancelHook>) {
          hooks_probes_->CancelHookAction(a);
        } else if constexpr (std::is_same_v<T, lifecycle::StartProbes>) {
          hooks_probes_->StartProbesAction(a);
        } else if constexpr (std::is_same_v<T, lifecycle::StopProbes>) {
          hooks_probes_->StopProbesAction(a);
        } else if constexpr (std::is_same_v<T, lifecycle::ArmTimer>) {
          timers_.Arm(a);
        } else if constexpr (std::is_same_v<T, lifecycle::CancelTimer>) {
          timers_.Cancel(a);
        } else if constexpr (std::is_same_v<T, lifecycle::Publish>) {
          OnPublish(a);
        } else if constexpr (std::is_same_v<T, lifecycle::PodEnded>) {
          OnPodEnded(a);
        }
      },
      action);
}

void Executor::OnPublish(const lifecycle::Publish& p) {
  WallTime now = loop_.clock().WallNow();
  if (events_) {
    if (auto s = events_->Record(p, now); !s) log::Warn("{}", s.error().message());
  }
  auto level = p.type == lifecycle::EventType::kWarning ? log::Level::kWarning : log::Level::kInfo;
  log::Log(level, "{} {}: {}", p.object, p.reason, p.message);
}

void Executor::OnSignal() {
  auto infos = signal_fd_->Read();
  if (!infos) {
    log::Error("{}", infos.error().message());
    return;
  }
  for (const auto& info : *infos) {
    int signo = static_cast<int>(info.ssi_signo);
    switch (signo) {
      case SIGCHLD:
        // One SIGCHLD may stand for many exits: the reaper collects them all.
        if (auto n = reaper_.Dispatch(); !n) log::Error("{}", n.error().message());
        break;
      case SIGTERM:
      case SIGINT:
        if (signo == SIGINT && ++interrupts_ >= 2) {
          // A second interrupt: the user is impatient. The budget ends now;
          // S5.5 still gives every container its stop signal and 2 s.
          log::Warn("second SIGINT: shortening the grace period to the 2 s floor");
          Feed(lifecycle::StopRequested{std::nullopt, Duration::zero()});
        } else {
          log::Info("{} received: stopping the pod", SignalName(signo));
          Feed(lifecycle::StopRequested{});
        }
        break;
      case SIGHUP:
        // S15.2: systemd's ExecReload= may send it: an upgrade to the
        // binary installed where this one was started from.
        log::Info("SIGHUP received: upgrading in place");
        RequestUpgrade(std::nullopt, std::chrono::seconds(30), nullptr);
        break;
      default:
        log::Info("{} received and ignored", SignalName(signo));
    }
  }
}

void Executor::OnPodEnded(const lifecycle::PodEnded& e) {
  pod_ended_ = true;
  // PID-1 duty: everything reparented to us was reaped as it exited.
  log::Info("{} orphaned processes reaped", reaper_.orphans_reaped());
  log::Info("pod {} ended: phase {}", pod_.metadata.name, pod::PodPhaseName(e.phase));
}

void Executor::MaybeFinish() {
  // A runtime call ended: the quiet moment an upgrade waits for may be now.
  if (upgrade_ && !draining_) MaybeUpgrade();
  if (!pod_ended_ || finished_ || draining_) return;
  // Wait for every runtime call (deletes above all) before cleaning up.
  if (!instances_.SettleForEnd()) return;
  finished_ = true;
  WriteRecord();
  nlohmann::json final_status = record_.PodJson(CurrentStatus());
  for (auto& respond : stop_waiters_) respond(final_status);
  stop_waiters_.clear();
  Cleanup();
}

void Executor::Cleanup() {
  if (!owns_pod_) return;  // Setup stopped before touching the pod
  // Nothing is left to adopt (S15.4).
  state_saving_ = false;
  if (state_write_timer_ != 0) loop_.CancelTimer(state_write_timer_);
  state_write_timer_ = 0;
  {
    std::error_code ec;
    std::filesystem::remove(PodDir::At(options_.state_dir).SupervisorStateFile(), ec);
    std::filesystem::remove(PodDir::At(options_.state_dir).SandboxHolderFile(), ec);
  }
  hooks_probes_->Clear();
  instances_.EndAll();
  control_.reset();
  // DEL while the namespace still exists, so bridge removes the veth
  // itself, and before CleanupPod removes the saved attachment's directory.
  network_.Detach();
  if (sandbox_) sandbox_->Destroy();
  sandbox_.reset();
  // Volumes, /etc files, bundles and the runtime root go; the kept record
  // (status.json) and events.jsonl stay for `status`, `describe` and
  // `events` after the end, until `podvisor rm`.
  if (std::filesystem::exists(layout_.dir())) {
    if (auto s = hostfs::CleanupPod(layout_); !s) log::Warn("{}", s.error().message());
    std::error_code ec;
    std::filesystem::remove_all(layout_.RuntimeRoot(), ec);
  }
  if (pod_cgroup_) {
    if (auto s = pod_cgroup_->Destroy(); !s) log::Warn("{}", s.error().message());
    pod_cgroup_.reset();
  }
  // The runtime removed each container's cgroup; the pod's directories
  // above them are ours to remove (every hierarchy of a v1/hybrid host).
  if (!pod_cgroup_name_.empty()) {  // claimed exactly when there is a --cgroup-parent
    cgroups::RemoveEmptyCgroupDirs(options_.cgroup_parent + "/" + pod_cgroup_name_);
  }
  // The name is free for another state directory's pod only now.
  std::error_code ec;
  std::filesystem::remove(options_.state_dir / cgroups::kCgroupNameFile, ec);
  cgroup_claim_.Release();
  // S20.4: the holder and every container are gone, and the idmapped
  // mounts with the pod's files: nothing uses the ids any more.
  id_block_.Release();
}

}  // namespace podvisor::supervisor::executor
