// `podvisor port-forward [POD] [LOCAL]:REMOTE...` (kubectl port-forward):
// listens on 127.0.0.1:LOCAL on the host and, for each connection, connects
// to 127.0.0.1:REMOTE inside the pod's network namespace, which reaches a
// container port under every network mode (the pod's own namespace, a CNI
// network, the host's). Each connection is relayed by a child process of
// its own, as kubectl gives each a goroutine; the child enters the pod's
// network namespace, connects, and relays, so the listener never leaves
// the host's. A rootless pod's namespace belongs to podvisor's user
// namespace (S21.1), which the user may join but never leave: only a
// child that is done with the host's namespaces can (S21.11).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/pod_records.h"
#include "cli/user_dirs.h"
#include "common/fd.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct ForwardOptions {
  std::vector<std::string> words;  // [POD] PORTS...
  std::string state_dir = DefaultStateDir();
};

struct Forward {
  uint16_t local = 0;  // 0: any free port
  uint16_t remote = 0;
  Fd listener;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());  // S14.20
  return kExitFailed;
}

std::optional<uint16_t> Port(const std::string& s, bool zero_ok) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  long v = std::stol(s);
  if (v > 65535 || (v == 0 && !zero_ok)) return std::nullopt;
  return static_cast<uint16_t>(v);
}

// "8080", "8080:80", ":80" (a free local port), as kubectl takes them.
std::optional<Forward> ParseSpec(const std::string& spec) {
  auto colon = spec.find(':');
  Forward f;
  if (colon == std::string::npos) {
    auto p = Port(spec, false);
    if (!p) return std::nullopt;
    f.local = f.remote = *p;
    return f;
  }
  auto remote = Port(spec.substr(colon + 1), false);
  auto local = colon == 0 ? std::optional<uint16_t>(0) : Port(spec.substr(0, colon), true);
  if (!remote || !local) return std::nullopt;
  f.local = *local;
  f.remote = *remote;
  return f;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// The pod's network namespace, and the user namespace that owns it when
// that is not this process's (a rootless pod's, or a hostUsers: false
// pod's): joined first when entering the network namespace alone is
// refused.
struct PodNetns {
  Fd net;   // empty: the host's network
  Fd user;  // empty: ours
};

// In the relaying child: a TCP connection to 127.0.0.1:port in the pod's
// network namespace. The child never comes back to the host's namespaces.
Result<Fd> ConnectInside(const PodNetns& ns, uint16_t port) {
  if (ns.net && ::setns(ns.net.get(), CLONE_NEWNET) != 0) {
    // EPERM: no CAP_SYS_ADMIN over the namespace's owner; as its owner's
    // uid this process may join that user namespace, and has it there.
    if (errno != EPERM || !ns.user || ::setns(ns.user.get(), CLONE_NEWUSER) != 0 ||
        ::setns(ns.net.get(), CLONE_NEWNET) != 0) {
      return Error::FromErrno("entering the pod's network namespace");
    }
  }
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return Error::FromErrno("socket");
  sockaddr_in a = Loopback(port);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return Error::FromErrno("connecting to port " + std::to_string(port) + " in the pod");
  }
  return s;
}

