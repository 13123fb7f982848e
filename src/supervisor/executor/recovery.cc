#include "supervisor/executor/recovery.h"

#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "common/log.h"

#include "cgroups/cleanup.h"
#include "common/fd.h"
#include "common/file_io.h"
#include "common/host_claim.h"
#include "common/mounts.h"
#include "common/pod_id_blocks.h"
#include "hostfs/volumes.h"
#include "network/attachment.h"
#include "network/host_ports.h"
#include "network/user_mode.h"
#include "process/pidfd.h"
#include "process/spawn.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/runtime_timeout.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor::executor {

namespace fs = std::filesystem;

bool SupervisorAnswers(const fs::path& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket.native().size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, socket.c_str(), socket.native().size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return false;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return true;
  return errno == EAGAIN || errno == EINPROGRESS;
}

namespace {

// Every cgroup directory at and below `dir`, parents before children.
std::vector<fs::path> CgroupTree(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> dirs{dir};
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
  }
  return dirs;
}

// SIGKILLs every process listed in the cgroup directories at and below
// `dir`, through pidfds, and waits (at most `timeout` in all) until they
// have exited, so that their cgroups can be removed. Returns how many
// were signalled.
int KillCgroupProcesses(const fs::path& dir, Duration timeout) {
  std::vector<Fd> pidfds;
  for (const auto& d : CgroupTree(dir)) {
    std::ifstream procs(d / "cgroup.procs");
    for (pid_t pid; procs >> pid;) {
      auto pidfd = process::PidfdOpen(pid);
      if (!pidfd) continue;  // gone already
      if (process::PidfdSendSignal(pidfd->get(), SIGKILL)) pidfds.push_back(std::move(*pidfd));
    }
  }
  // A pidfd becomes readable when its process has exited.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& fd : pidfds) {
    pollfd p{fd.get(), POLLIN, 0};
    for (;;) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
      if (r < 0 && errno == EINTR) continue;
      break;
    }
  }
  return static_cast<int>(pidfds.size());
}

// Removes the (now empty) cgroup directories at and below `dir`, deepest
// first; rmdir fails on a cgroup still in use, which is the guard wanted.
int RemoveCgroupTree(const fs::path& dir) {
  std::vector<fs::path> dirs = CgroupTree(dir);
  int removed = 0;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (::rmdir(it->c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace

std::vector<std::string> RuntimeContainerIds(const hostfs::PodLayout& layout) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(layout.RuntimeRoot(), ec)) {
    if (entry.is_directory(ec)) ids.push_back(entry.path().filename().string());
  }
  return ids;
}

Status RunRuntimeCall(const oci::RuntimeCommand& cmd, Duration timeout) {
  process::SpawnOptions spawn;
  spawn.argv = cmd.argv;
  spawn.cwd = std::string("/");
  auto child = process::Spawn(spawn);
  if (!child) return child.take_error().Wrap("runtime " + cmd.step);
  pollfd p{child->pidfd(), POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int r = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (r < 0 && errno == EINTR) continue;
    break;  // exited (POLLIN), timed out (0) or poll failed: reap it either way
  }
  bool timed_out = !(p.revents & POLLIN);
  auto exit = child->KillAndReap();
  if (timed_out) return Error(RuntimeTimeoutMessage(cmd.step, timeout), ETIMEDOUT);
  if (!exit) return exit.take_error();
  if (!exit->success()) return Error("runtime " + cmd.step + " " + exit->ToString());
  return Ok();
}

std::string RecoveryReport::ToString() const {
  return std::to_string(containers_deleted) + " container(s) deleted, " +
         std::to_string(mounts_removed) + " mount(s) removed, " + std::to_string(processes_killed) +
         " stray process(es) killed, " + std::to_string(cgroups_removed) + " cgroup(s) removed" +
         (network_detached ? ", network detached" : "") +
         (holder_ended ? ", sandbox holder ended" : "");
}

namespace {

// The holder a state file names, when it is this boot's: the handover
// state's "sandbox" object, or the identity file written before the first
// handover state (pod_dir.h kSandboxHolderFile).
std::optional<std::pair<pid_t, uint64_t>> HolderNamedIn(const fs::path& file,
                                                        bool under_sandbox_key) {
  auto text = ReadFileBounded(file, 64 * 1024 * 1024);
  if (!text) return std::nullopt;
  nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!state.is_object()) return std::nullopt;
  if (state.value("bootId", std::string()) != BootId()) return std::nullopt;
  const nlohmann::json* holder = &state;
  if (under_sandbox_key) {
    auto it = state.find("sandbox");
    if (it == state.end() || !it->is_object()) return std::nullopt;
    holder = &*it;
  }
  const pid_t pid = holder->value("pid", 0);
  if (pid <= 0) return std::nullopt;
  return std::make_pair(pid, holder->value("startTime", uint64_t{0}));
}

}  // namespace

bool EndLeftHolder(const hostfs::PodLayout& layout) {
  const fs::path state_file = layout.SupervisorStateFile();
  const fs::path holder_file = layout.SandboxHolderFile();
  auto named = HolderNamedIn(state_file, /*under_sandbox_key=*/true);
  if (!named) named = HolderNamedIn(holder_file, /*under_sandbox_key=*/false);
  std::error_code ec;
  fs::remove(state_file, ec);
  fs::remove(holder_file, ec);
  fs::remove(layout.KeeperSocket(), ec);
  if (!named) return false;
  const auto [pid, start_time] = *named;
  // Pinned, then checked: never a process that took a reused pid.
  auto pidfd = sandbox::PinHolder(pid, start_time);
  if (!pidfd) return false;
  log::Info("recovery: ending the sandbox holder (pid {}) left by a previous supervisor", pid);
  if (auto s = process::PidfdSendSignal(pidfd->get(), SIGKILL); !s) return false;
  // Gone before its pins are unmounted and its namespaces' users deleted.
  struct pollfd p = {pidfd->get(), POLLIN, 0};
  (void)::poll(&p, 1, 2000);
  return true;
}

