#include "supervisor/sandbox/sandbox.h"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/fd.h"
#include "process/spawn.h"

namespace podvisor::supervisor::sandbox {

constexpr std::string_view kRootDir = "/";
namespace {

constexpr int kReadyTimeoutMs = 10'000;

// Brings the loopback interface of the current network namespace up.
Status LoopbackUp() {
  Fd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) return Error::FromErrno("socket");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &ifr) != 0) return Error::FromErrno("SIOCGIFFLAGS lo");
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &ifr) != 0) return Error::FromErrno("SIOCSIFFLAGS lo");
  return Ok();
}

// PID 1 of the pod's pid namespace: reaps every process that ends there,
// woken by SIGCHLD (no polling), until the holder kills it.
[[noreturn]] void PidNamespaceReaper() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    siginfo_t info;
    ::sigwaitinfo(&set, &info);
  }
}

}  // namespace

int SandboxInitMain(const std::string& hostname, bool loopback, bool new_pid) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!hostname.empty() && ::sethostname(hostname.data(), hostname.size()) != 0) {
    std::fprintf(stderr, "sandbox-init: sethostname %s: %s\n", hostname.c_str(), strerror(errno));
    return 1;
  }
  if (loopback) {
    if (auto s = LoopbackUp(); !s) {
      std::fprintf(stderr, "sandbox-init: %s\n", s.error().message().c_str());
      return 1;
    }
  }
  pid_t reaper = 0;
  if (new_pid) {
    if (::unshare(CLONE_NEWPID) != 0) {
      std::fprintf(stderr, "sandbox-init: unshare(CLONE_NEWPID): %s\n", strerror(errno));
      return 1;
    }
    // The reaper dies with the holder (PDEATHSIG). The holder may die
    // before the reaper has asked for that, and the reaper, reparented,
    // would then live on holding the pod's pid namespace (and our stderr):
    // the holder's end of this pipe closes with it, which the reaper
    // checks once its PDEATHSIG is set.
    int holder_alive[2];
    if (::pipe2(holder_alive, O_CLOEXEC) != 0) return 1;
    reaper = ::fork();
    if (reaper < 0) return 1;
    if (reaper == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(holder_alive[1]);
      pollfd p{holder_alive[0], POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) _exit(0);  // POLLHUP: the holder is gone
      ::close(holder_alive[0]);
      // The ready pipe is the holder's to close; keeping it would hide EOF.
      ::close(STDOUT_FILENO);
      PidNamespaceReaper();
    }
    ::close(holder_alive[0]);  // the write end stays open as long as we live
  }
  // The one line the supervisor waits for; then stdout is closed so it
  // sees EOF.
  std::printf("ready %d\n", static_cast<int>(reaper));
  std::fflush(stdout);
  ::close(STDOUT_FILENO);
  // Hold the namespaces until killed; exit if the pid-namespace reaper dies
  // (its namespace would be unusable).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  for (;;) {
    siginfo_t info;
    if (::sigwaitinfo(&set, &info) < 0) continue;
    if (info.si_signo == SIGTERM) return 0;
    if (reaper && ::waitpid(reaper, nullptr, WNOHANG) == reaper) return 1;
  }
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

  int flags = (options.new_network ? CLONE_NEWNET : 0) | (options.new_ipc ? CLONE_NEWIPC : 0) |
              (options.new_uts ? CLONE_NEWUTS : 0);
  process::SpawnOptions spawn;
  spawn.argv = {options.podvisor_exe.string(), "sandbox-init"};
  if (options.new_uts) spawn.argv.insert(spawn.argv.end(), {"--hostname", options.hostname});
  if (options.new_network) spawn.argv.emplace_back("--loopback");
  if (options.new_pid) spawn.argv.emplace_back("--pid");
  spawn.stdout_fd = write_end.get();
  spawn.stderr_fd = process::SpawnOptions::kInherit;
  spawn.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  // Copy-assigned from a std::string: assigning the literal trips GCC 12's
  // false -Wrestrict positive (libstdc++ PR 105329) at -O2.
  spawn.cwd = std::string(kRootDir);
  // Async-signal-safe: three system calls between fork and exec. A
  // supervisor SIGKILLed between the fork and the prctl has reparented the
  // holder already, and no death signal will come: it must not live on
  // holding the pod's namespaces.
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
  return Sandbox(std::move(options_), std::move(holder_), reaper);
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
std::optional<std::filesystem::path> Sandbox::pid_ns() const {
  if (!holder_.valid() || !options_.new_pid) return std::nullopt;
  return NsPath(pid_ns_init_, "pid");
}

void Sandbox::Destroy() {
  if (!holder_.valid()) return;
  // The holder's death takes the reaper along (PDEATHSIG), and with the
  // reaper every process still in the pod's pid namespace.
  (void)holder_.KillAndReap();  // empties the handle
}

}  // namespace podvisor::supervisor::sandbox
