// The Executor's setup (executor.h, Setup): everything before the first
// container, in an order that matters.
#include "supervisor/executor/executor.h"

#include <signal.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <cstdlib>

#include "common/log.h"

#include "cgroups/cgroup_name.h"
#include "cgroups/cleanup.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "common/uuid.h"
#include "hostfs/earlier_runs.h"
#include "hostfs/etc_files.h"
#include "hostfs/idmapped_pod.h"
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

}  // namespace podvisor::supervisor::executor
