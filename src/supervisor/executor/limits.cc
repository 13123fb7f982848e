// The supervisor's own limits (docs/SEMANTICS.md "The supervisor's own
// limits"): the descriptors a pod may need against RLIMIT_NOFILE (S14.10),
// a runtime delete that must not be lost when descriptors or processes ran
// out (S14.11), the records and directories of ended instances (S14.12)
// and the lifetime of exec process files (S14.13).
#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <fstream>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "common/mounts.h"
#include "process/fd_limit.h"
#include "process/pidfd.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;

// S14.10: what a supervisor holds, at most. Its own: epoll, timerfd,
// signalfd, the control socket and a few clients, events.jsonl, image
// locks, the sandbox holder, the HTTP client. Per container: the two log
// pipes and the log file, the init's pidfd; during a create the pipes'
// write ends, the runtime call's pidfd and Spawn's error pipe; an exec
// probe or hook in flight a pipe and a pidfd, an HTTP or TCP probe a
// socket; and for a moment the ended instance's pipes next to the new
// one's. Measured at about 10 with everything in flight at once.
constexpr uint64_t kBaseDescriptors = 64;
constexpr uint64_t kDescriptorsPerContainer = 16;

// S14.11: what a runtime call's spawn needs at once: its pidfd, the
// exec-error pipe and /dev/null for its stdio.
constexpr std::size_t kDescriptorReserve = 4;

// S14.11: how long a delete that could not be spawned waits before it is
// tried again. Descriptors come back as calls end and clients go; polling
// for them has no event to wait on.
constexpr Duration kDeleteRetry = std::chrono::seconds(1);

// S14.13: how long a `podvisor exec` process file exists. The runtime the
// client starts reads it in its first milliseconds; after this it only
// holds the container's environment on disk.
constexpr Duration kExecFileLifetime = std::chrono::seconds(10);

uint64_t DescriptorsNeeded(const pod::Pod& pod) {
  uint64_t containers = pod.spec.init_containers.size() + pod.spec.containers.size();
  return kBaseDescriptors + kDescriptorsPerContainer * containers;
}

}  // namespace

void Instances::WarnAboutDescriptorLimit() {
  process::FdLimit limit = process::CurrentFdLimit();
  uint64_t needed = DescriptorsNeeded(pod_.pod);
  if (limit.soft == 0 || needed <= limit.soft) return;
  // A warning, not a refusal: the estimate is an upper bound (probes and
  // hooks do not all run at once), and a create that does run out fails
  // as CreateContainerError, leaves nothing behind and is retried (S14.11).
  host_.OnPublish(lifecycle::Publish{
      lifecycle::EventType::kWarning, "DescriptorLimit", "pod",
      "the pod's " +
          std::to_string(pod_.pod.spec.init_containers.size() + pod_.pod.spec.containers.size()) +
          " containers may need up to " + std::to_string(needed) +
          " file descriptors, but RLIMIT_NOFILE allows " + std::to_string(limit.soft) +
          " (hard limit " + std::to_string(limit.hard) +
          "): raise it (systemd LimitNOFILE=, ulimit -Hn) or containers may fail to start "
          "with \"Too many open files\""});
}

void Instances::RetryDeleteLater(Instance& inst) {
  // Still Deleting: the pod's end (MaybeFinish) waits for it, and the
  // runtime's state is not removed under it (Cleanup).
  std::string id = inst.id;
  inst.delete_retry = pod_.loop.AddTimer(pod_.loop.Now() + kDeleteRetry, [this, id] {
    RefillDescriptorReserve();
    Instance* again = FindById(id);
    if (!again) return;
    again->delete_retry = 0;
    Advance(*again, InstanceInput::kDeleteRetry);
    host_.MaybeFinish();
  });
}

bool Instances::ReleaseDescriptorReserve(const Error& spawn_error) {
  if ((spawn_error.code() != EMFILE && spawn_error.code() != ENFILE) || fd_reserve_.empty()) {
    return false;
  }
  log::Warn("out of file descriptors: using the {} held back for deleting containers",
            fd_reserve_.size());
  fd_reserve_.clear();
  return true;
}