Result<RecoveryReport> RecoverLeftovers(const RecoveryInput& in) {
  RecoveryReport report;
  const hostfs::PodLayout& layout = *in.layout;
  std::error_code ec;
  if (!fs::exists(layout.dir(), ec)) return report;  // a first run: nothing to recover
  fs::path socket = layout.ControlSocket();
  // The pod lock (pod_lock.h) decides between supervisors of this version;
  // one started by an older podvisor, which took no lock, still answers.
  if (SupervisorAnswers(socket)) {
    return Error("another supervisor is serving " + socket.string() +
                     " (stop it first: podvisor stop --state-dir " +
                     layout.dir().parent_path().string() + " " + layout.dir().filename().string() +
                     ")",
                 EADDRINUSE);
  }

  // S15.4: the holder outlives a supervisor that entrusted it; a pod not
  // adopted loses it first.
  report.holder_ended = EndLeftHolder(layout);

  // Containers the runtime still knows.
  for (const auto& id : RuntimeContainerIds(layout)) {
    log::Info("recovery: deleting container {} left by a previous supervisor", id);
    if (auto s = RunRuntimeCall(in.runtime->Delete(id), in.runtime_timeout); !s) {
      return s.take_error().Wrap("deleting container " + id + " left by a previous supervisor");
    }
    ++report.containers_deleted;
  }

  // The network after the containers (nothing uses the address any more)
  // and before CleanupPod, which would take the saved attachment along.
  fs::path network_file = layout.NetworkFile();
  auto attachment = network::LoadAttachment(network_file);
  if (!attachment)
    return attachment.take_error().Wrap("reading the network left by a previous supervisor");
  if (attachment->has_value()) {
    network::Attachment& a = **attachment;
    // The namespace is pinned under the pod's directory (network.cc), so
    // it survived its holder and DEL can clean inside it. Anything else
    // (no longer a namespace, or a path outside the pod) is not trusted:
    // CNI allows DEL without a namespace.
    struct statfs fs_info {};
    bool pinned = fs::path(a.params.netns).parent_path() == layout.NamespaceDir() &&
                  ::statfs(a.params.netns.c_str(), &fs_info) == 0 &&
                  fs_info.f_type == static_cast<decltype(fs_info.f_type)>(NSFS_MAGIC);
    if (!pinned) a.params.netns.clear();
    log::Info("recovery: detaching the pod from CNI network {}", a.network.name);
    if (auto s = network::Detach(a, network_file); !s) {
      return s.take_error().Wrap("detaching the network left by a previous supervisor");
    }
    report.network_detached = true;
  }
  // S22.10: a user-mode network's tool (slirp4netns, pasta) the previous
  // supervisor recorded, when it still runs.
  if (network::UserModeNetwork::EndLeftOver(layout.dir())) {
    log::Info("recovery: ended the user-mode network tool of a previous supervisor");
    report.network_detached = true;
  }
  if (!in.host_claims_dir.empty()) {
    HostClaim::ReleaseAllOf(in.host_claims_dir, network::kHostPortClaims,
                            ClaimOwner{layout.dir().parent_path(), layout.dir().filename()});
    // S20.4: the ids of the ended holder's user namespace (a block is
    // released only once its lock is free: the holder is gone).
    HostClaim::ReleaseAllOf(in.host_claims_dir, kPodIdClaims,
                            ClaimOwner{layout.dir().parent_path(), layout.dir().filename()});
  }

  // Processes in the pod's cgroups that no runtime state accounts for.
  // Only after an unclean end (its socket is still there: a clean end
  // unlinks it), since a pod of the same name under another state dir
  // would share these cgroups while it runs.
  bool unclean_end = fs::exists(socket, ec);
  if (unclean_end && !in.pod_cgroup.empty()) {
    fs::path rel = fs::path(in.pod_cgroup).relative_path();
    for (const auto& mount : cgroups::CgroupMounts()) {
      if (fs::is_directory(mount / rel, ec))
        report.processes_killed += KillCgroupProcesses(mount / rel, in.runtime_timeout);
    }
  }

  // Mounts and the generated directories (containers/, volumes/, etc/,
  // shm/, ns/); then the runtime root.
  auto mounts = podvisor::MountPointsUnder(layout.dir());
  if (mounts) report.mounts_removed = static_cast<int>(mounts->size());
  if (auto s = hostfs::CleanupPod(layout); !s) {
    return s.take_error().Wrap("removing what a previous supervisor left");
  }
  fs::remove_all(layout.RuntimeRoot(), ec);
  if (ec)
    return Error("removing " + layout.RuntimeRoot().string() + ": " + ec.message(), ec.value());

  if (!in.pod_cgroup.empty()) {
    fs::path rel = fs::path(in.pod_cgroup).relative_path();
    for (const auto& mount : cgroups::CgroupMounts()) {
      if (fs::is_directory(mount / rel, ec))
        report.cgroups_removed += RemoveCgroupTree(mount / rel);
    }
    // The parent directories podvisor created above the pod, when empty.
    cgroups::RemoveEmptyCgroupDirs(fs::path(in.pod_cgroup).parent_path().string());
  }
  if (report.Any())
    log::Warn("recovered from a previous supervisor of this pod: {}", report.ToString());
  return report;
}

}  // namespace podvisor::supervisor::executor
