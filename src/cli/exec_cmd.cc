// `podvisor exec [POD] CONTAINER -- CMD...` (kubectl exec): CMD runs in the
// container's namespaces and cgroup through the runtime's own exec, with
// the container's process settings; the exit code is CMD's.
//
// The supervisor hands back the runtime command line (supervisor/executor/
// control.cc); this process runs it, so CMD's stdio is ours: stdin only
// with -i (else /dev/null, as kubectl's). With -t the runtime gets a
// console socket of ours, sends the pseudo-terminal's master over it
// (SCM_RIGHTS), and we copy between our terminal and the master: raw mode
// on ours, its window size on the master, again on every SIGWINCH.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/pod_records.h"
#include "cli/pod_target.h"
#include "cli/user_dirs.h"
#include "common/fd.h"
#include "common/terminal_text.h"
#include "process/spawn.h"
#include "process/user_namespace_entry.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct ExecOptions {
  std::vector<std::string> words;  // [POD] [CONTAINER]
  std::string container;           // -c
  bool pass_stdin = false, tty = false;
  std::string state_dir = DefaultStateDir();
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());  // S14.20
  return kExitFailed;
}

// The status of the runtime's exec, which is CMD's: runc and crun exit
// with its code (128+N when a signal killed it).
int WaitForExit(Fd pidfd) {
  siginfo_t info{};
  while (::waitid(P_PIDFD, static_cast<id_t>(pidfd.get()), &info, WEXITED) != 0) {
    if (errno != EINTR)
      return Fail("waiting for the runtime: " + std::string(std::strerror(errno)));
  }
  if (info.si_code == CLD_EXITED) return info.si_status;
  return 128 + info.si_status;
}

// Puts our terminal in raw mode for the life of the object, so keys reach
// the container's terminal as typed (Ctrl-C included).
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

void CopyWindowSize(int from, int to) {
  winsize ws{};
  if (::ioctl(from, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) ::ioctl(to, TIOCSWINSZ, &ws);
}

// Accepts the runtime's connection and takes the master it sends; gives
// up when the runtime exits first (a failed exec).
Result<Fd> ReceiveMaster(int listener, int runtime_pidfd) {
  pollfd p[2] = {{listener, POLLIN, 0}, {runtime_pidfd, POLLIN, 0}};
  while (::poll(p, 2, -1) < 0) {
    if (errno != EINTR) return Error::FromErrno("poll");
  }
  if (!(p[0].revents & POLLIN)) return Error("the runtime ended before sending the terminal");
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return Error::FromErrno("accepting the runtime's console connection");
  char name[256];
  iovec iov{name, sizeof name};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC) < 0)
    return Error::FromErrno("receiving the terminal");
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      return Fd(fd);
    }
  }
  return Error("the runtime sent no terminal");
}

