// The holder's side: `podvisor sandbox-init`, the process that holds the
// pod's namespaces and, with a keeper socket, the descriptors its
// supervisor handed over (keeper_wire.h).
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "process/fd_limit.h"
#include "supervisor/sandbox/keeper_wire.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor::sandbox {
namespace {

// A fetch answers one message per key; a supervisor that stops reading
// costs the holder at most this per message before it drops the
// connection, and the loop goes on.
constexpr int kSendTimeoutMs = 1000;

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

// Points 0-2 at /dev/null. The holder may outlive its supervisor: holding
// the supervisor's stderr would keep whoever reads that pipe (a shim, a
// test, a journal) from seeing its end.
void StdioToDevNull() {
  int null = ::open("/dev/null", O_RDWR);
  if (null < 0) return;
  for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
  if (null > 2) ::close(null);
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

// Binds and listens on the keeper socket, mode 0600. A socket left at the
// path by an earlier holder is replaced (the pod lock lets one supervisor,
// and so one holder, use a pod's state directory at a time); anything
// other than a socket there is an error, never removed.
Result<Fd> ListenKeeper(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return Error("keeper socket path too long: " + path, ENAMETOOLONG);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return Error::FromErrno("socket");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Error(path + " exists and is not a socket", EEXIST);
    ::unlink(path.c_str());
  }
  mode_t old_umask = ::umask(0177);
  int rc = ::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old_umask);
  if (rc != 0) return Error::FromErrno("bind " + path);
  if (::listen(sock.get(), 4) != 0) return Error::FromErrno("listen " + path);
  return sock;
}

// The descriptors the holder keeps and the one connection it serves.
class Keeper {
 public:
  explicit Keeper(Fd listener) : listener_(std::move(listener)) {}

  int listener() const { return listener_.get(); }
  int connection() const { return connection_.get(); }

  // The newest connection wins: a supervisor that re-executed or crashed
  // left its old one behind, and the one that just connected is the one
  // that will ask.
  void Accept() {
    Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) return;
    timeval tv{kSendTimeoutMs / 1000, (kSendTimeoutMs % 1000) * 1000};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    connection_ = std::move(conn);
  }

  // One message from the connection; the connection ends on its EOF or
  // on any failure to answer.
  void ServeOne() {
    auto message = keeper::ReceiveMessage(connection_.get());
    if (!message) {
      if (message.error().code() != EAGAIN) connection_.Reset();
      return;
    }
    std::optional<std::string> reply = Answer(*message);
    // What came attached and was not kept is closed before the answer, so
    // that an answer means the holder holds exactly what it said.
    message->fds.clear();
    if (!reply || !Reply(*reply)) connection_.Reset();
  }

  void Hangup() { connection_.Reset(); }

 private:
  // The answer's text; nullopt when a fetch's messages could not be sent.
  std::optional<std::string> Answer(keeper::Message& message) {
    auto [verb, key] = keeper::SplitVerb(message.text);
    if (message.truncated) return "error message too long or too many descriptors";
    if (verb == "keep") {
      if (!keeper::ValidKey(key)) return "error bad key";
      if (message.fds.empty()) return "error nothing to keep";
      kept_[std::string(key)] = std::move(message.fds);  // closes the key's earlier ones
      Entrusted();
      return "ok";
    }
    if (!message.fds.empty()) return "error descriptors only come with keep";
    if (verb == "drop") {
      if (!keeper::ValidKey(key)) return "error bad key";
      kept_.erase(std::string(key));
      return "ok";
    }
    if (verb == "fetch" && key.empty()) {
      std::vector<int> fds;
      for (const auto& [name, kept] : kept_) {
        fds.clear();
        for (const Fd& fd : kept) fds.push_back(fd.get());
        if (!keeper::SendMessage(connection_.get(), "kept " + name, fds)) return std::nullopt;
      }
      return "end";
    }
    return "error unknown request";
  }

  bool Reply(std::string_view text) { return keeper::SendMessage(connection_.get(), text).ok(); }

  // The supervisor's descriptors are here now, and the pod with them: from
  // the first one on the holder no longer dies with the supervisor that
  // started it. Until then it does (the death signal set before exec,
  // sandbox.cc), so a supervisor killed before it could record the holder
  // leaves nothing behind that nobody knows of.
  void Entrusted() {
    if (entrusted_) return;
    ::prctl(PR_SET_PDEATHSIG, 0);
    entrusted_ = true;
  }

  Fd listener_;
  Fd connection_;
  std::map<std::string, std::vector<Fd>> kept_;
  bool entrusted_ = false;
};