void Instances::RefillDescriptorReserve() {
  while (fd_reserve_.size() < kDescriptorReserve) {
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!fd) return;  // still short: the next delete's exit tries again
    fd_reserve_.push_back(std::move(fd));
  }
}

void Instances::KillCgroupRemnants(const Instance& inst) {
  if (!inst.state.create_failed || inst.cgroups_path.empty()) return;
  // A runtime killed half way (--runtime-timeout, or out of descriptors
  // itself) leaves its init blocked in the container's cgroup with no
  // state the runtime's delete could find. Only this instance's own
  // cgroup: the id is unique per attempt, so nothing else lives there.
  fs::path rel = fs::path(inst.cgroups_path).relative_path();
  for (const auto& mount : cgroups::CgroupMounts()) {
    std::ifstream procs(mount / rel / "cgroup.procs");
    for (pid_t pid; procs >> pid;) {
      auto pidfd = process::PidfdOpen(pid);
      if (!pidfd) continue;
      log::Warn("{}: killing process {} its failed create left behind", inst.id, pid);
      // Reparented to us (a subreaper), it is reaped as an orphan.
      (void)process::PidfdSendSignal(pidfd->get(), SIGKILL);
    }
  }
}

void Instances::RetireOldInstances(const std::string& container) {
  // S14.12: the kubelet keeps the last dead container of each container;
  // we keep the current record and the newest ended one. The rest go with
  // their directories (config.json and exec files hold the environment;
  // the termination message was read when the exit was reported, and the
  // logs live in the log directory). A record still waited for (a delete,
  // a pipe's EOF, an exit) stays until a later restart finds it ended.
  // Nothing of it is left to wait for: its delete is done, its init
  // reaped (or it never had one), both log pipes at EOF.
  // And nothing is mounted in its directory any more: remove_all would
  // walk into a subPath's bind (the volume's own files, a hostPath's) or
  // an overlay left mounted by a failed unmount.
  auto ended_record = [](const Instance& inst) {
    return inst.state.Deleted() && (!inst.init || inst.state.Exited()) && !inst.pipes[0] &&
           !inst.pipes[1] && !inst.root_mounted && !inst.sub_paths_bound;
  };
  for (Instance* retired :
       table_.EndedToRetire(container, host_.CurrentInstance(container), ended_record)) {
    Instance& old = *retired;
    // Checked again in the mount table itself: a mount of this directory
    // that the flags above do not know of keeps it (CleanupPod unmounts it
    // when the pod ends).
    auto mounts = podvisor::MountPointsUnder(old.dir);
    if (!mounts || !mounts->empty()) continue;
    std::error_code ec;
    fs::remove_all(old.dir, ec);
    if (ec) log::Warn("removing {}: {}", old.dir.string(), ec.message());
    host_.ForgetKept(old.id);  // S15.4: nothing of it is left to adopt
    table_.Erase(old);
  }
}

void Instances::ExpireExecFile(const fs::path& file) {
  pod_.loop.AddTimer(pod_.loop.Now() + kExecFileLifetime, [file] {
    std::error_code ec;
    fs::remove(file, ec);
  });
}

void Instances::DeleteRuntimeLeftovers() {
  // S14.11: a container the runtime still knows (a delete that never got
  // to run, a create whose report was lost) is deleted before the runtime's
  // root goes: removing the root would leave it running, invisible to
  // `runc list`. Normally there is none; the loop has ended, so each call
  // is waited for here, bounded by --runtime-timeout.
  oci::RuntimeCli runtime = Runtime();
  Duration timeout = pod_.options.runtime_timeout.count() > 0 ? pod_.options.runtime_timeout
                                                              : kDefaultRuntimeTimeout;
  // S14.41: what is left of the termination's budget, at least the floor
  // (each call is waited for in turn, so each gets that).
  if (auto at = RuntimeCallDeadline(pod_.loop.Now(), timeout, termination_end_)) {
    timeout = *at - pod_.loop.Now();
  }
  for (const auto& id : RuntimeContainerIds(pod_.layout)) {
    log::Warn("container {} still known to the runtime at the pod's end: deleting it", id);
    if (auto s = RunRuntimeCall(runtime.Delete(id), timeout); !s) {
      log::Warn("deleting {}: {}", id, s.error().message());
    }
  }
}

}  // namespace podvisor::supervisor::executor
