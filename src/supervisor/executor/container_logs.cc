// Instances' log side (instances.h): reading the containers' stdout/stderr pipes
// into CRI logs (S11.1) and what follows a rotation (S11.2): retention
// and gzip of older rotated files.
//
// gzip runs in a child process (`podvisor compress-log FILE`, at nice 10),
// one at a time, tracked by the reaper like a runtime call: compressing a
// 10 MiB file costs a few hundred milliseconds of CPU, which on the event
// loop would delay every signal, probe and exit of the pod by as much; a
// child takes the other core when there is one and the loop only sees its
// exit. The pod's end waits for a running one (MaybeFinish waits for
// every call), so no half-written .gz.partial is left behind; a crash
// leaves the plain file, which readers use. The file being compressed is
// retention's to remove only once its compressor is done (S14.19): removed
// under it, its .gz appeared after retention had counted the files and
// its unlink failed; a queued file that retention removes leaves the
// queue with it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"

#include "process/spawn.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

bool Instances::ReadLogPipe(Instance& inst, int index) {
  logs::LogStream stream = index == 0 ? logs::LogStream::kStdout : logs::LogStream::kStderr;
  // S14.17: a failing write (a full log file system) is reported through
  // the writer's notices, at most one a minute, never once per record: at
  // a few thousand records a second that would be the supervisor's own
  // flood of warnings on the same full disk.
  auto report = [&](bool flush) {
    if (!inst.log) return;
    auto notice = inst.log->TakeNotice(pod_.loop.Now(), flush);
    if (!notice) return;
    host_.OnPublish(lifecycle::Publish{
        notice->resumed ? lifecycle::EventType::kNormal : lifecycle::EventType::kWarning,
        notice->resumed ? "LogWriteResumed" : "LogWriteFailed", "container/" + inst.container,
        notice->message});
  };
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(inst.pipes[index].get(), buf, sizeof buf);
    if (n > 0) {
      if (inst.log) {
        // Errors are counted by the writer and reported below.
        (void)inst.log->Append(stream, std::string_view(buf, static_cast<std::size_t>(n)),
                               pod_.loop.clock().WallNow());
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      report(false);
      return false;
    }
    // EOF (or an error: nothing more will come). The trailing partial line
    // is written here (the caller's Close then finds nothing), so that
    // what is still unreported, its failure included, is reported now.
    if (inst.log) (void)inst.log->Close(stream, pod_.loop.clock().WallNow());
    report(true);
    return true;
  }
}

void Instances::OnLogRotated(const std::filesystem::path& dir, int instance) {
  // S14.19: the file the compressor is reading is its own until it ends;
  // retention runs again then (the reaper's callback below).
  std::vector<std::string> compressing;
  if (!compressing_.empty() && compressing_.parent_path() == dir) {
    compressing.push_back(compressing_.filename().string());
  }
  logs::RetentionPlan plan = logs::PlanRetention(logs::ListNames(dir), instance,
                                                 pod_.options.log_rotation.max_files, compressing);
  for (const auto& name : plan.remove) {
    // A queued file too old to keep is removed, and so no longer queued.
    std::erase_if(compress_queue_, [&](const auto& q) { return q.first == dir / name; });
    if (::unlink((dir / name).c_str()) != 0 && errno != ENOENT) {
      log::Warn("removing old log {}: {}", (dir / name).string(), std::strerror(errno));
    }
  }
  if (host_.PodFinished()) return;  // the final flush of a finished pod: no new children
  for (const auto& name : plan.compress) {
    std::filesystem::path file = dir / name;
    bool queued = std::any_of(compress_queue_.begin(), compress_queue_.end(),
                              [&](const auto& q) { return q.first == file; });
    if (!queued) compress_queue_.emplace_back(file, instance);
  }
  StartCompression();
}

void Instances::StartCompression() {
  if (!compressing_.empty() || compress_queue_.empty()) return;
  std::filesystem::path file = compress_queue_.front().first;
  int inst = compress_queue_.front().second;
  compress_queue_.pop_front();
  process::SpawnOptions spawn;
  spawn.argv = {pod_.options.podvisor_exe.string(), "compress-log", file.string()};
  spawn.stderr_fd = process::SpawnOptions::kInherit;
  spawn.cwd = "/";
  auto child = process::Spawn(spawn);
  if (!child) {
    log::Warn("compressing {}: {}", file.string(), child.error().message());
    return;
  }
  pid_t pid = child->pid();
  auto call = std::make_unique<RuntimeCall>();
  call->process = std::move(*child);
  call->what = "compress-log";
  compressing_ = file;
  std::filesystem::path dir = file.parent_path();
  auto s =
      pod_.reaper.Track(call->process, [this, pid, file, dir, inst](const process::ExitInfo& exit) {
        calls_.erase(pid);
        compressing_.clear();
        if (exit.success()) {
          // Rotations while it ran may have made more files old enough to
          // go, this one included (S14.19).
          OnLogRotated(dir, inst);
        } else {
          // Not planned again before the next rotation: on a full disk a
          // retry at once would fail at once, a loop of children.
          log::Warn("compressing {}: {}", file.string(), exit.ToString());
        }
        StartCompression();
        host_.MaybeFinish();
      });
  if (!s) {
    compressing_.clear();
    log::Warn("compressing {}: {}", file.string(), s.error().message());
    return;
  }
  calls_.emplace(pid, std::move(call));
}

}  // namespace podvisor::supervisor::executor
