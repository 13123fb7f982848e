// Instances (instances.h): the Lifecycle's actions on an instance, its
// create, start, exit and delete, and its log pipes.
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "cgroups/oom.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "hostfs/instance.h"
#include "hostfs/rootfs.h"
#include "hostfs/volumes.h"
#include "process/spawn.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/runtime_timeout.h"

namespace podvisor::supervisor::executor {

namespace {

constexpr std::size_t kTerminationMessageMax = 4096;  // S11.3
constexpr std::size_t kFallbackLogLines = 80;         // S11.3
constexpr std::size_t kFallbackLogBytes = 2048;       // S11.3

std::string ReadTail(const std::filesystem::path& file, std::size_t max) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff from =
      size > static_cast<std::streamoff>(max) ? size - static_cast<std::streamoff>(max) : 0;
  in.seekg(from);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

RuntimeLauncher::Files CallFiles(const std::filesystem::path& dir) {
  return {dir, dir / InstanceFile::kPidFile, dir / InstanceFile::kRuntimeLog};
}

}  // namespace

Status Instances::Prepare(Instance& inst) {
  const image::Image& image = pod_.images.at(inst.container);
  const pod::Container* spec = ContainerSpec(inst.container);
  // The facts of this run; oci::PlanContainerConfig makes the config of
  // them, as it does for `validate` and `oci-config`.
  hostfs::InstanceFacts facts;
  facts.bundle = pod_.options.bundle;
  facts.runtime_id = inst.id;
  facts.instance_dir = inst.dir;
  // Each instance writes into its own overlay (docs/INTERFACE.md); mounting
  // it needs privileges, which a sandboxed (root) supervisor has.
  facts.own_root = pod_.options.sandbox;
  host_.AddPodFacts(facts);  // namespaces, pod cgroup, addresses
  inst.user_namespace = facts.user_namespace;
  facts.cgroup_parent = pod_.options.cgroup_parent;
  facts.pids_limit = pod_.options.pids_limit;
  auto host = hostfs::ReadHostFacts(*spec, pod_.layout.dir());
  if (!host) return host.take_error();
  host->node_memory_bytes = pod_.options.node_memory_bytes;
  host->node_hostname = pod_.options.node_hostname;
  host->rootless = pod_.options.rootless;  // S21
  hostfs::PreparedInstance prepared;
  Status s = hostfs::PrepareContainerInstance(pod_.pod, *spec, image, pod_.layout, std::move(facts),
                                              *host, prepared);
  // What was done is undone by the instance's delete, also after a failure.
  inst.sub_paths_bound = prepared.sub_paths_bound;
  inst.root = prepared.root;
  inst.root_mounted = prepared.root_mounted;
  inst.cgroups_path = prepared.cgroups_path;
  if (!s) return s;
  inst.process = std::move(prepared.config["process"]);
  return Ok();
}

void Instances::Create(const lifecycle::CreateContainer& a) {
  auto owned = std::make_unique<Instance>();
  owned->container = a.container;
  owned->instance = a.instance;
  owned->id = RuntimeId(a.container, a.instance);
  owned->dir = pod_.layout.ContainersDir() / a.container / owned->id;
  // A failed create is retried under the same instance number; the failed
  // record stays under its own id until its cleanup is done.
  Instance& inst = table_.Add(std::move(owned));
  auto fail = [&](const Error& e) { FailCreate(inst, InstanceInput::kCreateFailed, e.message()); };

  if (auto s = Prepare(inst); !s) return fail(s.error());
  std::filesystem::path log_dir = pod_.options.log_dir / a.container;
  auto log = logs::CriLogWriter::Open(
      log_dir / (std::to_string(a.instance) + ".log"), pod_.options.log_rotation.max_size,
      [this, log_dir, instance = a.instance] { OnLogRotated(log_dir, instance); });
  if (!log) return fail(log.error());
  inst.log.emplace(std::move(*log));
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fail(Error::FromErrno("pipe2"));
  Fd out_w(out[1]);
  inst.pipes[0].Reset(out[0]);
  if (::pipe2(err, O_CLOEXEC) != 0) return fail(Error::FromErrno("pipe2"));
  Fd err_w(err[1]);
  inst.pipes[1].Reset(err[0]);
  for (int fd : {out_w.get(), err_w.get()}) {
    if (auto s = inst.GivePipeToRoot(fd); !s) return fail(s.error());
  }

  std::string id = inst.id;
  // One runtime process instead of two when the start follows at once: a
  // runc start is a Go program's start-up, ~5 ms on the pod's critical
  // path (docs/SEMANTICS.md S1.1).
  bool run = a.start_when_created && Launcher().HasDetachedRun();
  // The container's init inherits create's stdout and stderr: our pipes.
  auto spawned = Launcher().Create(
      inst.id, CallFiles(inst.dir), run, out_w.get(), err_w.get(),
      [this, id](const process::ExitInfo& exit) { OnCreateCallExited(id, exit); });
  if (!spawned) return fail(spawned.error());
  Advance(inst, run ? InstanceInput::kRunSpawned : InstanceInput::kCreateSpawned);
  // S15.4: the holder keeps the read ends too, so that the container's
  // writes never meet a closed pipe while no supervisor runs.
  host_.KeepForNext(inst.id, {inst.pipes[0].get(), inst.pipes[1].get()});
  WatchLogPipe(inst, 0);
  WatchLogPipe(inst, 1);
}

void Instances::WatchLogPipe(Instance& inst, int index) {
  int fd = inst.pipes[index].get();
  if (fd < 0) return;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string id = inst.id;
  logs::LogStream stream = index == 0 ? logs::LogStream::kStdout : logs::LogStream::kStderr;
  auto drain = [this, id, index, stream](uint32_t) {
    Instance* inst = FindById(id);
    if (!inst || !inst->pipes[index]) return;
    // EOF: every writer (the container's processes) is gone.
    if (!ReadLogPipe(*inst, index)) return;
    pod_.loop.Remove(inst->pipes[index].get());
    inst->pipes[index].Reset();
    if (inst->log) (void)inst->log->Close(stream, pod_.loop.clock().WallNow());
    ReleaseDescriptors(*inst);
  };
  if (auto s = pod_.loop.Add(fd, EPOLLIN, drain); !s) log::Warn("{}", s.error().message());
}

void Instances::Start(const lifecycle::StartContainer& a) {
  if (Instance* inst = Find(a.container, a.instance)) {
    Advance(*inst, InstanceInput::kStartAsked);
  }
}

void Instances::SpawnStart(Instance& inst) {
  std::string id = inst.id;
  std::filesystem::path log_file = inst.dir / InstanceFile::kRuntimeLog;
  auto s = Launcher().Start(inst.id, CallFiles(inst.dir),
                            [this, id, log_file](const process::ExitInfo& exit) {
                              Instance* inst = FindById(id);
                              if (!inst) return;
                              if (exit.success()) {
                                return Advance(*inst, InstanceInput::kStartReturned);
                              }
                              std::string message = oci::LastRuntimeError(log_file);
                              if (message.empty()) message = "runtime start " + exit.ToString();
                              Advance(*inst, InstanceInput::kStartFailed, message);
                            });
  if (!s) Advance(inst, InstanceInput::kStartFailed, s.error().message());
}

void Instances::OnInitExited(Instance& inst, const process::ExitInfo& exit) {
  inst.init_exit = exit;
  Advance(inst, InstanceInput::kInitExited);
}

void Instances::Advance(Instance& inst, InstanceInput input, const std::string& message) {
  InstanceTransition t = Transition(inst.state, input);
  log::Debug("{} {}: {} -> {}", inst.id, InstanceInputName(input),
             InstanceStepName(inst.state.step), InstanceStepName(t.next.step));
  inst.state = t.next;
  std::string id = inst.id;
  for (InstanceAction action : t.actions) {
    // A report feeds the Lifecycle, whose actions may come back to this
    // record; it is looked up again for each step.
    Instance* current = FindById(id);
    if (!current) return;
    CarryOut(*current, action, message);
  }
}

void Instances::CarryOut(Instance& inst, InstanceAction action, const std::string& message) {
  switch (action) {
    case InstanceAction::kAdoptInit:
      return AdoptCreatedInit(inst);
    case InstanceAction::kReportCreated:
      return host_.Feed(lifecycle::RuntimeCreated{inst.container, inst.instance, inst.id});
    case InstanceAction::kReportCreateFailed:
      return host_.Feed(lifecycle::RuntimeFailed{inst.container, inst.instance,
                                                 lifecycle::RuntimeStep::kCreate, message});
    case InstanceAction::kSpawnStart:
      return SpawnStart(inst);
    case InstanceAction::kReportStarted:
      return host_.Feed(lifecycle::RuntimeStarted{inst.container, inst.instance});
    case InstanceAction::kReportStartFailed:
      return host_.Feed(lifecycle::RuntimeFailed{inst.container, inst.instance,
                                                 lifecycle::RuntimeStep::kStart, message});
    case InstanceAction::kReportExited:
      return ReportExit(inst);
    case InstanceAction::kSpawnDelete:
      return SpawnDelete(inst);
    case InstanceAction::kRetryDeleteLater:
      return RetryDeleteLater(inst);
    case InstanceAction::kFinishDelete:
      return FinishDelete(inst);
  }
}

std::string Instances::TerminationMessage(const Instance& inst, int exit_code) const {
  // S11.3: the file's last 4096 bytes; with FallbackToLogsOnError and an
  // empty file, the last 80 lines (at most 2048 bytes) of a failed
  // instance's log.
  std::string message = ReadTail(inst.dir / InstanceFile::kTerminationLog, kTerminationMessageMax);
  if (!message.empty() || exit_code == 0) return message;
  const pod::Container* spec = ContainerSpec(inst.container);
  if (!spec || !inst.log ||
      spec->termination_message_policy != pod::TerminationMessagePolicy::kFallbackToLogsOnError) {
    return {};
  }
  // The log may have just rotated: the tail spans the newest files.
  return logs::TailOfLog(logs::InstanceLogFiles(inst.log->path().parent_path(), inst.instance),
                         kFallbackLogLines, kFallbackLogBytes);
}

void Instances::ReportExit(Instance& inst) {
  const process::ExitInfo& exit = *inst.init_exit;
  lifecycle::ContainerExited e;
  e.container = inst.container;
  e.instance = inst.instance;
  e.exit_code = exit.KubernetesExitCode();
  e.signal = exit.killed() ? exit.signal : 0;
  e.oom_killed = OomKilledSinceCreate(inst);
  // What the container wrote before it exited is in the pipes; log it
  // first so a FallbackToLogsOnError message sees its last lines.
  for (int i = 0; i < 2; ++i) {
    if (inst.pipes[i]) (void)ReadLogPipe(inst, i);
  }
  e.message = TerminationMessage(inst, e.exit_code);
  if (inst.exit_unknown) ReportAsLost(e);
  log::Debug("{} {}", inst.id, exit.ToString());
  std::string id = inst.id;
  host_.Feed(std::move(e));
  // Deleted before it exited (a failed start): its pidfd can go now.
  if (Instance* gone = FindById(id)) ReleaseDescriptors(*gone);
}

void Instances::Signal(const lifecycle::SignalContainer& a) {
  Instance* inst = Find(a.container, a.instance);
  if (!inst || !inst->init) return;
  // S5.9: straight to the container's init through its pidfd.
  if (auto s = inst->init->SendSignal(a.signo); !s) {
    log::Debug("signalling {}: {}", inst->id, s.error().message());
  }
}

void Instances::Delete(const lifecycle::DeleteContainer& a) {
  if (Instance* inst = Find(a.container, a.instance)) Advance(*inst, InstanceInput::kDeleteAsked);
}

void Instances::SpawnDelete(Instance& inst) {
  std::string id = inst.id;
  auto spawn_delete = [&] {
    return Launcher().Delete(inst.id, CallFiles(inst.dir),
                             [this, id](const process::ExitInfo& exit) {
                               RefillDescriptorReserve();  // the call's pidfd is free again
                               Instance* inst = FindById(id);
                               if (!inst) return;
                               if (!exit.success())
                                 log::Warn("runtime delete {} {}", inst->id, exit.ToString());
                               Advance(*inst, InstanceInput::kDeleteExited);
                             });
  };
  auto s = spawn_delete();
  // S14.11: out of descriptors, the reserve pays for the delete, which
  // frees the container's own descriptors in turn.
  if (!s && ReleaseDescriptorReserve(s.error())) s = spawn_delete();
  RefillDescriptorReserve();
  if (!s) {
    // S14.11: the runtime may hold the container (its create succeeded,
    // its init runs): forgetting the delete would leave it behind. Out of
    // descriptors or processes, the spawn is tried again shortly.
    log::Warn("deleting {}: {}; trying again", inst.id, s.error().message());
    Advance(inst, InstanceInput::kDeleteSpawnFailed);
  }
}

void Instances::FinishDelete(Instance& inst) {
  KillCgroupRemnants(inst);  // S14.11
  if (inst.root_mounted) {
    if (auto s = hostfs::RemoveWritableRoot(inst.root); !s) log::Warn("{}", s.error().message());
    inst.root_mounted = false;
  }
  // S14.3: the container is gone; its subPath binds go with it.
  if (inst.sub_paths_bound) {
    if (auto s = hostfs::UnbindSubPaths(hostfs::SubPathMountDir(inst.dir)); !s) {
      log::Warn("{}", s.error().message());
    } else {
      inst.sub_paths_bound = false;
    }
  }
  // S14.12: the files that hold the container's environment are of no use
  // once the runtime has let go of the container.
  std::error_code ec;
  std::filesystem::remove(inst.dir / InstanceFile::kConfig, ec);
  for (auto it = std::filesystem::directory_iterator(inst.dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().rfind("exec-", 0) == 0) {
      std::error_code ignored;
      std::filesystem::remove(it->path(), ignored);
    }
  }
  ReleaseDescriptors(inst);
}

void Instances::ReleaseDescriptors(Instance& inst) {
  // The record of an instance that is gone stays (callbacks find it by id),
  // but its descriptors do not: a container crash-looping for weeks would
  // otherwise pile up a pidfd and a log file per restart until the
  // supervisor runs out of descriptors.
  if (!inst.state.Deleted()) return;
  if (inst.state.Exited()) inst.init.reset();  // reaped: the pidfd is of no more use
  // The log is complete once both pipes reached EOF (S11.1).
  if (!inst.pipes[0] && !inst.pipes[1]) inst.log.reset();
  if (inst.init || inst.pipes[0] || inst.pipes[1]) return;
  host_.ForgetKept(inst.id);  // S15.4: nothing of it is left to adopt
  // S14.12: ended; older records of the container may go now. Later, from
  // the loop: callers up the stack hold references to records.
  pod_.loop.AddTimer(pod_.loop.Now(),
                     [this, container = inst.container] { RetireOldInstances(container); });
}

}  // namespace podvisor::supervisor::executor