// Copies both ways until both directions ended; runs in its own process.
[[noreturn]] void Relay(int a, int b) {
  char buf[65536];
  bool a_open = true, b_open = true;
  while (a_open || b_open) {
    pollfd p[2] = {{a_open ? a : -1, POLLIN, 0}, {b_open ? b : -1, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int from = i == 0 ? a : b, to = i == 0 ? b : a;
      ssize_t n = ::read(from, buf, sizeof buf);
      if (n <= 0) {
        ::shutdown(to, SHUT_WR);  // pass the end on, keep reading the other way
        (i == 0 ? a_open : b_open) = false;
        continue;
      }
      for (ssize_t done = 0; done < n;) {
        ssize_t w = ::write(to, buf + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) std::_Exit(0);
        done += w;
      }
    }
  }
  std::_Exit(0);
}

// Binds each forward's listener on the loopback (port 0: one the kernel
// picks, printed as kubectl does); an error message, or "".
std::string Listen(std::vector<Forward>& forwards) {
  for (Forward& f : forwards) {
    f.listener.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(f.listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = Loopback(f.local);
    if (!f.listener || ::bind(f.listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(f.listener.get(), 128) != 0) {
      return "listening on 127.0.0.1:" + std::to_string(f.local) + ": " + std::strerror(errno);
    }
    socklen_t len = sizeof a;
    ::getsockname(f.listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
    f.local = ntohs(a.sin_port);
    std::printf("Forwarding from 127.0.0.1:%u -> %u\n", f.local, f.remote);
  }
  std::fflush(stdout);
  return "";
}

// One connection to a forward: connected and relayed by a child of its own.
void Accept(const Forward& forward, const PodNetns& ns) {
  Fd client(::accept4(forward.listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!client) return;
  std::printf("Handling connection for %u\n", forward.local);
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto upstream = ConnectInside(ns, forward.remote);
    if (!upstream) {
      // As kubectl: the error is reported, the client's connection closed.
      std::fprintf(stderr, "podvisor: %s\n", upstream.error().message().c_str());
      std::_Exit(0);
    }
    Relay(client.get(), upstream->get());
  }
  if (pid < 0) std::fprintf(stderr, "podvisor: fork: %s\n", std::strerror(errno));
}

// Opens the namespace the supervisor names ("": the host's) and its owner
// when that is another user namespace than this process's.
Result<PodNetns> OpenPodNetns(const std::string& path) {
  PodNetns ns;
  if (path.empty()) return ns;
  ns.net.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.net) return Error::FromErrno("opening " + path);
  Fd owner(::ioctl(ns.net.get(), NS_GET_USERNS));
  struct stat theirs {
  }, ours{};
  if (owner && ::fstat(owner.get(), &theirs) == 0 && ::stat("/proc/self/ns/user", &ours) == 0 &&
      (theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino)) {
    ns.user = std::move(owner);
  }
  return ns;
}

int PortForward(const ForwardOptions& o) {
  // The last words that look like port specs are ports; a first word that
  // is not one is the pod.
  std::string pod_name;
  std::vector<std::string> specs = o.words;
  if (!specs.empty() && !ParseSpec(specs[0])) {
    pod_name = specs[0];
    specs.erase(specs.begin());
  }
  if (specs.empty()) return Fail("port-forward needs at least one [LOCAL]:REMOTE port");
  std::vector<Forward> forwards;
  for (const auto& s : specs) {
    auto f = ParseSpec(s);
    if (!f) return Fail("invalid port \"" + s + "\": use PORT, LOCAL:REMOTE or :REMOTE");
    forwards.push_back(std::move(*f));
  }
  auto pod = SelectPod(o.state_dir, pod_name);
  if (!pod) return Fail(pod.error().message());
  auto reply = AskSupervisor(o.state_dir, *pod, {{"op", "netns"}});
  if (!reply) return Fail(reply.error().message());
  auto ns = OpenPodNetns(reply->value("path", ""));
  if (!ns) return Fail(ns.error().message());

  if (std::string failed = Listen(forwards); !failed.empty()) return Fail(failed);

  // Relays reap themselves; SIGINT/SIGTERM end the forwarding through a
  // signalfd, and the pod's end through its control socket's removal.
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sa.sa_flags = SA_NOCLDWAIT;
  ::sigaction(SIGCHLD, &sa, nullptr);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &stop, nullptr);
  Fd sfd(::signalfd(-1, &stop, SFD_CLOEXEC));
  Fd watch(::inotify_init1(IN_CLOEXEC));
  const fs::path dir = fs::path(o.state_dir) / *pod;
  ::inotify_add_watch(watch.get(), dir.c_str(), IN_DELETE);

  while (true) {
    std::vector<pollfd> p;
    p.reserve(forwards.size() + 2);
    for (const Forward& f : forwards) p.push_back({f.listener.get(), POLLIN, 0});
    p.push_back({sfd.get(), POLLIN, 0});
    p.push_back({watch.get(), POLLIN, 0});
    if (::poll(p.data(), p.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return Fail("poll: " + std::string(std::strerror(errno)));
    }
    if (p[forwards.size()].revents & POLLIN) return kExitSucceeded;
    if (p[forwards.size() + 1].revents & POLLIN) {
      char buf[4096];
      (void)::read(watch.get(), buf, sizeof buf);
      if (!SupervisorAnswers(dir / PodDir::kControlSocket)) {
        std::fprintf(stderr, "podvisor: pod %s ended\n", pod->c_str());
        return kExitSucceeded;
      }
    }
    for (std::size_t i = 0; i < forwards.size(); ++i) {
      if (p[i].revents & POLLIN) Accept(forwards[i], *ns);
    }
  }
}

}  // namespace

void AddPortForwardCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ForwardOptions>();
  CLI::App* cmd = app.add_subcommand(
      "port-forward",
      "Forward local ports to ports in the pod's network namespace (kubectl port-forward)");
  cmd->add_option("ARGS", o->words, "[POD] [LOCAL]:REMOTE...")->required();
  cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = PortForward(*o); });
}

}  // namespace podvisor::cli
