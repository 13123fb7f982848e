// `podvisor port-forward [POD] [LOCAL]:REMOTE...` (kubectl port-forward):
// listens on 127.0.0.1:LOCAL on the host and, for each connection, connects
// to 127.0.0.1:REMOTE inside the pod's network namespace, which reaches a
// container port under every network mode (the pod's own namespace, a CNI
// network, the host's). The socket is created inside the namespace (setns
// of this thread, then back) and connected from here; each connection is
// then relayed by a child process of its own, as kubectl gives each a
// goroutine. Runs until interrupted or until the pod ends.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
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

// A TCP connection to 127.0.0.1:port in the namespace `netns` (-1: ours).
Result<Fd> ConnectInside(int netns, int own_netns, uint16_t port) {
  if (netns >= 0 && ::setns(netns, CLONE_NEWNET) != 0)
    return Error::FromErrno("entering the pod's network namespace");
  Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int saved = errno;
  if (netns >= 0 && ::setns(own_netns, CLONE_NEWNET) != 0) {
    // Still in the pod's namespace: nothing more this process may do.
    std::perror("podvisor: leaving the pod's network namespace");
    std::_Exit(kExitHost);
  }
  if (!s) return Error("socket", saved);
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

// One connection to a forward: relayed by a child of its own.
void Accept(const Forward& forward, const Fd& netns, const Fd& own_netns) {
  Fd client(::accept4(forward.listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!client) return;
  std::printf("Handling connection for %u\n", forward.local);
  std::fflush(stdout);
  auto upstream =
      ConnectInside(netns ? netns.get() : -1, own_netns ? own_netns.get() : -1, forward.remote);
  if (!upstream) {
    // As kubectl: the error is reported, the client's connection closed.
    std::fprintf(stderr, "podvisor: %s\n", upstream.error().message().c_str());
    return;
  }
  pid_t pid = ::fork();
  if (pid == 0) Relay(client.get(), upstream->get());
  if (pid < 0) std::fprintf(stderr, "podvisor: fork: %s\n", std::strerror(errno));
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
  const std::string netns_path = reply->value("path", "");
  Fd netns, own_netns;
  if (!netns_path.empty()) {
    netns.Reset(::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
    own_netns.Reset(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!netns || !own_netns) return Fail("opening " + netns_path + ": " + std::strerror(errno));
  }

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
      if (p[i].revents & POLLIN) Accept(forwards[i], netns, own_netns);
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
