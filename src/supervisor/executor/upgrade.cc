// `podvisor upgrade` (S15.2): the supervisor re-executes the podvisor
// binary in place, handing its pod over to the new program: same pid (PID
// 1 stays PID 1), the containers stay its children, their log pipes and
// the control socket stay open across execve.
//
// Everything that can fail comes before the point of no return, so a
// refused upgrade leaves the old supervisor serving the pod as before:
//   1. the pod is not terminating (a stop in progress is not handed over);
//   2. the new binary says it reads our handover format (`handover-check`,
//      run as a child, its exit awaited on the loop);
//   3. quiet: no runtime call runs, no instance is between two steps and no
//      hook runs (waited for, up to the request's timeout; probe runs in
//      flight are abandoned: the next supervisor probes at once, S15.3);
//   4. the state is written to a memfd and the descriptors it names are
//      made inheritable; the reply goes out; execve. Only a failed execve
//      comes back here: the descriptors are closed-on-exec again and the
//      old supervisor carries on (event UpgradeFailed).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"

#include "common/file_io.h"

#include "pod/serialize.h"
#include "podvisor_version.h"
#include "process/spawn.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/handover_format.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

namespace {

nlohmann::json UpgradeError(const std::string& message) {
  return control::ControlErrorReply(control::ControlCode::kFailedPrecondition, message);
}

std::string Millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

bool WriteAllTo(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::vector<std::string> OwnArgv() {
  auto text = ReadFileBounded("/proc/self/cmdline", 1024 * 1024);
  std::vector<std::string> argv;
  if (!text) return argv;
  std::size_t at = 0;
  while (at < text->size()) {
    std::size_t end = text->find('\0', at);
    if (end == std::string::npos) end = text->size();
    argv.emplace_back(text->substr(at, end - at));
    at = end + 1;
  }
  return argv;
}

}  // namespace

void Executor::RequestUpgrade(const std::optional<std::string>& binary, Duration timeout,
                              control::ControlServer::Responder respond) {
  // SIGHUP's upgrade has nobody to answer: its outcome is the log and events.
  if (!respond) respond = [](const control::ControlReply&) {};
  auto pending = std::make_unique<PendingUpgrade>();
  pending->binary = binary.value_or(SelfExecutablePath());
  pending->respond = std::move(respond);
  pending->requested = loop_.Now();
  // Every refusal is an error reply and an UpgradeRefused event (S15.2).
  if (upgrade_) return RefuseUpgrade(*pending, "an upgrade of this pod is already in progress");
  if (lifecycle_.Terminating() || pod_ended_) {
    return RefuseUpgrade(*pending, "the pod is terminating: nothing to hand over");
  }
  // The new binary's answer comes through a pipe: a few dozen bytes, which
  // the pipe holds until the child's exit is seen.
  int out[2];
  if (::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
    return RefuseUpgrade(*pending, std::string("pipe: ") + std::strerror(errno));
  }
  pending->check_output.Reset(out[0]);
  Fd write_end(out[1]);
  process::SpawnOptions spawn;
  spawn.argv = {pending->binary, "handover-check"};
  spawn.stdout_fd = write_end.get();
  spawn.stderr_fd = process::SpawnOptions::kInherit;
  spawn.cwd = "/";
  auto child = process::Spawn(spawn);
  if (!child) {
    return RefuseUpgrade(*pending, pending->binary + ": " + child.error().message());
  }
  upgrade_ = std::move(pending);
  upgrade_->deadline = loop_.AddTimer(loop_.Now() + timeout, [this, timeout] {
    if (!upgrade_) return;
    upgrade_->deadline = 0;
    RefuseUpgrade(*upgrade_, "not quiet after " + Millis(timeout) + ": " +
                                 (upgrade_->busy.empty() ? "waiting" : upgrade_->busy));
    upgrade_.reset();
  });
  auto tracked = reaper_.Track(*child, [this](const process::ExitInfo& exit) {
    if (!upgrade_) return;
    OnUpgradeCheckExited(exit);
  });
  if (!tracked) {
    RefuseUpgrade(*upgrade_, tracked.error().message());
    CancelUpgrade();
  }
}

void Executor::OnUpgradeCheckExited(const process::ExitInfo& exit) {
  char buf[4096];
  ssize_t n = ::read(upgrade_->check_output.get(), buf, sizeof buf);
  std::string text = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  if (!exit.success()) {
    RefuseUpgrade(*upgrade_, upgrade_->binary + " handover-check " + exit.ToString() +
                                 " (is it a podvisor that can take a pod over?)");
    return CancelUpgrade();
  }
  auto answer = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || !answer.contains("version") || !answer["version"].is_string() ||
      !answer.contains("format") || !answer["format"].is_number_integer() ||
      !answer.contains("oldestFormat") || !answer["oldestFormat"].is_number_integer()) {
    RefuseUpgrade(*upgrade_, upgrade_->binary + " handover-check: unexpected answer");
    return CancelUpgrade();
  }
  if (auto s = CheckHandoverFormat(answer["oldestFormat"].get<int>(), answer["format"].get<int>());
      !s) {
    RefuseUpgrade(*upgrade_, "the new binary cannot take the pod over: " + s.error().message());
    return CancelUpgrade();
  }
  upgrade_->to_version = answer["version"].get<std::string>();
  upgrade_->checked = true;
  MaybeUpgrade();
}

