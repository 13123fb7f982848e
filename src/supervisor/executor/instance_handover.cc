// Instances (instances.h) across a handover (S15.1): what a supervisor
// writes about each container instance for the next one, and how the next
// one takes the instances back without touching their processes.
//
// Only what cannot be derived is written: the paths the instance's
// preparation made, its step, its init's pid and start time (a pid alone
// could name a process that took a reused pid), and its log: the file and
// the bytes of a line not yet ended. The exec template is read back from
// the instance's config.json rather than carried: it holds the container's
// environment, Secrets included, which must not be copied into one more
// file. The descriptors (the log pipes' read ends) travel beside the data,
// by key: "<runtime id>/stdout", "<runtime id>/stderr".
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <fstream>

#include "common/log.h"

#include "cgroups/oom.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

namespace {

using nlohmann::json;

constexpr const char* kStreamKeys[2] = {"stdout", "stderr"};

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]);
    const int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

template <typename Enum>
std::optional<Enum> ParseName(std::string_view name, std::string_view (*namer)(Enum), int count) {
  for (int i = 0; i < count; ++i) {
    if (namer(static_cast<Enum>(i)) == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace

uint64_t StartTimeOf(pid_t pid) {
  auto t = process::ProcessStartTime(pid);
  return t ? *t : 0;
}

void ReportAsLost(lifecycle::ContainerExited& e) {
  e.reason = "ContainerStatusUnknown";
  e.exit_code = 137;
  e.signal = 0;
  e.oom_killed = false;
  e.message = "The container could not be located when the pod was terminated";
}

std::string CarriedFdKey(const std::string& runtime_id, int stream) {
  return runtime_id + "/" + kStreamKeys[stream];
}

json Instances::SaveState() {
  // In creation order, which Resume restores (InstanceTable::Restore).
  std::vector<const Instance*> records;
  for (const auto& [id, owned] : table_) records.push_back(owned.get());
  std::sort(records.begin(), records.end(),
            [](const Instance* a, const Instance* b) { return a->seq < b->seq; });
  json out = json::array();
  for (const Instance* record : records) {
    const Instance& inst = *record;
    json j;
    j["container"] = inst.container;
    j["instance"] = inst.instance;
    j["id"] = inst.id;
    j["dir"] = inst.dir.string();
    j["seq"] = inst.seq;
    j["root"] = {{"lower", inst.root.lower.string()},
                 {"upper", inst.root.upper.string()},
                 {"work", inst.root.work.string()},
                 {"merged", inst.root.merged.string()}};
    j["rootMounted"] = inst.root_mounted;
    j["subPathsBound"] = inst.sub_paths_bound;
    j["cgroupsPath"] = inst.cgroups_path;
    j["oomKillsAtCreate"] = inst.oom_kills_at_create;
    j["step"] = InstanceStepName(inst.state.step);
    j["exit"] = ExitStepName(inst.state.exit);
    j["byRun"] = inst.state.by_run;
    j["runtimeHoldsState"] = inst.state.runtime_holds_state;
    j["createFailed"] = inst.state.create_failed;
    j["waitingForFork"] = inst.state.waiting_for_fork;
    j["deleteAsked"] = inst.state.delete_asked;
    if (inst.init) {
      j["initPid"] = inst.init->pid();
      j["initStartTime"] = inst.init_start_time;
    }
    if (inst.init_exit) {
      j["initExit"] = {{"pid", inst.init_exit->pid},
                       {"killed", inst.init_exit->killed()},
                       {"code", inst.init_exit->code},
                       {"signal", inst.init_exit->signal},
                       {"coreDumped", inst.init_exit->core_dumped}};
    }
    if (inst.log) {
      j["log"] = {{"path", inst.log->path().string()},
                  {"pendingStdout", Hex(inst.log->pending(logs::LogStream::kStdout))},
                  {"pendingStderr", Hex(inst.log->pending(logs::LogStream::kStderr))}};
    }
    j["pipes"] = {inst.pipes[0].valid(), inst.pipes[1].valid()};
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::pair<std::string, int>> Instances::CarriedFds() {
  std::vector<std::pair<std::string, int>> fds;
  for (const auto& [id, owned] : table_) {
    for (int s = 0; s < 2; ++s) {
      if (owned->pipes[s].valid()) fds.emplace_back(CarriedFdKey(id, s), owned->pipes[s].get());
    }
  }
  return fds;
}

bool Instances::Quiet(std::string* busy) {
  if (!calls_.empty()) {
    if (busy)
      *busy = calls_.begin()->second->what + " (pid " + std::to_string(calls_.begin()->first) + ")";
    return false;
  }
  for (const auto& [id, owned] : table_) {
    const InstanceStep step = owned->state.step;
    if (step == InstanceStep::kPreparing || step == InstanceStep::kCreating ||
        step == InstanceStep::kStarting || step == InstanceStep::kDeleting ||
        owned->delete_retry != 0) {
      if (busy) *busy = id + " " + std::string(InstanceStepName(step));
      return false;
    }
  }
  return true;
}

void Instances::ForEachAdopted(
    const std::function<void(const std::string& container, pid_t pid)>& f) {
  for (const auto& [id, owned] : table_) {
    if (owned->adopted && owned->init && !owned->init_exit) f(owned->container, owned->init->pid());
  }
}

Status Instances::Resume(const json& saved, std::map<std::string, Fd>& fds, bool adopting) {
  std::vector<std::string> interrupted;
  if (!saved.is_array()) return Error("handover state: instances: not a list");
  for (const json& j : saved) {
    if (!j.is_object()) return Error("handover state: instances: an entry is not an object");
    auto owned = std::make_unique<Instance>();
    Instance& inst = *owned;
    try {
      inst.container = j.at("container").get<std::string>();
      inst.instance = j.at("instance").get<int>();
      inst.id = j.at("id").get<std::string>();
      inst.dir = j.at("dir").get<std::string>();
      inst.seq = j.value("seq", uint64_t{0});
      const json& root = j.at("root");
      inst.root = {root.value("lower", ""), root.value("upper", ""), root.value("work", ""),
                   root.value("merged", "")};
      inst.root_mounted = j.value("rootMounted", false);
      inst.sub_paths_bound = j.value("subPathsBound", false);
      inst.cgroups_path = j.value("cgroupsPath", "");
      inst.oom_kills_at_create = j.value("oomKillsAtCreate", uint64_t{0});
      auto step = ParseName<InstanceStep>(j.at("step").get<std::string>(), InstanceStepName,
                                          static_cast<int>(InstanceStep::kDeleted) + 1);
      auto exit = ParseName<ExitStep>(j.at("exit").get<std::string>(), ExitStepName,
                                      static_cast<int>(ExitStep::kReported) + 1);
      if (!step || !exit) return Error("handover state: instance " + inst.id + ": unknown step");
      inst.state.step = *step;
      inst.state.exit = *exit;
      inst.state.by_run = j.value("byRun", false);
      inst.state.runtime_holds_state = j.value("runtimeHoldsState", false);
      inst.state.create_failed = j.value("createFailed", false);
      inst.state.waiting_for_fork = j.value("waitingForFork", false);
      inst.state.delete_asked = j.value("deleteAsked", false);
      if (j.contains("initExit")) {
        const json& e = j.at("initExit");
        const pid_t pid = e.value("pid", 0);
        inst.init_exit =
            e.value("killed", false)
                ? process::ExitInfo::Killed(pid, e.value("signal", 0), e.value("coreDumped", false))
                : process::ExitInfo::Exited(pid, e.value("code", 0));
      }
      if (ContainerSpec(inst.container) == nullptr) {
        return Error("handover state: instance " + inst.id + ": the pod has no container " +
                     inst.container);
      }
      // The exec template, from the instance's own config (see above).
      std::ifstream config(inst.dir / "config.json");
      if (config) {
        json parsed = json::parse(config, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object() && parsed.contains("process")) inst.process = parsed["process"];
      }
      if (j.contains("log")) {
        const json& log = j.at("log");
        const std::filesystem::path path = log.at("path").get<std::string>();
        const std::filesystem::path dir = path.parent_path();
        auto writer =
            logs::CriLogWriter::Open(path, pod_.options.log_rotation.max_size,
                                     [this, dir, n = inst.instance] { OnLogRotated(dir, n); });
        if (!writer) return writer.take_error();
        for (int s = 0; s < 2; ++s) {
          auto bytes = Unhex(log.value(s == 0 ? "pendingStdout" : "pendingStderr", ""));
          if (!bytes) return Error("handover state: instance " + inst.id + ": bad log bytes");
          writer->RestorePending(s == 0 ? logs::LogStream::kStdout : logs::LogStream::kStderr,
                                 std::move(*bytes));
        }
        inst.log.emplace(std::move(*writer));
      }
      for (int s = 0; s < 2; ++s) {
        auto fd = fds.find(CarriedFdKey(inst.id, s));
        if (fd == fds.end()) continue;
        inst.pipes[s] = std::move(fd->second);
        fds.erase(fd);
        ::fcntl(inst.pipes[s].get(), F_SETFD, FD_CLOEXEC);
      }
      const pid_t init_pid = j.value("initPid", 0);
      const uint64_t start_time = j.value("initStartTime", uint64_t{0});
      Instance& added = table_.Restore(std::move(owned));
      WatchLogPipe(added, 0);
      WatchLogPipe(added, 1);
      if (init_pid > 0 && !added.init_exit) {
        if (auto s = ResumeInit(added, init_pid, start_time, fds); !s) return s;
      }
      if (adopting) interrupted.push_back(added.id);
    } catch (const json::exception& e) {
      return Error(std::string("handover state: instances: ") + e.what());
    }
  }
  // The calls that died with the supervisor, as failures of their steps:
  // the instance steps' own transitions decide what follows (a create's
  // failure is reported and its remains deleted; a start's likewise; a
  // delete is spawned again). Their reports wait in the Executor's queue
  // until the Lifecycle has resumed.
  for (const std::string& id : interrupted) {
    Instance* inst = FindById(id);
    if (!inst) continue;
    const std::string why = "the supervisor died during this step";
    switch (inst->state.step) {
      case InstanceStep::kPreparing:
      case InstanceStep::kCreating:
        inst->state.runtime_holds_state = true;  // the create may have got far
        if (inst->state.waiting_for_fork) {
          Advance(*inst, InstanceInput::kForkFailed, why);
        } else {
          Advance(*inst, InstanceInput::kCreateCallFailed, why);
        }
        break;
      case InstanceStep::kStarting:
        Advance(*inst, InstanceInput::kStartFailed, why);
        break;
      case InstanceStep::kDeleting:
        Advance(*inst, InstanceInput::kDeleteRetry);
        break;
      default:
        break;
    }
  }
  return Ok();
}

// After a re-exec the init is our child still (same pid, same children):
// it is tracked again, and one that exited meanwhile is a zombie the
// reaper collects as soon as the loop runs. After a crash of its
// supervisor (S15.5) it is nobody's child we know: its pidfd, kept by the
// sandbox's holder (or opened now, its start time checked, when none was
// kept), says when it exits and, through PIDFD_INFO_EXIT, how.
Status Instances::ResumeInit(Instance& inst, pid_t pid, uint64_t start_time,
                             std::map<std::string, Fd>& fds) {
  inst.init_start_time = start_time;
  auto kept = fds.find(inst.id + "/pidfd");
  if (kept != fds.end()) {
    Fd pidfd = std::move(kept->second);
    fds.erase(kept);
    if (process::ParentOf(pid) != ::getpid()) return WatchAdoptedInit(inst, pid, std::move(pidfd));
  }
  auto init = start_time != 0 && StartTimeOf(pid) != start_time
                  ? Result<process::ChildProcess>(Error("a new process has its pid", ESRCH))
                  : process::ChildProcess::Adopt(pid);
  if (!init && init.error().code() == ECHILD) {
    auto pidfd = process::PidfdOpen(pid);
    // Pinned by the pidfd now: the start time read after it is the process's.
    if (pidfd && StartTimeOf(pid) == start_time) {
      return WatchAdoptedInit(inst, pid, std::move(*pidfd));
    }
    init = Error("a new process has its pid", ESRCH);
  }
  if (!init) {
    // Not the process it was: its exit cannot be known any more. Reported
    // as the kubelet reports a container it lost (S15.5).
    log::Warn("{}: init pid {}: {}", inst.id, pid, init.error().message());
    OnInitExited(inst, process::ExitInfo::Killed(pid, SIGKILL));
    return Ok();
  }
  std::string id = inst.id;
  if (auto s = pod_.reaper.Track(*init,
                                 [this, id](const process::ExitInfo& e) {
                                   if (Instance* i = FindById(id)) OnInitExited(*i, e);
                                 });
      !s) {
    return s.error().Wrap(inst.id);
  }
  inst.init.emplace(std::move(*init));
  return Ok();
}

Status Instances::WatchAdoptedInit(Instance& inst, pid_t pid, Fd pidfd) {
  const int fd = pidfd.get();
  process::ChildProcess init(pid, std::move(pidfd));
  // Not ours to reap and never killed through the handle: its exit comes
  // from the pidfd (OnAdoptedInitReadable).
  init.Commit();
  inst.init.emplace(std::move(init));
  inst.adopted = true;
  std::string id = inst.id;
  return pod_.loop.Add(fd, EPOLLIN, [this, id](uint32_t) { OnAdoptedInitEnded(id, 0); });
}

// The kernel records the exit in the pidfd when the process is reaped, by
// whoever is its parent now (PID 1 or a subreaper above us); until then
// the zombie's /proc stat holds it. Only the moment between the two (the
// zombie reaped as we read) needs another look; the few looks are
// bounded, and then the exit counts as unknown: the kubelet's lost
// container (S15.5).
void Instances::OnAdoptedInitEnded(const std::string& id, int attempt) {
  static constexpr std::array<Duration, 4> kLookAgain = {
      std::chrono::milliseconds(2), std::chrono::milliseconds(20), std::chrono::milliseconds(200),
      std::chrono::seconds(1)};
  Instance* inst = FindById(id);
  if (!inst || !inst->init || inst->init_exit) return;
  if (attempt == 0) pod_.loop.Remove(inst->init->pidfd());
  auto exit = process::PidfdExitInfo(inst->init->pidfd());
  if (exit && *exit) return OnInitExited(*inst, **exit);
  // Not reaped yet: the zombie's stat has its wait status.
  if (auto zombie = process::ZombieExit(inst->init->pid(), inst->init_start_time);
      zombie && *zombie) {
    return OnInitExited(*inst, **zombie);
  }
  if (exit && attempt < static_cast<int>(kLookAgain.size())) {
    pod_.loop.AddTimer(pod_.loop.Now() + kLookAgain[static_cast<std::size_t>(attempt)],
                       [this, id, attempt] { OnAdoptedInitEnded(id, attempt + 1); });
    return;
  }
  log::Warn("{}: the exit of init pid {} cannot be known{}", id, inst->init->pid(),
            exit ? std::string() : ": " + exit.error().message());
  inst->exit_unknown = true;
  OnInitExited(*inst, process::ExitInfo::Killed(inst->init->pid(), SIGKILL));
}

}  // namespace podvisor::supervisor::executor
