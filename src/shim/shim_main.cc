#include "shim/shim_main.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/file_io.h"
#include "common/log.h"

#include "podvisor_version.h"
#include "shim/cleanup.h"
#include "shim/shim_args.h"
#include "shim/task_service.h"
#include "shim/task_util.h"
#include "shim/ttrpc_server.h"
#include "supervisor/loop/event_loop.h"
#include "task_shim.pb.h"

namespace podvisor::shim {

namespace {

Result<Fd> Connect(const std::string& path) {
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::FromErrno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::FromErrno("connecting to " + path);
  }
  return fd;
}

Result<Fd> Listen(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return Error("socket path too long: " + path);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Error("creating the directory of " + path + ": " + ec.message());
  unlink(path.c_str());  // a stale socket of a shim that died
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error::FromErrno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error::FromErrno("binding " + path);
  }
  if (chmod(path.c_str(), 0600) != 0 || listen(fd.get(), 128) != 0) {
    Error err = Error::FromErrno("listening on " + path);
    unlink(path.c_str());
    return err;
  }
  return fd;
}

Status WriteAddressFile(const std::filesystem::path& bundle, const std::string& address) {
  // containerd reads BUNDLE/address to reconnect after it restarted.
  // Unsynced: the bundle is under /run, and the shim does not outlive a
  // reboot.
  return WriteFileAtomic(bundle / "address", address, 0644, Durability::kUnsynced);
}

int Serve(const ShimArgs& args, const std::filesystem::path& bundle, Fd listener,
          const std::string& socket_path) {
  std::signal(SIGPIPE, SIG_IGN);
  log::Configure(log::Style::kShim, args.debug ? log::Level::kDebug : log::Level::kInfo);
  auto loop = supervisor::loop::EventLoop::Create();
  if (!loop) {
    log::Error("{}", loop.error().message());
    return 1;
  }
  bool shutdown = false;
  TaskService service(*loop, args, bundle, [&shutdown] { shutdown = true; });
  TtrpcServer server(*loop, [&service](const RpcRequest& request, const Reply& reply) {
    service.Handle(request, reply);
  });
  if (auto served = server.Serve(std::move(listener)); !served) {
    log::Error("{}", served.error().message());
    return 1;
  }
  log::Info("task {}: serving on {}", args.id, socket_path);
  // After Shutdown, the events still queued (the /tasks/delete) go out first.
  while (!shutdown || !service.idle()) {
    if (auto ran = loop->RunOnce(); !ran) {
      log::Error("{}", ran.error().message());
      break;
    }
  }
  unlink(socket_path.c_str());
  log::Info("task {}: shim exits", args.id);
  return 0;
}

int Start(const ShimArgs& args, const std::filesystem::path& bundle) {
  const std::string address = ShimSocketAddress(args);
  const std::string path = SocketPath(address);
  // containerd may start a task's shim twice (a retried call); the one
  // that answers is kept.
  if (Connect(path)) {
    std::fputs(address.c_str(), stdout);
    return 0;
  }
  auto listener = Listen(path);
  if (!listener) {
    std::fprintf(stderr, "containerd-shim-podvisor-v1: %s\n", listener.error().message().c_str());
    return 1;
  }
  if (auto written = WriteAddressFile(bundle, address); !written) {
    unlink(path.c_str());
    std::fprintf(stderr, "containerd-shim-podvisor-v1: %s\n", written.error().message().c_str());
    return 1;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    unlink(path.c_str());
    std::perror("containerd-shim-podvisor-v1: fork");
    return 1;
  }
  if (pid == 0) {
    // The serving shim: its own session (containerd's signals to its
    // process group, and its restarts, do not reach it), and none of the
    // pipes containerd reads `start`'s output from, or its reading would
    // not end. Its log goes to the fifo BUNDLE/log that containerd copies
    // into its own log; never blocking on it when containerd is away.
    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int log = open((bundle / "log").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(log >= 0 ? log : null, STDERR_FILENO);
    if (log >= 0) close(log);
    close(null);
    std::exit(Serve(args, bundle, std::move(*listener), path));
  }
  std::fputs(address.c_str(), stdout);
  return 0;
}

int Delete(const ShimArgs& args, const std::filesystem::path& bundle) {
  ShimPaths paths{bundle};
  auto record = ReadShimRecord(paths);
  auto cleaned = CleanupTask(paths);
  unlink(SocketPath(ShimSocketAddress(args)).c_str());
  if (!cleaned) {
    std::fprintf(stderr, "containerd-shim-podvisor-v1 delete: %s\n",
                 cleaned.error().message().c_str());
    return 1;
  }
  if (cleaned->supervisor_killed) std::fputs("the pod's supervisor was killed\n", stderr);
  if (!cleaned->recovered.empty()) {
    std::fprintf(stderr, "recovered: %s\n", cleaned->recovered.c_str());
  }
  // The pod was killed with its shim: SIGKILL's status, as containerd's
  // runc shim reports for a container it cleans up.
  containerd::task::v2::DeleteResponse response;
  response.set_pid(record ? static_cast<uint32_t>(record->supervisor_pid) : 0);
  response.set_exit_status(128 + SIGKILL);
  SetExitedAt(response.mutable_exited_at(), WallNowNs());
  std::string out = response.SerializeAsString();
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int ShimMain(int argc, char** argv) {
  // The log (common/log.h) is on stderr: stdout is the DeleteResponse
  // containerd reads after `delete`, and /dev/null when serving (whose
  // log fifo is stderr).
  log::Configure(log::Style::kShim, log::Level::kInfo);
  auto args = ParseShimArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!args) {
    std::fprintf(stderr, "containerd-shim-podvisor-v1: %s\n", args.error().message().c_str());
    return 2;
  }
  if (args->version) {
    std::printf("containerd-shim-podvisor-v1: podvisor %s\n", PODVISOR_VERSION);
    return 0;
  }
  std::error_code ec;
  std::filesystem::path bundle = args->bundle.empty() ? std::filesystem::current_path(ec)
                                                      : std::filesystem::path(args->bundle);
  if (args->action == "start") return Start(*args, bundle);
  if (args->action == "delete") return Delete(*args, bundle);
  std::fputs("containerd-shim-podvisor-v1: serves only when started by `start`\n", stderr);
  return 2;
}

}  // namespace podvisor::shim
