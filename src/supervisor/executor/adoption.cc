// A pod that outlives its supervisor (S15.4-S15.6). The supervisor keeps
// its handover state beside the pod's state, and the sandbox's holder
// keeps the descriptors that go with it; a `run` that finds both after
// its predecessor died adopts the pod instead of killing it:
//   - the same manifest, the pod not terminating: adopted (resume.cc), its
//     containers untouched;
//   - another manifest, or a pod that was terminating: adopted only to be
//     stopped the way it would have been (preStop hooks, its grace; the
//     reason `Update` for a changed manifest), then the new pod starts;
//   - a state from another boot, of a format this binary does not read,
//     or without a live holder: recovery of leftovers (recovery.h).
// Executor::Create, here, runs those rounds: an adopted pod to stop
// first, or an adoption that failed and then recovery.
#include <unistd.h>

#include <utility>

#include "common/log.h"

#include "cgroups/cgroup_name.h"
#include "common/file_io.h"
#include "common/pod_dir.h"
#include "hostfs/earlier_runs.h"
#include "pod/serialize.h"
#include "supervisor/executor/handover_format.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

namespace {

// How often, at most, the state is written while the pod changes: a
// crash loses at most this much of its history, which the adoption
// reconciles with what it finds (S15.5).
constexpr Duration kStateWriteInterval = std::chrono::milliseconds(100);

}  // namespace

Result<std::unique_ptr<Executor>> Executor::Create(
    pod::Pod pod, const ExecutorOptions& options,
    const std::map<std::string, image::Image>& images) {
  // S15.2: a supervisor re-executed by `podvisor upgrade` goes on with the
  // pod it was handed, as it was loaded then.
  auto inherited = TakeInheritedHandover();
  if (!inherited) return inherited.take_error().Wrap("taking the pod over");
  if (*inherited) {
    auto handed = HandedPod((*inherited)->state, pod);
    if (!handed) return handed.take_error().Wrap("taking the pod over");
    pod = std::move(*handed);
  }
  // At most: a pod adopted to be stopped (S15.6), then the new one; or an
  // adoption that failed, then recovery. Each Setup takes NOTIFY_SOCKET
  // out of the environment (SystemdLink): the pod that runs gets it back,
  // a pod adopted only to be stopped never sees it, so systemd hears
  // neither its STOPPING=1 nor its status.
  const char* notify_env = std::getenv("NOTIFY_SOCKET");
  const std::string notify = notify_env ? notify_env : "";
  auto give_notify_socket = [&notify](bool give) {
    if (give && !notify.empty()) {
      ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
    } else {
      ::unsetenv("NOTIFY_SOCKET");
    }
  };
  bool allow_adoption = true;
  for (int round = 0;; ++round) {
    // The shell's one clock seam: every "now" of the executor and of what
    // runs on its loop is the loop's clock.
    auto loop = options.clock ? loop::EventLoop::Create(*options.clock) : loop::EventLoop::Create();
    if (!loop) return loop.take_error();
    std::unique_ptr<Executor> ex(new Executor(pod, options, std::move(*loop)));
    ex->images_ = images;
    ex->allow_adoption_ = allow_adoption && round < 2;
    if (*inherited) ex->handover_ = std::move(**inherited);
    give_notify_socket(true);
    auto s = ex->Setup();
    if (s) return ex;
    if (ex->previous_to_stop_) {
      nlohmann::json state = std::move(*ex->previous_to_stop_);
      std::optional<std::string> reason = ex->previous_stop_reason_;
      ex.reset();  // it touched nothing of the pod
      give_notify_socket(false);
      auto old = StopAdoptedFirst(std::move(state), pod, options, reason);
      if (!old) {
        log::Warn("adopting pod {} to stop it: {}; recovering its leftovers instead",
                  pod.metadata.name, old.error().message());
        allow_adoption = false;
        continue;
      }
      if (auto phase = (*old)->Run(); !phase) log::Warn("{}", phase.error().message());
      old->reset();
      continue;
    }
    if (ex->handover_ && ex->handover_->adopting && !ex->owns_pod_) {
      // S15.6: what cannot be adopted is recovered as before.
      log::Warn("adopting pod {}: {}; recovering its leftovers instead", pod.metadata.name,
                s.error().message());
      ex.reset();
      allow_adoption = false;
      continue;
    }
    if (!ex->owns_pod_) return s.take_error();  // another supervisor's: untouched
    ex->Cleanup();
    // Nothing is left behind by a pod that never started: the directories
    // Setup created go too when they are empty.
    std::error_code ec;
    std::filesystem::remove(PodDir::At(ex->options_.state_dir).EventsFile(), ec);
    std::filesystem::remove(PodDir::At(ex->options_.state_dir).RecordFile(), ec);
    std::filesystem::remove(ex->options_.state_dir / cgroups::kCgroupNameFile, ec);
    std::filesystem::remove(ex->options_.state_dir / hostfs::kLogDirFile, ec);
    // The previous run's record stays the pod's record (S14.33).
    if (ex->earlier_run_) hostfs::PutEarlierRunBack(*ex->earlier_run_, ex->options_.state_dir);
    std::filesystem::remove(ex->options_.state_dir, ec);
    std::filesystem::remove(ex->options_.log_dir, ec);
    // No pod left, no lock file beside it either.
    if (!std::filesystem::exists(ex->options_.state_dir, ec)) ex->pod_lock_->Unlink();
    return s.take_error();
  }
}