bool WriteAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Copies our stdin to the master and the master to our stdout until the
// process ends (EIO on the master once its last holder closed it).
void Proxy(int master, bool forward_stdin, int process_pidfd) {
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  ::sigprocmask(SIG_BLOCK, &winch, nullptr);
  Fd sfd(::signalfd(-1, &winch, SFD_CLOEXEC));
  bool stdin_open = forward_stdin;
  char buf[16384];
  while (true) {
    pollfd p[4] = {{master, POLLIN, 0},
                   {stdin_open ? 0 : -1, POLLIN, 0},
                   {sfd.get(), POLLIN, 0},
                   {process_pidfd, POLLIN, 0}};
    if (::poll(p, 4, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) return;  // EIO: the process and its children are gone
      if (!WriteAll(1, buf, static_cast<std::size_t>(n))) return;
      continue;  // drain output before looking at the runtime's exit
    }
    if (p[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = ::read(0, buf, sizeof buf);
      if (n <= 0) {
        stdin_open = false;
        WriteAll(master, "\x04", 1);  // end of input, as a terminal's ^D
      } else {
        WriteAll(master, buf, static_cast<std::size_t>(n));
      }
    }
    if (p[2].revents & POLLIN) {
      signalfd_siginfo si;
      (void)::read(sfd.get(), &si, sizeof si);
      CopyWindowSize(0, master);
    }
    if (p[3].revents & POLLIN) return;  // the command ended
  }
}

// -t: the runtime sends the terminal, starts CMD detached and exits; CMD,
// reparented to us (a child subreaper), is then waited for directly.
int RunWithTerminal(const ExecOptions& o, int listener, Fd runtime, const fs::path& pid_file) {
  auto master = ReceiveMaster(listener, runtime.get());
  int started = WaitForExit(std::move(runtime));
  if (!master) {
    std::fprintf(stderr, "podvisor: %s\n", master.error().message().c_str());
    return started != 0 ? started : kExitFailed;
  }
  if (started != 0) return started;  // the runtime said why on stderr
  std::ifstream in(pid_file);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0) return Fail("the runtime wrote no pid to " + pid_file.string());
  Fd process(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (::isatty(0)) CopyWindowSize(0, master->get());
  {
    std::optional<RawTerminal> raw;
    if (o.pass_stdin && ::isatty(0)) raw.emplace(0);
    Proxy(master->get(), o.pass_stdin, process ? process.get() : -1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return Fail("waiting for the command: " + std::string(std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int Exec(const ExecOptions& o, const std::vector<std::string>& command) {
  if (command.empty())
    return Fail("exec needs a command after --: exec [POD] [-c CONTAINER] -- CMD...");
  // kubectl's habits (pod_target.h): POD first, -c for the container,
  // else the pod's default one; a lone word that names no pod is still
  // the container of the only pod, as `exec CONTAINER -- CMD` was.
  auto words = ReadTargetWords(o.words, o.container, [&o](const std::string& word) {
    std::error_code ec;
    return CheckNameArgument("pod name", word).ok() &&
           fs::is_directory(fs::path(o.state_dir) / word, ec);
  });
  if (!words) return Fail(words.error().message());
  auto pod = SelectPod(o.state_dir, words->pod);
  if (!pod) return Fail(pod.error().message());
  std::string container = words->container;
  if (container.empty()) {
    auto record = LoadPodRecord(o.state_dir, *pod);
    if (!record) return Fail(record.error().message());
    auto chosen = AnnounceDefaultContainer(*record);
    if (!chosen) return Fail(chosen.error().message());
    container = *chosen;
  }
  if (Status s = CheckNameArgument("container name", container); !s) {
    return Fail(s.error().message());
  }

  // A private directory for the console socket: only the runtime, running
  // as root like us, may connect.
  std::string tmp_template = (fs::temp_directory_path() / "podvisor-exec-XXXXXX").string();
  fs::path socket_dir;
  Fd listener;
  if (o.tty) {
    if (!::mkdtemp(tmp_template.data()))
      return Fail("mkdtemp: " + std::string(std::strerror(errno)));
    socket_dir = tmp_template;
    fs::path sock = socket_dir / "console.sock";
    listener.Reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener.get(), 1) != 0) {
      std::error_code ec;
      fs::remove_all(socket_dir, ec);
      return Fail("console socket " + sock.string() + ": " + std::strerror(errno));
    }
  }
  auto cleanup = [&] {
    std::error_code ec;
    if (!socket_dir.empty()) fs::remove_all(socket_dir, ec);
  };
  nlohmann::json request = {
      {"op", "exec"}, {"container", container}, {"args", command}, {"tty", o.tty}};
  if (o.tty) {
    request["console_socket"] = (socket_dir / "console.sock").string();
    winsize ws{};
    if (::ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
      request["console_size"] = {{"height", ws.ws_row}, {"width", ws.ws_col}};
    }
  }
  auto reply = AskSupervisor(o.state_dir, *pod, request);
  if (!reply) {
    cleanup();
    return Fail(reply.error().message());
  }
  std::vector<std::string> argv = (*reply)["argv"].get<std::vector<std::string>>();
  const fs::path process_file = reply->value("processFile", "");
  // S21.11: a supervisor without root runs the runtime as root of its own
  // user namespace, over its own mounts; its user may join them.
  if (const int pid = reply->value("joinNamespacesOf", 0); pid > 0) {
    if (auto s = process::JoinUserNamespaceOf(pid); !s) {
      cleanup();
      return Fail("the pod's supervisor runs in a user namespace of its own: " +
                  s.error().message());
    }
  }

  // With -t the command outlives the runtime (it detaches): as a child
  // subreaper we inherit it and collect its exit status.
  if (o.tty && ::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    cleanup();
    return Fail("prctl(PR_SET_CHILD_SUBREAPER): " + std::string(std::strerror(errno)));
  }
  process::SpawnOptions spawn;
  spawn.argv = argv;
  spawn.stdin_fd =
      o.pass_stdin && !o.tty ? process::SpawnOptions::kInherit : process::SpawnOptions::kDevNull;
  spawn.stdout_fd = o.tty ? process::SpawnOptions::kDevNull : process::SpawnOptions::kInherit;
  spawn.stderr_fd = process::SpawnOptions::kInherit;
  auto child = process::Spawn(spawn);
  if (!child) {
    cleanup();
    return Fail(child.error().message());
  }
  Fd pidfd = child->Release();
  int code = o.tty ? RunWithTerminal(o, listener.get(), std::move(pidfd), socket_dir / "exec.pid")
                   : WaitForExit(std::move(pidfd));
  std::error_code ec;
  fs::remove(process_file, ec);
  cleanup();
  return code;
}

}  // namespace

void AddExecCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& command) {
  auto o = std::make_shared<ExecOptions>();
  CLI::App* cmd = app.add_subcommand(
      "exec",
      "Run a command in a running container (kubectl exec): exec [POD] [-c CONTAINER] -- CMD...");
  cmd->add_option("ARGS", o->words, "[POD] [CONTAINER]")->expected(0, 2);
  cmd->add_option("-c,--container", o->container,
                  "the container (kubectl exec -c); default: the pod's default container");
  cmd->add_flag("-i,--stdin", o->pass_stdin, "pass stdin to the command");
  cmd->add_flag("-t,--tty", o->tty, "give the command a terminal (the runtime's console socket)");
  cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
  cmd->footer("The command follows --; its exit code is podvisor's.");
  cmd->callback([o, &exit_code, &command] { exit_code = Exec(*o, command); });
}

}  // namespace podvisor::cli