void Executor::RefuseUpgrade(PendingUpgrade& pending, const std::string& why) {
  log::Warn("upgrade refused: {}", why);
  OnPublish(lifecycle::Publish{lifecycle::EventType::kWarning, "UpgradeRefused", "pod",
                               "not upgraded to " + pending.binary + ": " + why});
  if (pending.respond) pending.respond(UpgradeError(why));
  pending.respond = nullptr;
}

void Executor::CancelUpgrade() {
  if (!upgrade_) return;
  if (upgrade_->deadline != 0) loop_.CancelTimer(upgrade_->deadline);
  upgrade_.reset();
}

// Called after every batch and every runtime call's end while an upgrade
// waits: the first quiet moment is the one.
void Executor::MaybeUpgrade() {
  if (!upgrade_ || !upgrade_->checked || draining_) return;
  if (lifecycle_.Terminating() || pod_ended_) {
    RefuseUpgrade(*upgrade_, "the pod began to terminate");
    return CancelUpgrade();
  }
  std::string busy;
  if (!instances_.Quiet(&busy)) {
    upgrade_->busy = busy;
    return;
  }
  if (lifecycle_.HooksRunning()) {
    upgrade_->busy = "a lifecycle hook runs";
    return;
  }
  if (pulls_->Busy()) {
    upgrade_->busy = "an image pull runs";
    return;
  }
  ExecInPlace();
}

nlohmann::json Executor::HandoverState() {
  nlohmann::json state;
  state["format"] = kHandoverFormat;
  state["version"] = PODVISOR_VERSION;
  state["bootId"] = BootId();
  if (pod_json_.is_null()) pod_json_ = pod::ToJson(pod_);  // the same for the pod's life
  state["pod"] = pod_json_;
  state["createdAt"] = WallToNs(record_created_at_);
  state["lifecycle"] = lifecycle_.SaveState();
  state["terminating"] = lifecycle_.Terminating();
  state["instances"] = instances_.SaveState();
  if (sandbox_) {
    state["sandbox"] = {{"pid", sandbox_->holder_pid()},
                        {"startTime", sandbox_->holder_start_time()},
                        {"pidNsInit", sandbox_->pid_ns_init()}};
  }
  state["cgroupName"] = pod_cgroup_name_;
  state["resize"] = ResizeStateJson();  // S17.10
  state["supervisor"] = {{"startedAt", WallToNs(supervisor_.started_at)},
                         {"upgrades", supervisor_.upgrades}};
  if (supervisor_.upgraded_at)
    state["supervisor"]["upgradedAt"] = WallToNs(*supervisor_.upgraded_at);
  return state;
}

void Executor::ExecInPlace() {
  PendingUpgrade& up = *upgrade_;
  const MonoTime began = loop_.Now();
  nlohmann::json state = HandoverState();
  // What crosses execve: each is made inheritable only now, and only for
  // the execve (every descriptor of ours is close-on-exec otherwise).
  std::vector<std::pair<std::string, int>> carried = instances_.CarriedFds();
  carried.emplace_back("lock", pod_lock_->fd());
  carried.emplace_back("control", control_->listen_fd());
  for (const auto& [key, fd] : carried) state["fds"][key] = fd;
  auto undo = [&](const std::string& why) {
    for (const auto& [key, fd] : carried) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    log::Error("upgrade to {} failed: {}", up.binary, why);
    OnPublish(lifecycle::Publish{
        lifecycle::EventType::kWarning, "UpgradeFailed", "pod",
        "not upgraded to " + up.binary + ": " + why + "; this supervisor carries on"});
    CancelUpgrade();
  };
  Fd memfd(static_cast<int>(::memfd_create("podvisor-handover", 0)));
  if (!memfd) return undo(std::string("memfd_create: ") + std::strerror(errno));
  const std::string text = state.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!WriteAllTo(memfd.get(), text)) return undo(std::string("write: ") + std::strerror(errno));
  for (const auto& [key, fd] : carried) {
    if (::fcntl(fd, F_SETFD, 0) != 0) return undo("fcntl " + key + ": " + std::strerror(errno));
  }
  std::vector<std::string> argv = OwnArgv();
  if (argv.empty()) return undo("cannot read /proc/self/cmdline");
  ::setenv(kHandoverFdEnv, std::to_string(memfd.get()).c_str(), 1);
  ::setenv(kHandoverStartEnv,
           std::to_string(
               std::chrono::duration_cast<std::chrono::nanoseconds>(up.requested.time_since_epoch())
                   .count())
               .c_str(),
           1);
  if (!notify_socket_.empty()) ::setenv("NOTIFY_SOCKET", notify_socket_.c_str(), 1);
  nlohmann::json reply = {{"upgrading", true},
                          {"from", PODVISOR_VERSION},
                          {"to", up.to_version},
                          {"binary", up.binary},
                          {"pid", ::getpid()}};
  if (up.respond) up.respond(reply);
  up.respond = nullptr;
  control_->Flush(std::chrono::milliseconds(500));
  log::Info("upgrading: re-executing {} ({} -> {}), {} bytes of state, prepared in {}", up.binary,
            PODVISOR_VERSION, up.to_version, text.size(), Millis(loop_.Now() - began));
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(up.binary.c_str(), args.data());
  const int err = errno;
  ::unsetenv(kHandoverFdEnv);
  ::unsetenv(kHandoverStartEnv);
  ::unsetenv("NOTIFY_SOCKET");
  undo(std::string("execv: ") + std::strerror(err));
}

}  // namespace podvisor::supervisor::executor