// Holds the namespaces (and serves the keeper) until SIGTERM or the pid
// namespace reaper's death (its namespace would be unusable).
int HolderLoop(std::optional<Keeper>& keeper, pid_t reaper) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  Fd signals(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) return 1;
  // A reaper that died before SIGCHLD was blocked left no signal to read.
  if (reaper && ::waitpid(reaper, nullptr, WNOHANG) == reaper) return 1;
  for (;;) {
    pollfd fds[3] = {{signals.get(), POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
    if (keeper) {
      fds[1].fd = keeper->listener();
      fds[2].fd = keeper->connection();  // -1 is skipped by poll
    }
    if (::poll(fds, 3, -1) < 0) continue;  // EINTR
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(signals.get(), &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGTERM) return 0;
      }
      if (reaper && ::waitpid(reaper, nullptr, WNOHANG) == reaper) return 1;
    }
    if (!keeper) continue;
    // The older connection's message first, then the newer connection.
    if (fds[2].revents & POLLIN) {
      keeper->ServeOne();
    } else if (fds[2].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      keeper->Hangup();
    }
    if (fds[1].revents & POLLIN) keeper->Accept();
  }
}

// S20.5: the pod's user namespace and, owned by it, the namespaces the
// spawner would otherwise have made (network with --loopback, UTS with a
// hostname, IPC always: the pod may use none of the host's). One unshare
// makes the user namespace first and the others inside it. The holder
// keeps its host uid 0, which is no id in there (the supervisor maps
// container id 0 to the pod's block after the ready line), and with it
// every capability in the new namespace, for sethostname and the
// loopback below. The death signal survives (no uid changes), but is set
// again all the same, with the parent check of sandbox.cc.
bool UnshareInUserNamespace(bool network, bool uts) {
  const pid_t supervisor = ::getppid();
  const int flags =
      CLONE_NEWUSER | CLONE_NEWIPC | (network ? CLONE_NEWNET : 0) | (uts ? CLONE_NEWUTS : 0);
  if (::unshare(flags) != 0) {
    std::fprintf(stderr, "sandbox-init: unshare of the pod's user namespace: %s\n",
                 strerror(errno));
    return false;
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != supervisor) return false;
  return true;
}

}  // namespace

int SandboxInitMain(const std::string& hostname, bool loopback, bool new_pid,
                    const std::string& keeper_socket, bool userns) {
  // The death signal was set between fork and exec (sandbox.cc), where no
  // supervisor death can slip in unnoticed; it survives the exec.
  //
  // Terminal signals are the supervisor's to handle: a Ctrl-C stops the
  // pod gracefully, and the holder must outlive that stop, not end it.
  // (It runs in a session of its own for the same reason.)
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  // A pod of many containers hands over three descriptors for each.
  (void)process::RaiseFdLimit();
  // With a user namespace the keeper socket is bound first, as host root
  // (sandbox.cc), and the namespaces are made after it.
  std::optional<Keeper> keeper;
  auto listen_keeper = [&]() -> bool {
    if (keeper_socket.empty() || keeper) return true;
    auto listener = ListenKeeper(keeper_socket);
    if (!listener) {
      std::fprintf(stderr, "sandbox-init: %s\n", listener.error().message().c_str());
      return false;
    }
    keeper.emplace(std::move(*listener));
    return true;
  };
  if (userns && (!listen_keeper() || !UnshareInUserNamespace(loopback, !hostname.empty()))) {
    return 1;
  }
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
    // would then live on holding the pod's pid namespace: the holder's end
    // of this pipe closes with it, which the reaper checks once its
    // PDEATHSIG is set. The reaper is forked before the keeper socket
    // exists and closes every other descriptor, so it holds neither the
    // socket nor anything kept.
    int holder_alive[2];
    if (::pipe2(holder_alive, O_CLOEXEC) != 0) return 1;
    reaper = ::fork();
    if (reaper < 0) return 1;
    if (reaper == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(holder_alive[1]);
      pollfd p{holder_alive[0], POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) _exit(0);  // POLLHUP: the holder is gone
      // The ready pipe is the holder's to close; keeping it would hide EOF.
      StdioToDevNull();
      ::close_range(3, UINT_MAX, 0);
      PidNamespaceReaper();
    }
    ::close(holder_alive[0]);  // the write end stays open as long as we live
  }
  if (!listen_keeper()) return 1;
  // The one line the supervisor waits for; then stdout goes to /dev/null,
  // which closes the pipe, so it sees EOF. The keeper socket listens
  // already, so the supervisor may connect as soon as it has read the
  // line.
  std::printf("ready %d\n", static_cast<int>(reaper));
  std::fflush(stdout);
  StdioToDevNull();
  return HolderLoop(keeper, reaper);
}

}  // namespace podvisor::supervisor::sandbox
