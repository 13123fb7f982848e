#include "cli/apply_pods.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "cli/client.h"
#include "cli/pod_records.h"
#include "common/pod_dir.h"
#include "common/pod_lock.h"
#include "process/pidfd.h"

namespace podvisor::cli::apply {
namespace fs = std::filesystem;
namespace {

Error ErrnoError(const std::string& what) {
  const int err = errno;
  return Error(what + ": " + std::strerror(err), err);
}

// argv as the NULL-terminated array execv wants, built before a fork.
std::vector<char*> ArgvOf(std::vector<std::string>& args) {
  std::vector<char*> out;
  out.reserve(args.size() + 1);
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

// Runs a program to its end with stdio on /dev/null: its exit status, or
// -1 when it could not run or was killed.
int RunQuiet(std::vector<std::string> args) {
  std::vector<char*> argv = ArgvOf(args);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string SelfExe() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : self.string();
}

std::string UnitName(const std::string& pod) {
  return std::string("podvisor-applied@") + pod + ".service";
}

Status WriteRunEnv(const HostOptions& options, const std::string& pod) {
  ApplyDir dirs{options.state_dir / kApplyDirName};
  std::string words;
  for (const auto& arg : options.run_args) {
    if (arg.find_first_of(" \t\n\"'\\$") != std::string::npos) {
      return Error("--run-arg " + arg + ": the systemd unit takes run's options as words, " +
                   "without spaces, quotes, backslashes or $");
    }
    words += (words.empty() ? "" : " ") + arg;
  }
  std::ofstream out(dirs.RunEnv(pod), std::ios::trunc);
  out << "PODVISOR_RUN_ARGS=" << words << "\n";
  out.close();
  if (!out) return Error("writing " + dirs.RunEnv(pod).string());
  return Ok();
}

// Process mode: fork, setsid, fork again, so the supervisor is in its own
// session and no child of ours (apply may end first, or run for days with
// --watch: no zombie either way). The middle process reports the
// grandchild's pid on a pipe and exits.
Result<pid_t> SpawnDetached(const HostOptions& options, const std::string& pod) {
  ApplyDir dirs{options.state_dir / kApplyDirName};
  std::vector<std::string> args = {SelfExe(),     "run",
                                   "--state-dir", options.state_dir.string(),
                                   "--log-dir",   options.log_dir.string()};
  args.insert(args.end(), options.run_args.begin(), options.run_args.end());
  args.push_back(dirs.Current(pod).string());
  std::vector<char*> argv = ArgvOf(args);
  Fd log(::open(dirs.SupervisorLog(pod).c_str(),
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log) return ErrnoError("opening " + dirs.SupervisorLog(pod).string());
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return ErrnoError("opening /dev/null");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return ErrnoError("pipe");
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  const pid_t middle = ::fork();
  if (middle < 0) return ErrnoError("fork");
  if (middle == 0) {
    // Between fork and exec: system calls only.
    ::setsid();
    const pid_t supervisor = ::fork();
    if (supervisor == 0) {
      ::dup2(null.get(), 0);
      ::dup2(log.get(), 1);
      ::dup2(log.get(), 2);
      ::syscall(SYS_close_range, 3U, ~0U, 0U);
      sigset_t none;
      ::sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execv(argv[0], argv.data());
      static constexpr char kFailed[] = "podvisor apply: cannot execute podvisor run\n";
      (void)!::write(2, kFailed, sizeof kFailed - 1);
      ::_exit(127);
    }
    (void)!::write(write_end.get(), &supervisor, sizeof supervisor);
    ::_exit(supervisor < 0 ? 1 : 0);
  }
  write_end = Fd();
  pid_t supervisor = -1;
  ssize_t n = 0;
  do {
    n = ::read(read_end.get(), &supervisor, sizeof supervisor);
  } while (n < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != sizeof supervisor || supervisor <= 0) return Error("cannot start podvisor run");
  return supervisor;
}

// What a record that is not Ready says of why, in a line.
std::string NotReadyReason(const nlohmann::json& record) {
  const nlohmann::json& status = Member(record, "status");
  std::string phase = Text(status, "phase");
  std::string out = "phase " + (phase.empty() ? std::string("Unknown") : phase);
  if (std::string reason = Text(status, "reason"); !reason.empty()) out += ", " + reason;
  if (std::string message = Text(Condition(record, "Ready"), "message"); !message.empty()) {
    out += ", " + message;
  }
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const nlohmann::json& statuses = Member(status, list);
    if (!statuses.is_array()) continue;
    for (const auto& c : statuses) {
      for (const char* kind : {"waiting", "terminated"}) {
        std::string r = Text(Member(Member(c, "state"), kind), "reason");
        if (!r.empty()) out += "; " + Text(c, "name") + " " + kind + ": " + r;
      }
    }
  }
  return out;
}

// The last line of the supervisor's log: why it exited, when it did.
std::string LastLogLine(const fs::path& log) {
  std::ifstream in(log);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

const nlohmann::json& Member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Text(const nlohmann::json& j, const char* key) {
  const nlohmann::json& m = Member(j, key);
  return m.is_string() ? m.get<std::string>() : std::string();
}

const nlohmann::json& Condition(const nlohmann::json& record, const char* type) {
  static const nlohmann::json kNull;
  // A v1 Pod, or its status alone (as a resize reply may be).
  const nlohmann::json& status = Member(record, "status");
  const nlohmann::json& conditions = Member(status.is_object() ? status : record, "conditions");
  if (!conditions.is_array()) return kNull;
  for (const auto& c : conditions) {
    if (Text(c, "type") == type) return c;
  }
  return kNull;
}

bool UseSystemd(const HostOptions& options, std::string& why) {
  if (options.detach == Detach::kProcess) {
    why = "as processes of their own (--detach process)";
    return false;
  }
  if (options.detach == Detach::kSystemd) {
    why = std::string("as instances of ") + kUnitTemplate + " (--detach systemd)";
    return true;
  }
  std::error_code ec;
  if (!fs::is_directory("/run/systemd/system", ec)) {
    why = "as processes of their own: not booted with systemd (no /run/systemd/system)";
    return false;
  }
  if (options.state_dir != kUnitStateDir || options.log_dir != kUnitLogDir) {
    why = std::string("as processes of their own: the unit runs pods with --state-dir ") +
          kUnitStateDir + " --log-dir " + kUnitLogDir;
    return false;
  }
  if (RunQuiet({"systemctl", "cat", kUnitTemplate}) != 0) {
    why = std::string("as processes of their own: systemctl does not know ") + kUnitTemplate;
    return false;
  }
  why = std::string("as instances of ") + kUnitTemplate + " (a systemd host)";
  return true;
}

Status StartPod(const HostOptions& options, bool systemd, const std::string& pod, Fd& supervisor) {
  supervisor = Fd();
  if (systemd) {
    if (Status s = WriteRunEnv(options, pod); !s) return s;
    // --no-block: the unit is Type=notify, and apply waits for Ready
    // itself, within its own budget and with the reason when it fails.
    int status = RunQuiet({"systemctl", "start", "--no-block", UnitName(pod)});
    if (status != 0) {
      return Error("systemctl start " + UnitName(pod) + " failed (exit status " +
                   std::to_string(status) + ")");
    }
    return Ok();
  }
  auto pid = SpawnDetached(options, pod);
  if (!pid) return pid.take_error();
  auto pidfd = process::PidfdOpen(*pid);
  // ESRCH: it has ended already, and WaitReady reads what it left.
  if (pidfd) supervisor = std::move(*pidfd);
  return Ok();
}

Status StopPod(const HostOptions& options, const std::string& pod, const std::string& reason) {
  nlohmann::json request = {{"op", "stop"}, {"wait", true}, {"reason", reason}};
  auto reply = AskSupervisorWithin(options.state_dir, pod, request, Duration::zero());
  // Not running (any more) is what a stop wants.
  if (!reply && reply.error().code() != ENOENT && reply.error().code() != ECONNREFUSED) {
    return reply.take_error();
  }
  return PodLock::WaitReleased(options.state_dir, pod);
}

std::string RecordMark(const fs::path& state_dir, const std::string& pod) {
  const fs::path file = PodDir(state_dir, pod).RecordFile();
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return "";
  auto record = ReadRecord(file);
  return std::to_string(st.st_ino) + ":" + (record ? Text(Member(*record, "metadata"), "uid") : "");
}

// Every container's restartCount, summed: a crash between two records
// shows as a larger sum even when the pod is Ready again.
int64_t Restarts(const nlohmann::json& record) {
  int64_t sum = 0;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const nlohmann::json& statuses = Member(Member(record, "status"), list);
    if (!statuses.is_array()) continue;
    for (const auto& c : statuses) {
      const nlohmann::json& n = Member(c, "restartCount");
      if (n.is_number_integer()) sum += n.get<int64_t>();
    }
  }
  return sum;
}

ReadyOutcome WaitReady(const HostOptions& options, const std::string& pod,
                       const std::string& old_mark, const Fd& supervisor, Duration budget,
                       Duration min_ready, int interrupt) {
  using SteadyClock = std::chrono::steady_clock;
  const PodDir dir(options.state_dir, pod);
  Fd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify) return {ReadyOutcome::kNotReady, "inotify: " + std::string(std::strerror(errno))};
  // The pod's directory may not exist yet (a first start): the state
  // directory's watch says when it does.
  ::inotify_add_watch(inotify.get(), options.state_dir.c_str(), IN_CREATE | IN_MOVED_TO);
  const auto deadline = SteadyClock::now() + budget;
  bool supervisor_gone = false;
  std::string last_reason = "no status yet";
  // Ready since then, with this many restarts: it counts once it has held
  // for min_ready (a container that crashes at once is Ready for an
  // instant, as Kubernetes's minReadySeconds guards against).
  std::optional<std::pair<SteadyClock::time_point, int64_t>> ready_since;
  for (;;) {
    ::inotify_add_watch(inotify.get(), dir.dir().c_str(), IN_MOVED_TO | IN_CLOSE_WRITE);
    const auto now = SteadyClock::now();
    if (auto record = ReadRecord(dir.RecordFile());
        record && RecordMark(options.state_dir, pod) != old_mark) {
      const std::string phase = Text(Member(*record, "status"), "phase");
      if (phase == "Succeeded") return {ReadyOutcome::kReady, ""};
      const bool ready = Text(Condition(*record, "Ready"), "status") == "True";
      const int64_t restarts = Restarts(*record);
      if (!ready || (ready_since && ready_since->second != restarts)) ready_since.reset();
      if (ready && !ready_since) ready_since.emplace(now, restarts);
      if (ready_since && now - ready_since->first >= min_ready) {
        return {ReadyOutcome::kReady, ""};
      }
      if (!ready) last_reason = NotReadyReason(*record);
      if (phase == "Failed") return {ReadyOutcome::kNotReady, NotReadyReason(*record)};
    }
    if (supervisor_gone) {
      std::string line =
          LastLogLine(ApplyDir{options.state_dir / kApplyDirName}.SupervisorLog(pod));
      return {ReadyOutcome::kNotReady,
              "its supervisor exited" + (line.empty() ? std::string() : ": " + line)};
    }
    // A pod Ready when the budget ends gets its min_ready to prove it.
    auto due = ready_since ? ready_since->first + min_ready : deadline;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(due - now);
    if (!ready_since && left.count() <= 0) {
      return {ReadyOutcome::kNotReady,
              "not Ready within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(budget).count()) +
                  "s: " + last_reason};
    }
    pollfd fds[3] = {
        {inotify.get(), POLLIN, 0}, {supervisor.get(), POLLIN, 0}, {interrupt, POLLIN, 0}};
    // +1: wake after the due time, not a hair before it.
    int ready = ::poll(fds, 3, static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 60'000)));
    if (ready < 0 && errno != EINTR) {
      return {ReadyOutcome::kNotReady, "poll: " + std::string(std::strerror(errno))};
    }
    if (fds[2].revents & POLLIN) return {ReadyOutcome::kInterrupted, "interrupted"};
    if (fds[1].revents & (POLLIN | POLLHUP)) supervisor_gone = true;
    char buf[4096];
    while (::read(inotify.get(), buf, sizeof buf) > 0) {
    }
  }
}

}  // namespace podvisor::cli::apply
