// The user-mode network's tool as a process (user_mode.h): started and
// waited for through descriptors (its ready pipe, its pidfd), never by
// polling its state; found again by its record; ended through its pidfd.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "common/file_io.h"
#include "network/user_mode.h"
#include "process/pidfd.h"
#include "process/proc_stat.h"
#include "process/spawn.h"

namespace podvisor::network {
namespace {

namespace fs = std::filesystem;

int MillisLeft(MonoTime deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
}

// Polls `fds` for `events` until one is ready or the deadline passes;
// the index of the first ready one, or -1 at the deadline.
int WaitAny(std::vector<pollfd>& fds, MonoTime deadline) {
  for (;;) {
    for (pollfd& p : fds) p.revents = 0;
    int n = ::poll(fds.data(), fds.size(), MillisLeft(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) return static_cast<int>(i);
    }
  }
}

bool WaitExited(int pidfd, int timeout_ms) {
  std::vector<pollfd> p = {{pidfd, POLLIN, 0}};
  return WaitAny(p, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms)) == 0;
}

// The last line the tool wrote to its log, for an error message.
std::string LogTail(const fs::path& pod_dir) {
  auto text = ReadFileBounded(pod_dir / kUserNetworkLog, 64 * 1024);
  if (!text) return "";
  const std::string& s = *text;
  // The last two lines: slirp4netns's reason comes before its "child
  // failed(1)". pasta also says it cannot reach syslog, which is no reason.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string line = s.substr(start, end - start);
    if (!line.empty() && line.find("to syslog") == std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  if (lines.empty()) return "";
  std::string tail = lines.back();
  if (lines.size() > 1) tail = lines[lines.size() - 2] + "; " + tail;
  return ": " + tail;
}

std::string ToolNameIn(pid_t pid) {
  auto cmdline = ReadFileBounded("/proc/" + std::to_string(pid) + "/cmdline", 64 * 1024);
  if (!cmdline) return "";
  return fs::path(cmdline->substr(0, cmdline->find('\0'))).filename().string();
}

// Pins the recorded process: the same pid, start time and tool.
Result<Fd> PinTool(const UserModeRecord& record) {
  auto pidfd = process::PidfdOpen(record.pid);
  if (!pidfd) return pidfd.take_error();
  auto start = process::ProcessStartTime(record.pid);
  if (!start) return start.take_error();
  if (*start != record.start_time) {
    return Error("pid " + std::to_string(record.pid) + " started at " + std::to_string(*start) +
                     ", not at the recorded " + std::to_string(record.start_time) +
                     " (the tool is gone and its pid reused)",
                 ESRCH);
  }
  if (ToolNameIn(record.pid) != UserModeToolName(record.tool)) {
    return Error("pid " + std::to_string(record.pid) + " is not " + UserModeToolName(record.tool),
                 ESRCH);
  }
  return pidfd;
}

// SIGTERM, then SIGKILL; bounded waits on the pidfd; our child is reaped.
void EndTool(int pidfd) {
  if (process::PidfdSendSignal(pidfd, SIGTERM) && !WaitExited(pidfd, 2000)) {
    (void)process::PidfdSendSignal(pidfd, SIGKILL);
    (void)WaitExited(pidfd, 2000);
  }
  siginfo_t info{};
  // Ours when this process started it (slirp4netns; pasta's daemon when
  // this process is a subreaper): not left a zombie. ECHILD otherwise.
  (void)::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info,
                 WEXITED | WNOHANG);
}

void RemoveFiles(const fs::path& pod_dir) {
  std::error_code ec;
  for (const char* name : {kUserNetworkFile, kSlirpApiSocket, kPastaPidFile, kUserNetworkLog}) {
    fs::remove(pod_dir / name, ec);
  }
}

// One request on a fresh connection to slirp4netns's API socket, reached
// through the pod directory's descriptor (the path may be too long for a
// socket address). The reply's "error" is the error.
Status SlirpRequest(const fs::path& pod_dir, const nlohmann::json& request, MonoTime deadline) {
  Fd dir(::open(pod_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return Error::FromErrno("opening " + pod_dir.string());
  std::string path = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + kSlirpApiSocket;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::copy(path.begin(), path.end(), addr.sun_path);
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return Error::FromErrno("creating a socket");
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::FromErrno("connecting to slirp4netns's API socket");
  }
  std::string text = request.dump();
  if (::send(sock.get(), text.data(), text.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(text.size())) {
    return Error::FromErrno("sending to slirp4netns's API socket");
  }
  ::shutdown(sock.get(), SHUT_WR);
  std::string reply;
  char buf[4096];
  for (;;) {
    std::vector<pollfd> p = {{sock.get(), POLLIN, 0}};
    if (WaitAny(p, deadline) != 0) return Error("slirp4netns did not answer in time", ETIMEDOUT);
    ssize_t n = ::recv(sock.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  auto j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error("slirp4netns answered \"" + reply + "\"");
  if (j.contains("error")) {
    std::string desc = j["error"].is_object() ? j["error"].value("desc", reply) : reply;
    return Error(desc, EADDRINUSE);
  }
  return Ok();
}

Result<std::vector<std::string>> ReadPodIps(const fs::path& proc_net) {
  auto trie = ReadFileBounded(proc_net / "fib_trie", 4 * 1024 * 1024);
  if (!trie) return trie.take_error();
  auto six = ReadFileBounded(proc_net / "if_inet6", 1024 * 1024);
  std::vector<std::string> ips = PodIpsFromProcNet(*trie, six ? *six : std::string());
  if (ips.empty()) return Error("the pod's network namespace has no address", EADDRNOTAVAIL);
  return ips;
}

Status WriteRecord(const fs::path& pod_dir, const UserModeRecord& record) {
  return WriteFileAtomic(pod_dir / kUserNetworkFile, record.ToJson().dump() + "\n", 0600,
                         Durability::kUnsynced);
}

struct Started {
  process::ChildProcess child;  // slirp4netns itself, or pasta's first process
  Fd exit_write;
};

Result<Started> StartSlirp(const UserModeOptions& options, Fd& log, MonoTime deadline) {
  int ready[2];
  int exit_pipe[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return Error::FromErrno("creating a pipe");
  Fd ready_read(ready[0]), ready_write(ready[1]);
  if (::pipe2(exit_pipe, O_CLOEXEC) != 0) return Error::FromErrno("creating a pipe");
  Fd exit_read(exit_pipe[0]), exit_write(exit_pipe[1]);
  auto child = process::Spawn({.argv = Slirp4netnsArgv(options, ready_write.get(), exit_read.get()),
                               .cwd = options.pod_dir.string(),
                               .stdout_fd = log.get(),
                               .stderr_fd = log.get(),
                               .keep_fds = {ready_write.get(), exit_read.get()},
                               .new_session = true});
  if (!child) return child.take_error().Wrap("starting slirp4netns");
  ready_write.Reset();
  exit_read.Reset();
  // Ready: it writes "1" once tap0 is up and configured. Its exit (or the
  // ready pipe's end without a byte) first is a failure.
  std::vector<pollfd> fds = {{ready_read.get(), POLLIN, 0}, {child->pidfd(), POLLIN, 0}};
  int which = WaitAny(fds, deadline);
  char byte = 0;
  if (which == 0 && ::read(ready_read.get(), &byte, 1) == 1) {
    return Started{std::move(*child), std::move(exit_write)};
  }
  (void)child->KillAndReap();
  if (which < 0) {
    return Error("slirp4netns did not configure the pod's network in time", ETIMEDOUT);
  }
  return Error("slirp4netns exited" + LogTail(options.pod_dir), ECHILD);
}

Result<Started> StartPasta(const UserModeOptions& options, Fd& log, MonoTime deadline) {
  auto child = process::Spawn({.argv = PastaArgv(options),
                               .cwd = options.pod_dir.string(),
                               .stdout_fd = log.get(),
                               .stderr_fd = log.get(),
                               .new_session = true});
  if (!child) return child.take_error().Wrap("starting pasta");
  // pasta forks to the background once the namespace is configured and
  // the forwards are bound; its first process's exit is the ready signal.
  std::vector<pollfd> fds = {{child->pidfd(), POLLIN, 0}};
  bool exited = WaitAny(fds, deadline) == 0;
  auto exit = child->KillAndReap();
  if (!exited) return Error("pasta did not configure the pod's network in time", ETIMEDOUT);
  if (!exit || !exit->success()) {
    return Error("pasta failed" + LogTail(options.pod_dir), ECHILD);
  }
  return Started{};
}

}  // namespace

Result<UserModeNetwork> UserModeNetwork::Start(const UserModeOptions& options,
                                               const fs::path& proc_net) {
  if (auto refused = CheckUserModePorts(options.tool, options.port_mappings)) {
    return Error(*refused, EINVAL);
  }
  const std::string tool = UserModeToolName(options.tool);
  const MonoTime deadline = std::chrono::steady_clock::now() + options.timeout;
  RemoveFiles(options.pod_dir);
  Fd log(::open((options.pod_dir / kUserNetworkLog).c_str(),
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) return Error::FromErrno("creating " + (options.pod_dir / kUserNetworkLog).string());

  UserModeRecord record;
  record.tool = options.tool;
  record.netns = options.netns.string();
  record.port_mappings = options.port_mappings;
  Fd pidfd;
  Fd exit_write;
  // Nothing of a start that failed stays; its last words are in the error.
  auto failed = [&options](Error error) -> Result<UserModeNetwork> {
    RemoveFiles(options.pod_dir);
    return error;
  };
  if (options.tool == UserModeTool::kSlirp4netns) {
    auto started = StartSlirp(options, log, deadline);
    if (!started) return failed(started.take_error());
    record.pid = started->child.pid();
    pidfd = started->child.Release();
    exit_write = std::move(started->exit_write);
    record.dns = kSlirpDns;
  } else {
    auto started = StartPasta(options, log, deadline);
    if (!started) return failed(started.take_error());
    auto text = ReadFileBounded(options.pod_dir / kPastaPidFile, 64);
    if (!text) return failed(text.take_error().Wrap("reading pasta's pid file"));
    record.pid = static_cast<pid_t>(std::strtol(text->c_str(), nullptr, 10));
    if (record.pid <= 0) return failed(Error("pasta's pid file holds \"" + *text + "\"", EINVAL));
    auto opened = process::PidfdOpen(record.pid);
    if (!opened) {
      return failed(opened.take_error().Wrap("pasta (pid " + std::to_string(record.pid) + ")"));
    }
    pidfd = std::move(*opened);
    record.dns = kPastaDns;
  }
  // From here on a failure ends the tool.
  UserModeNetwork network(std::move(record), std::move(pidfd), std::move(exit_write),
                          options.pod_dir);
  auto fail = [&network](Error error) -> Result<UserModeNetwork> {
    network.Stop();
    return error;
  };
  auto start_time = process::ProcessStartTime(network.record_.pid);
  if (!start_time) return fail(start_time.take_error().Wrap(tool));
  network.record_.start_time = *start_time;
  if (options.tool == UserModeTool::kSlirp4netns) {
    for (const PortMapping& m : options.port_mappings) {
      if (auto s = SlirpRequest(options.pod_dir, SlirpHostFwdRequest(m), deadline); !s) {
        return fail(s.take_error().Wrap("forwarding hostPort " + std::to_string(m.host_port) + "/" +
                                        m.protocol + " through slirp4netns"));
      }
    }
  }
  auto ips = ReadPodIps(proc_net);
  if (!ips) return fail(ips.take_error().Wrap("after " + tool + " configured it"));
  network.record_.pod_ips = std::move(*ips);
  if (auto s = WriteRecord(options.pod_dir, network.record_); !s) return fail(s.take_error());
  return network;
}

Result<UserModeNetwork> UserModeNetwork::Find(const fs::path& pod_dir) {
  const fs::path file = pod_dir / kUserNetworkFile;
  auto text = ReadFileBounded(file, 1024 * 1024);
  if (!text) return text.take_error().Wrap("reading " + file.string());
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error(file.string() + " is not JSON", EINVAL);
  auto record = UserModeRecord::FromJson(j);
  if (!record) return record.take_error().Wrap(file.string());
  auto pidfd = PinTool(*record);
  if (!pidfd) {
    return pidfd.take_error().Wrap(std::string("the pod's ") + UserModeToolName(record->tool));
  }
  return UserModeNetwork(std::move(*record), std::move(*pidfd), Fd(), pod_dir);
}

bool UserModeNetwork::EndLeftOver(const fs::path& pod_dir) {
  std::error_code ec;
  if (!fs::exists(pod_dir / kUserNetworkFile, ec)) {
    RemoveFiles(pod_dir);
    return false;
  }
  auto found = Find(pod_dir);
  if (!found) {
    RemoveFiles(pod_dir);
    return false;
  }
  found->Stop();
  return true;
}

void UserModeNetwork::Stop() {
  if (pidfd_) EndTool(pidfd_.get());
  pidfd_.Reset();
  exit_fd_.Reset();
  if (!pod_dir_.empty()) RemoveFiles(pod_dir_);
}

}  // namespace podvisor::network