void Executor::SaveStateForNext() {
  if (!owns_pod_ || finished_ || !state_saving_) return;
  const MonoTime now = loop_.Now();
  // A batch that asked for a create, a start, a delete, a signal, a hook
  // or a probe is written at once: an adopting supervisor must know every
  // runtime call that may have happened. Only the rest (probe results,
  // events) waits for the interval.
  const bool urgent = std::exchange(state_urgent_, false);
  if (urgent && state_write_timer_ != 0) {
    loop_.CancelTimer(state_write_timer_);
    state_write_timer_ = 0;
  }
  if (state_write_timer_ != 0) return;  // a write is due already
  if (!urgent && last_state_write_ && now - *last_state_write_ < kStateWriteInterval) {
    state_write_timer_ = loop_.AddTimer(*last_state_write_ + kStateWriteInterval, [this] {
      state_write_timer_ = 0;
      SaveStateForNext();
    });
    return;
  }
  last_state_write_ = now;
  std::string text = HandoverState().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text == last_state_text_) return;
  // Unsynced: it must outlive the supervisor, not the machine, whose
  // reboot ends the containers it describes.
  if (auto s = WriteFileAtomic(PodDir::At(options_.state_dir).SupervisorStateFile(), text, 0600,
                               Durability::kUnsynced);
      !s) {
    log::Warn("{}", s.error().message());
    return;
  }
  last_state_text_ = std::move(text);
}

// Under the pod lock: the state a supervisor that died left, when it can
// be adopted. Anything else leaves the pod to recovery.
std::optional<nlohmann::json> Executor::AdoptableState() {
  const std::filesystem::path file = PodDir::At(options_.state_dir).SupervisorStateFile();
  auto text = ReadFileBounded(file, 64 * 1024 * 1024);
  if (!text) return std::nullopt;
  nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto refuse = [&](const std::string& why) -> std::optional<nlohmann::json> {
    log::Warn("not adopting what the previous supervisor of pod {} left: {}", pod_.metadata.name,
              why);
    return std::nullopt;
  };
  if (state.is_discarded()) return refuse(file.string() + " is not JSON");
  if (auto s = CheckHandoverState(state); !s) return refuse(s.error().message());
  if (!options_.sandbox) return refuse("no sandbox (--sandbox none): no holder kept its pipes");
  auto sandbox = state.find("sandbox");
  if (sandbox == state.end() || !sandbox->is_object()) return refuse("it had no sandbox holder");
  const pid_t holder = sandbox->value("pid", 0);
  if (auto pinned = sandbox::PinHolder(holder, sandbox->value("startTime", uint64_t{0})); !pinned) {
    return refuse("its sandbox holder (pid " + std::to_string(holder) +
                  "): " + pinned.error().message());
  }
  return state;
}

// Whether the adopted pod goes on as it is, or is stopped first (S15.6).
std::optional<std::string> Executor::ReasonToStopAdopted(const nlohmann::json& state) const {
  pod::Pod same = pod_;
  const nlohmann::json& saved = state["pod"];
  if (saved.contains("metadata") && saved["metadata"].contains("uid") &&
      saved["metadata"]["uid"].is_string()) {
    same.metadata.uid = saved["metadata"]["uid"].get<std::string>();
  }
  const nlohmann::json mine = pod::ToJson(same);
  // Labels and annotations are the pod's metadata, not what runs (the
  // kubelet's static pods hash the spec too): only the spec decides.
  if (!mine.contains("spec") || !saved.contains("spec") || mine["spec"] != saved["spec"]) {
    // S17.10: a pod resized in place is still the manifest's pod.
    if (state.contains("resize") && state["resize"].is_object() &&
        state["resize"].value("resized", false) && mine.contains("spec") &&
        saved.contains("spec") && SameButResized(mine["spec"], saved["spec"])) {
      return std::nullopt;
    }
    return "Update";
  }
  return std::nullopt;
}

Result<std::unique_ptr<Executor>> Executor::StopAdoptedFirst(nlohmann::json state,
                                                             const pod::Pod& loaded,
                                                             const ExecutorOptions& options,
                                                             std::optional<std::string> reason) {
  auto old_pod = SavedPod(state, loaded);
  if (!old_pod) return old_pod.take_error();
  auto loop = options.clock ? loop::EventLoop::Create(*options.clock) : loop::EventLoop::Create();
  if (!loop) return loop.take_error();
  std::unique_ptr<Executor> ex(new Executor(std::move(*old_pod), options, std::move(*loop)));
  InheritedHandover adopted;
  adopted.state = std::move(state);
  adopted.adopting = true;
  ex->handover_ = std::move(adopted);
  ex->stop_after_resume_ = std::move(reason);
  ex->stop_adopted_ = true;
  if (auto s = ex->Setup(); !s) {
    if (ex->owns_pod_) ex->Cleanup();
    return s.take_error();
  }
  return ex;
}

}  // namespace podvisor::supervisor::executor
