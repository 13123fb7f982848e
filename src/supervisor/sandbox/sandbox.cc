// The supervisor's side of the sandbox: starting the holder, finding it
// again, ending it. The holder's own code is in holder.cc, the keeper's
// client in keeper_client.cc.
#include "supervisor/sandbox/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "common/fd.h"
#include "common/file_io.h"
#include "common/pod_id_blocks.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "process/spawn.h"

namespace podvisor::supervisor::sandbox {

constexpr std::string_view kRootDir = "/";
namespace {

constexpr int kReadyTimeoutMs = 10'000;
// How long Destroy waits for a holder it cannot reap: SIGKILL takes
// effect at once unless the process is stuck in the kernel, and a stop
// must not hang on that.
constexpr int kUnreapedKillWaitMs = 2'000;

// Whether /proc/<pid>/cmdline has `word` as one of its arguments.
bool CommandLineHas(pid_t pid, std::string_view word) {
  auto cmdline = ReadFileBounded("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline) return false;
  std::string_view rest = *cmdline;
  while (!rest.empty()) {
    auto end = rest.find('\0');
    if (rest.substr(0, end) == word) return true;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return false;
}

// Polls `pidfd` until it is readable (the process has exited), at most
// `timeout_ms`; false if it did not.
bool WaitForExit(int pidfd, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{pidfd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

// S20.5: the pod's mappings, written by the supervisor (root in the
// parent user namespace may map any host ids; the holder may not). Only
// container id 0 up: the holder keeps host uid 0, unmapped in there, and
// with it every capability in the namespace it made. setgroups stays
// "allow": the runtime sets the containers' supplementary groups.
Status WriteIdMaps(pid_t holder, const UserNamespaceIds& ids) {
  const std::string dir = "/proc/" + std::to_string(holder) + "/";
  for (const auto& [file, host_id] :
       {std::pair{"uid_map", ids.host_uid}, std::pair{"gid_map", ids.host_gid}}) {
    const std::string line = "0 " + std::to_string(host_id) + " " + std::to_string(ids.size) + "\n";
    Fd fd(::open((dir + file).c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return Error::FromErrno("opening " + dir + file);
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      return Error::FromErrno("writing \"" + line.substr(0, line.size() - 1) + "\" to " + dir +
                              file);
    }
  }
  return Ok();
}

// Both maps as one line "0 <start> <size>" of the same size; anything
// else is not a pod's block.
std::optional<UserNamespaceIds> RootMapping(const std::string& uid_map,
                                            const std::string& gid_map) {
  auto uids = ParseRootIdMap(uid_map);
  auto gids = ParseRootIdMap(gid_map);
  if (!uids || !gids || uids->second != gids->second) return std::nullopt;
  return UserNamespaceIds{uids->first, gids->first, uids->second};
}

}  // namespace

Result<std::optional<UserNamespaceIds>> ReadHolderIds(pid_t holder_pid) {
  const std::string dir = "/proc/" + std::to_string(holder_pid) + "/";
  struct stat self_ns {
  }, holder_ns{};
  if (::stat("/proc/self/ns/user", &self_ns) != 0) return Error::FromErrno("/proc/self/ns/user");
  if (::stat((dir + "ns/user").c_str(), &holder_ns) != 0) {
    return Error::FromErrno(dir + "ns/user");
  }
  if (self_ns.st_ino == holder_ns.st_ino && self_ns.st_dev == holder_ns.st_dev) {
    return std::optional<UserNamespaceIds>();
  }
  auto uid_map = ReadFileBounded(dir + "uid_map");
  if (!uid_map) return uid_map.take_error();
  auto gid_map = ReadFileBounded(dir + "gid_map");
  if (!gid_map) return gid_map.take_error();
  auto ids = RootMapping(*uid_map, *gid_map);
  if (!ids) {
    return Error(
        "the holder's user namespace maps \"" + *uid_map + "\", not one block from container id 0",
        EINVAL);
  }
  return std::optional<UserNamespaceIds>(*ids);
}

Result<Sandbox> Sandbox::Create(const SandboxOptions& options) {
  auto pending = Start(options);
  if (!pending) return pending.take_error();
  return pending->WaitReady();
}

Result<PendingSandbox> Sandbox::Start(const SandboxOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Error::FromErrno("pipe2");
  Fd read_end(fds[0]), write_end(fds[1]);

  const bool userns = options.user_namespace.has_value();
  if (userns && (!options.new_network || !options.new_ipc || !options.new_uts)) {
    return Error("a pod in its own user namespace needs its own network, IPC and UTS namespaces",
                 EINVAL);
  }
  // S20.5: with a user namespace the holder makes every namespace itself,
  // after it has bound its keeper socket as host root (in the new user
  // namespace its host uid 0 is no id, and it could create no file).
  int flags = userns
                  ? 0
                  : (options.new_network ? CLONE_NEWNET : 0) |
                        (options.new_ipc ? CLONE_NEWIPC : 0) | (options.new_uts ? CLONE_NEWUTS : 0);
  process::SpawnOptions spawn;
  spawn.argv = {options.podvisor_exe.string(), "sandbox-init"};
  if (options.new_uts) spawn.argv.insert(spawn.argv.end(), {"--hostname", options.hostname});
  if (options.new_network) spawn.argv.emplace_back("--loopback");
  if (options.new_pid) spawn.argv.emplace_back("--pid");
  if (!options.keeper_socket.empty()) {
    spawn.argv.insert(spawn.argv.end(), {"--keeper", options.keeper_socket.string()});
  }
  if (userns) spawn.argv.emplace_back("--userns");
  if (options.inherited_lock_fd >= 3) spawn.keep_fds.push_back(options.inherited_lock_fd);
  spawn.stdout_fd = write_end.get();
  spawn.stderr_fd = process::SpawnOptions::kInherit;
  spawn.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  // Copy-assigned from a std::string: assigning the literal trips GCC 12's
  // false -Wrestrict positive (libstdc++ PR 105329) at -O2.
  spawn.cwd = std::string(kRootDir);
  // A session of its own: the holder may outlive the supervisor, and the
  // terminal's signals (a Ctrl-C to the foreground group, a SIGHUP when
  // the session ends) are the supervisor's to act on, not the holder's.
  spawn.new_session = true;
  // Async-signal-safe: three system calls between fork and exec. The
  // holder dies with its supervisor until it is entrusted with a
  // descriptor (holder.cc drops the death signal then): a supervisor
  // killed before it could record the holder must not leave one behind
  // that nobody knows of. A supervisor SIGKILLed between the fork and the
  // prctl has reparented the holder already, and no death signal will
  // come, hence the parent check after it.
  const pid_t supervisor = ::getpid();
  spawn.pre_exec = [flags, supervisor]() -> int {
    if (flags && ::unshare(flags) != 0) return errno;
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
    if (::getppid() != supervisor) ::_exit(1);
    return 0;
  };
  auto holder = process::Spawn(spawn);
  if (!holder) return holder.take_error().Wrap("starting the pod sandbox");
  write_end.Reset();
  return PendingSandbox(options, std::move(holder).value(), std::move(read_end));
}

Result<Sandbox> PendingSandbox::WaitReady() {
  const SandboxOptions& options = options_;
  Fd read_end = std::move(ready_);
  std::string line;
  char buf[64];
  for (;;) {
    pollfd p{read_end.get(), POLLIN, 0};
    int r = ::poll(&p, 1, kReadyTimeoutMs);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Error("the pod sandbox did not report ready in 10 s", ETIMEDOUT);
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<std::size_t>(n));
    if (line.find('\n') != std::string::npos) break;  // the whole ready line
  }
  int reaper = 0;
  if (std::sscanf(line.c_str(), "ready %d", &reaper) != 1) {
    return Error("the pod sandbox failed to start (see its message above)");
  }
  if (options.new_pid && reaper <= 0) return Error("the pod sandbox has no pid namespace reaper");
  if (options.user_namespace) {
    if (auto s = WriteIdMaps(holder_.pid(), *options.user_namespace); !s) {
      return s.error().Wrap("the pod's user namespace");
    }
  }
  // Our child: nobody else can reap it, so its pid names it here.
  auto start_time = process::ProcessStartTime(holder_.pid());
  if (!start_time) return start_time.take_error().Wrap("the pod sandbox's holder");
  Sandbox sandbox(std::move(options_), std::move(holder_), /*holder_is_child=*/true, *start_time,
                  reaper);
  if (!sandbox.options_.keeper_socket.empty()) {
    if (auto s = sandbox.ConnectKeeper(); !s) return s.error();
  }
  return sandbox;
}

Result<Fd> PinHolder(pid_t holder_pid, uint64_t holder_start_time) {
  if (holder_pid <= 0) return Error("not a process id", EINVAL);
  auto pidfd = process::PidfdOpen(holder_pid);
  if (!pidfd) return pidfd.take_error();
  // The pidfd pins whatever process has the pid now; a start time equal to
  // the recorded one proves it is the holder, which had the pid all along.
  auto start_time = process::ProcessStartTime(holder_pid);
  if (!start_time) return start_time.take_error();
  if (*start_time != holder_start_time) {
    return Error("it started at " + std::to_string(*start_time) + ", not at the recorded " +
                     std::to_string(holder_start_time) + " (the holder is gone and its pid reused)",
                 ESRCH);
  }
  if (!CommandLineHas(holder_pid, "sandbox-init")) {
    return Error("its command line has no sandbox-init", ESRCH);
  }
  return pidfd;
}

Result<Sandbox> Sandbox::Reattach(const SandboxOptions& options, pid_t holder_pid,
                                  uint64_t holder_start_time, pid_t pid_ns_init) {
  std::string what =
      "re-attaching to the pod sandbox's holder (pid " + std::to_string(holder_pid) + ")";
  auto pidfd = PinHolder(holder_pid, holder_start_time);
  if (!pidfd) return pidfd.error().Wrap(what);
  if (options.new_pid) {
    if (pid_ns_init <= 0 || process::ParentOf(pid_ns_init) != holder_pid) {
      return Error(what + ": pid " + std::to_string(pid_ns_init) +
                       " is not its pid namespace's reaper (not its child)",
                   ESRCH);
    }
  }
  // After a re-exec this process is still the holder's parent and must
  // reap it; after a crash it is not, and waiting for it would be ECHILD.
  bool is_child = process::ParentOf(holder_pid) == ::getpid();
  Sandbox sandbox(options, process::ChildProcess(holder_pid, std::move(*pidfd)), is_child,
                  holder_start_time, options.new_pid ? pid_ns_init : 0);
  if (!options.keeper_socket.empty()) {
    if (auto s = sandbox.ConnectKeeper(); !s) {
      Error error = s.error().Wrap(what);
      // Not ours to kill: the caller decides what a holder it cannot
      // reach is worth.
      (void)sandbox.holder_.Release();
      return error;
    }
  }
  return sandbox;
}

std::filesystem::path Sandbox::NsPath(pid_t pid, const char* ns) const {
  return std::filesystem::path("/proc") / std::to_string(pid) / "ns" / ns;
}

std::optional<std::filesystem::path> Sandbox::network_ns() const {
  if (!holder_.valid() || !options_.new_network) return std::nullopt;
  return NsPath(holder_.pid(), "net");
}
std::optional<std::filesystem::path> Sandbox::ipc_ns() const {
  if (!holder_.valid() || !options_.new_ipc) return std::nullopt;
  return NsPath(holder_.pid(), "ipc");
}
std::optional<std::filesystem::path> Sandbox::uts_ns() const {
  if (!holder_.valid() || !options_.new_uts) return std::nullopt;
  return NsPath(holder_.pid(), "uts");
}
std::optional<std::filesystem::path> Sandbox::user_ns() const {
  if (!holder_.valid() || !options_.user_namespace) return std::nullopt;
  return NsPath(holder_.pid(), "user");
}
std::optional<std::filesystem::path> Sandbox::pid_ns() const {
  if (!holder_.valid() || !options_.new_pid) return std::nullopt;
  return NsPath(pid_ns_init_, "pid");
}

Sandbox& Sandbox::operator=(Sandbox&& other) noexcept {
  if (this != &other) {
    Destroy();
    options_ = std::move(other.options_);
    holder_ = std::move(other.holder_);
    holder_is_child_ = other.holder_is_child_;
    holder_start_time_ = std::exchange(other.holder_start_time_, 0);
    pid_ns_init_ = std::exchange(other.pid_ns_init_, 0);
    keeper_ = std::move(other.keeper_);
  }
  return *this;
}

void Sandbox::Destroy() {
  keeper_.Reset();
  if (!holder_.valid()) return;
  // The holder's death takes the reaper along (PDEATHSIG), and with the
  // reaper every process still in the pod's pid namespace; the kept
  // descriptors close with it.
  if (holder_is_child_) {
    (void)holder_.KillAndReap();  // empties the handle
  } else {
    // Its parent (PID 1 or a subreaper) reaps it; a pidfd becomes readable
    // when the process exits, reaped or not.
    Fd pidfd = holder_.Release();
    (void)process::PidfdSendSignal(pidfd.get(), SIGKILL);
    (void)WaitForExit(pidfd.get(), kUnreapedKillWaitMs);
  }
  // The holder does not remove its socket (it is SIGKILLed); a later
  // holder would replace it, but a stopped pod should leave nothing.
  if (!options_.keeper_socket.empty()) ::unlink(options_.keeper_socket.c_str());
  holder_start_time_ = 0;
  pid_ns_init_ = 0;
}

}  // namespace podvisor::supervisor::sandbox
