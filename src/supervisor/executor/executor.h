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
// Runtime calls, containers and their logs are the owned Instances'
// (instances.h), which reach the rest of the pod through InstanceHost.
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
#include "hostfs/layout.h"
#include "image/image.h"
#include "network/attachment.h"
#include "network/pod_network.h"
#include "oci/runtime_cli.h"
#include "oci/spec.h"
#include "pod/model.h"
#include "process/reaper.h"
#include "process/signalfd.h"
#include "supervisor/control/control_api.h"
#include "supervisor/control/control_server.h"
#include "supervisor/control/pod_control.h"
#include "supervisor/control/sd_notify.h"
#include "supervisor/executor/executor_options.h"
#include "supervisor/executor/handler_runner.h"
#include "supervisor/executor/hooks_probes.h"
#include "supervisor/executor/instance_steps.h"
#include "supervisor/executor/instances.h"
#include "supervisor/executor/pod_networking.h"
#include "supervisor/executor/runtime_timeout.h"
#include "supervisor/lifecycle/lifecycle.h"
#include "supervisor/logs/event_recorder.h"
#include "supervisor/logs/log_files.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/probes/http_client.h"
#include "supervisor/probes/net_check.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor {

class Executor : private InstanceHost {
 public:
  // Everything that can fail before a container exists: layout, images,
  // sandbox, control socket, signal handling. Nothing is left behind when
  // it fails. `images` (by container name) are those `run` already loaded
  // from options.bundle; the others are loaded here.
  static Result<std::unique_ptr<Executor>> Create(pod::Pod pod, ExecutorOptions options,
                                                  std::map<std::string, image::Image> images = {});
  ~Executor() override;

  // Runs the pod until it ended and everything is cleaned up; returns the
  // final phase.
  Result<pod::PodPhase> Run();
  // The pod's status now; after Run, the final one (`run`'s last lines).
  pod::PodStatus FinalStatus() const { return lifecycle_.Status(); }

 private:
  using Instance = ContainerInstance;  // internal.h

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
  void Feed(Event event) override;
  void Drain();
  void Execute(const Action& action);
  void OnSignal();
  void OnTimerAction(const ArmTimer& arm);
  void OnPublish(const Publish& p) override;
  void NotifySystemd();  // docs/INTERFACE.md "systemd", after each batch
  void OnPodEnded(const PodEnded& e);
  void MaybeFinish() override;
  void Cleanup();
  Now CurrentTime() const;
  // The rest of InstanceHost (instances.h).
  bool PodFinished() const override { return finished_; }
  int CurrentInstance(const std::string& container) const override;
  void AddPodFacts(hostfs::InstanceFacts& facts) const override;

  // cgroups.cc: the pod cgroup (S10.4) and OOM kills (S9.5).
  Status SetupPodCgroup();

  // control.cc: what hooks, probes and the control API get of the pod.
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
  hostfs::PodLayout layout_;
  std::map<std::string, image::Image> images_;  // by container name
  std::vector<Fd> image_locks_;                 // shared locks on the cache entries in use
  // By container: the status' imageID, filled on demand (ImageId).
  mutable std::map<std::string, std::string> image_ids_;
  std::optional<Sandbox> sandbox_;
  PodNetworking network_;                         // CNI, the pod's addresses, its /etc files
  std::optional<cgroups::PodCgroup> pod_cgroup_;  // absent without usable cgroup v2
  process::Reaper reaper_;
  std::optional<process::SignalFd> signal_fd_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<PodControl> pod_control_;  // what control_api_ acts on
  std::unique_ptr<ControlApi> control_api_;
  std::optional<EventRecorder> events_;
  SdNotifier notifier_;
  std::optional<SystemdReporter> systemd_;
  WallTime created_at_{};
  std::string uid_;
  // The container instances and every runtime call (instances.h); they
  // outlive the probes and hooks, whose runs may kill an exec.
  Instances instances_;
  // The Lifecycle's hook and probe actions; destroyed before the
  // instances, as their runs may kill an exec.
  std::unique_ptr<HooksAndProbes> hooks_probes_;
  std::map<std::string, EventLoop::TimerId, std::less<>> timers_;  // by ToString(TimerId)
  std::vector<ControlServer::Responder> stop_waiters_;
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
