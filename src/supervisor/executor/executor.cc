#include "supervisor/executor/executor.h"

#include <signal.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <string_view>

#include "common/log.h"

#include "cgroups/cgroup_name.h"
#include "cgroups/cleanup.h"
#include "common/pod_dir.h"
#include "common/signal_names.h"
#include "hostfs/idmapped_pod.h"
#include "hostfs/instance_plan.h"
#include "hostfs/rootfs.h"
#include "hostfs/volumes.h"
#include "pod/pod_order.h"
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
